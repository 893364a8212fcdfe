// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporterreceiver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// commChurnEnv makes TestCommChurnHelper a workload: that many thread
// names (ebpfx-churn-<n>, set with prctl(PR_SET_NAME) as any user may),
// a getppid under each, then exit.
const commChurnEnv = "EBPFX_COMM_CHURN"

// TestCommChurnHelper is not a test: TestCommChurnIsBounded runs this
// test binary with this test selected as its hostile workload.
func TestCommChurnHelper(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(commChurnEnv))
	if err != nil {
		return // not a test
	}
	runtime.LockOSThread() // the name and the syscall on one thread
	for i := range n {
		name := fmt.Appendf(nil, "ebpfx-churn-%d\x00", i)
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafePointer(name)), 0, 0, 0); err != nil {
			os.Exit(2)
		}
		syscall.Getppid()
	}
	os.Exit(0)
}

// An unprivileged-style workload renames its thread thousands of times,
// each name new, calling getppid under each, while the receiver collects
// ebpfx_counters (a per-comm map and a per-pid,comm map) every 100 ms
// with max_series 200: the series held stay within it at every
// collection, the keys left out are counted, and the series admitted
// before the churn (the host-wide getppid count) keep being exported.
func TestCommChurnIsBounded(t *testing.T) {
	testutil.RequireRoot(t)
	const maxSeries = 200
	cfg := createDefaultConfig()
	cfg.ConfigDir = testutil.ArchDir("../../testdata/ebpf_exporter")
	cfg.Names = []string{"ebpfx_counters"}
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.InitialDelay = 0
	cfg.MaxSeries = maxSeries
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	sink := new(consumertest.MetricsSink)
	rcv, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = rcv.Shutdown(context.Background()) })
	shared, err := sharedReceiver(metadatatest.NewSettings(tel), cfg) // the one the pipeline runs
	require.NoError(t, err)
	ee := shared.C.ee

	// The canary: exported before the churn starts.
	require.Eventually(t, func() bool {
		syscall.Getppid()
		all := sink.AllMetrics()
		return len(all) > 0 && sumOf(all[len(all)-1], "ebpfx_getppid_calls_total") > 0
	}, 10*time.Second, 20*time.Millisecond)

	// A copy of this test binary that user nobody can run.
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "ebpfx-churn") // t.TempDir's parent is root's only
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin, err := os.ReadFile(self)
	require.NoError(t, err)
	worker := filepath.Join(dir, "churn")
	require.NoError(t, os.WriteFile(worker, bin, 0o755)) //nolint:gosec // executable on purpose
	cmd := exec.Command(worker, "-test.run=^TestCommChurnHelper$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), commChurnEnv+"=20000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var peak int64
	watch := func() {
		st := ee.Stats()
		peak = max(peak, st.Series)
		require.LessOrEqual(t, st.Series, int64(maxSeries))
		require.LessOrEqual(t, st.Memory, st.MaxMemory)
	}
	deadline := time.After(60 * time.Second)
	for waiting := true; waiting; {
		select {
		case err := <-done:
			require.NoError(t, err)
			waiting = false
		case <-deadline:
			t.Fatal("the churn did not end in 60 s")
		case <-time.After(10 * time.Millisecond):
			watch()
		}
	}
	n := len(sink.AllMetrics())
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= n+3 }, 10*time.Second, 20*time.Millisecond)
	watch()
	st := ee.Stats()
	dropped := st.Dropped[budget.DropKey{Config: "ebpfx_counters", Reason: budget.DropMaxSeries}]
	t.Logf("series peak %d (max %d), memory %d, dropped %d", peak, maxSeries, st.Memory, dropped)
	assert.Positive(t, dropped, "keys left out are counted")
	all := sink.AllMetrics()
	assert.Positive(t, sumOf(all[len(all)-1], "ebpfx_getppid_calls_total"), "the series admitted before the churn are still exported")

	for name, want := range map[string]int64{"series": peak, "memory": 1} {
		m, err := tel.GetMetric("otelcol_receiver_ebpf_exporter_" + name)
		require.NoError(t, err, name)
		g := m.Data.(metricdata.Gauge[int64])
		require.Len(t, g.DataPoints, 1)
		assert.LessOrEqual(t, g.DataPoints[0].Value, max(want, maxSeries)*1_000_000, name)
		assert.Positive(t, g.DataPoints[0].Value, name)
	}
	m, err := tel.GetMetric("otelcol_receiver_ebpf_exporter_series")
	require.NoError(t, err)
	assert.LessOrEqual(t, m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value, int64(maxSeries))
	m, err = tel.GetMetric("otelcol_receiver_ebpf_exporter_series_dropped")
	require.NoError(t, err)
	var counted int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if r, _ := dp.Attributes.Value("reason"); r.AsString() == budget.DropMaxSeries {
			counted += dp.Value
		}
	}
	assert.Positive(t, counted, "series_dropped{reason=max_series}")
}
