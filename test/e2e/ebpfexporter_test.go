// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// ebpf_exporter programs, unmodified, under the built collector: the
// project's fixture counts the test's own getppid calls exactly, the shipped
// runqlat program fills its histogram, and the kprobe program, which this
// kernel cannot attach, is reported with its reason while the rest runs.
func TestEbpfExporterUnderCollector(t *testing.T) {
	testutil.RequireRoot(t)
	const n = 250
	dir, err := filepath.Abs(testutil.ArchDir("../../testdata/ebpf_exporter"))
	require.NoError(t, err)
	progs, err := filepath.Abs(testutil.ArchDir("../../programs"))
	require.NoError(t, err)
	// One config dir, as ebpf_exporter takes: link the shipped runqlat into a copy.
	cdir := t.TempDir()
	for _, f := range []string{"ebpfx_counters.yaml", "ebpfx_counters.bpf.o", "ebpfx_kprobe.yaml", "ebpfx_kprobe.bpf.o"} {
		require.NoError(t, os.Symlink(filepath.Join(dir, f), filepath.Join(cdir, f)))
	}
	for _, f := range []string{"runqlat.yaml", "runqlat.bpf.o"} {
		require.NoError(t, os.Symlink(filepath.Join(progs, f), filepath.Join(cdir, f)))
	}
	out := filepath.Join(t.TempDir(), "metrics.jsonl")
	cfg := `receivers:
  ebpf_exporter:
    config_dir: ` + cdir + `
    names: [ebpfx_counters, ebpfx_kprobe, runqlat]
    collection_interval: 500ms
exporters:
  file: {path: ` + out + `}
service:
  pipelines:
    metrics: {receivers: [ebpf_exporter], exporters: [file]}
`
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o644))
	c := startCollector(t, nil, "--config", p)

	runtime.LockOSThread()
	for range n {
		syscall.Getppid()
	}
	runtime.UnlockOSThread()
	time.Sleep(1500 * time.Millisecond)
	c.stop(t)

	pid := strconv.Itoa(os.Getpid())
	var calls, runq int64
	for _, md := range readMetrics(t, out) {
		testutil.EachMetric(md, func(m pmetric.Metric) {
			switch {
			case m.Name() == "ebpfx_syscalls_total" && m.Type() == pmetric.MetricTypeSum:
				dps := m.Sum().DataPoints()
				for d := 0; d < dps.Len(); d++ {
					a := dps.At(d).Attributes()
					p, _ := a.Get("pid")
					sc, _ := a.Get("syscall")
					if p.AsString() == pid && sc.AsString() == "getppid" {
						calls = max(calls, dps.At(d).IntValue())
					}
				}
			case m.Name() == "run_queue_latency_seconds" && m.Type() == pmetric.MetricTypeHistogram:
				if m.Histogram().DataPoints().Len() > 0 {
					runq = max(runq, int64(m.Histogram().DataPoints().At(0).Count()))
				}
			}
		})
	}
	assert.Equal(t, int64(n), calls, "ebpfx_syscalls_total{pid=%s, syscall=getppid}", pid)
	assert.Positive(t, runq, "run_queue_latency_seconds has counts")
	assert.Contains(t, c.log(), "this kernel lacks kprobes", "the kprobe program is reported with its reason")
	assert.NotContains(t, c.log(), "panic")
}
