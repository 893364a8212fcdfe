// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// debianHeaders finds kernel headers for bpftrace scripts that #include them
// (runqlat.bt) on a host without /lib/modules/$(uname -r)/build: Debian's
// linux-headers packages, which `make deps` installs there.
func debianHeaders() (source, build string) {
	commons, _ := filepath.Glob("/usr/src/linux-headers-*-common")
	for _, c := range commons {
		b := strings.TrimSuffix(c, "-common") + "-amd64"
		if _, err := os.Stat(b); err == nil {
			return c, b
		}
	}
	return "", ""
}

// Unmodified bpftrace tools and a one-liner run under the built collector's
// bpftrace receiver, the only receiver of its pipelines:
// execsnoop's lines become log records, syscount's and the one-liner's maps
// and runqlat's histogram become metrics, all through the file exporter.
func TestBpftraceScriptsUnderCollector(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("bpftrace"); err != nil {
		t.Fatalf("bpftrace is needed (make deps installs it): %v", err)
	}
	const n = 300
	marker := fmt.Sprintf("bt-marker-%d", rand.Uint32())
	env := ""
	if src, bld := debianHeaders(); src != "" {
		env = fmt.Sprintf("    env: {BPFTRACE_KERNEL_SOURCE: %s, BPFTRACE_KERNEL_BUILD: %s}\n", src, bld)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cfg := `receivers:
  bpftrace:
` + env + `    scripts:
      - path: /usr/sbin/execsnoop.bt
      - path: /usr/sbin/syscount.bt
        pull_interval: 1s
        maps:
          "@process": {type: sum, attributes: [comm]}
      - path: /usr/sbin/runqlat.bt
        pull_interval: 1s
        maps:
          "@usecs": {type: histogram, name: sched.runq.latency, unit: us}
      - name: getppid
        program: 'tracepoint:syscalls:sys_enter_getppid /pid == ` + fmt.Sprint(os.Getpid()) + `/ { @calls = count(); }'
        pull_interval: 1s
        maps:
          "@calls": {type: sum}
processors:
  batch: {timeout: 200ms}
exporters:
  file/logs: {path: ` + out + `}
  file/metrics: {path: ` + out + `.metrics}
service:
  pipelines:
    logs: {receivers: [bpftrace], processors: [batch], exporters: [file/logs]}
    metrics: {receivers: [bpftrace], processors: [batch], exporters: [file/metrics]}
`
	p := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o644))
	c := startCollector(t, nil, "--config", p)
	time.Sleep(4 * time.Second) // bpftrace compiles and attaches its probes

	require.NoError(t, exec.Command("/bin/echo", marker).Run())
	for range n {
		syscall.Getppid()
	}
	time.Sleep(3 * time.Second) // two pulls
	c.stop(t)

	var sawExec, sawRunqlat bool
	var calls, syscountSelf float64
	self := filepath.Base(os.Args[0])
	if len(self) > 15 {
		self = self[:15]
	}
	var lifecycle int
	for _, r := range readExport(t, out) {
		if strings.Contains(r.body, marker) && r.attrs["bpftrace.script"] == "execsnoop" {
			sawExec = true
		}
		if _, ok := r.attrs["seq.number"]; ok || strings.HasPrefix(r.name, "process.") {
			lifecycle++
		}
	}
	assert.Zero(t, lifecycle, "the bpftrace receiver alone exports the scripts' lines, no lifecycle record")
	for _, md := range readMetrics(t, out+".metrics") {
		testutil.EachMetric(md, func(m pmetric.Metric) {
			switch m.Type() {
			case pmetric.MetricTypeSum:
				dps := m.Sum().DataPoints()
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					v := float64(dp.IntValue()) + dp.DoubleValue()
					comm, _ := dp.Attributes().Get("comm")
					switch {
					case m.Name() == "bpftrace.getppid.calls":
						calls = max(calls, v)
					case strings.HasPrefix(m.Name(), "bpftrace.syscount.") && comm.Str() == self:
						syscountSelf = max(syscountSelf, v)
					}
				}
			case pmetric.MetricTypeHistogram:
				if m.Name() == "sched.runq.latency" && m.Histogram().DataPoints().Len() > 0 {
					sawRunqlat = m.Histogram().DataPoints().At(0).Count() > 0
				}
			}
		})
	}
	assert.True(t, sawExec, "execsnoop's line for /bin/echo %s", marker)
	assert.Equal(t, float64(n), calls, "the one-liner counted exactly the test's getppid calls")
	assert.GreaterOrEqual(t, syscountSelf, float64(n), "syscount's @process[%s] counts at least the test's syscalls", self)
	if env != "" {
		assert.True(t, sawRunqlat, "runqlat's @usecs histogram has counts")
	} else {
		t.Log("no kernel headers found: runqlat.bt cannot compile on this host; its start failure is logged and retried")
	}
	assert.NotContains(t, c.log(), "panic")
}

// readMetrics parses the metrics lines of the file exporter's output.
func readMetrics(t *testing.T, path string) []pmetric.Metrics {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []pmetric.Metrics
	var um pmetric.JSONUnmarshaler
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"resourceMetrics"`) {
			continue
		}
		md, err := um.UnmarshalMetrics(sc.Bytes())
		require.NoError(t, err)
		out = append(out, md)
	}
	require.NoError(t, sc.Err())
	return out
}
