// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// startTLSCopies starts n copies of grpctls, each from a file of its own
// (n probed files), waiting; they are killed at the test's end.
func startTLSCopies(t *testing.T, n int) []string {
	t.Helper()
	bin := buildGRPCTLS(t)
	var paths []string
	for i := range n {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("grpctls-%d", i))
		testutil.CopyFile(t, bin, p, 0o755)
		prog, err := grpctest.StartTLSProgram(p, "-wait")
		require.NoError(t, err)
		t.Cleanup(prog.Kill)
		paths = append(paths, p)
	}
	return paths
}

// stress loads every CPU (stress-ng) until the test's end, when installed.
func stress(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Log("stress-ng not installed: measured without load")
		return false
	}
	cmd := exec.Command("stress-ng", "--cpu", "0", "--timeout", "300")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(500 * time.Millisecond)
	return true
}

// Stopping a capture with TLS probes on many files, on a loaded machine,
// takes well under 5 s. With one perf-event uprobe per probe point it took
// 18 to 26 s here (16 copies, 180 uprobes, stress-ng on every CPU): each
// close waits for an RCU grace period under the kernel's event_mutex, so
// even concurrent closes queue. uprobe_multi links (Linux 6.6+: one link per
// program and file, one wait each, not under that lock) are what makes it
// fast; older kernels keep single uprobes (docs/threat-model.md says what
// that costs). SHUTDOWN_FILES copies (16); SHUTDOWN_COMPARE=1 measures the single
// uprobes too (slow). Where the kernel has no uprobe_multi links (before
// 6.6) the capture falls back to single uprobes: the test then checks that
// fallback on one copy (ten probe points, no added load): it attaches and
// closes, its time logged, not bounded (Debian's 6.1 PREEMPT_RT under QEMU
// took 20.8 s for ten points, 6.1 1.4 s).
func TestTLSShutdownUnderLoad(t *testing.T) {
	testutil.RequireRoot(t)
	haveMulti := kernelfeatures.UprobeMulti.Present()
	n := 16
	if !haveMulti {
		n = 1
	}
	if v := os.Getenv("SHUTDOWN_FILES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	paths := startTLSCopies(t, n)
	// The fallback is checked unloaded: under emulation (the kernel matrix's
	// guests) and stress-ng its closes' grace periods are what is measured.
	loaded := haveMulti && stress(t)
	modes := []bool{!haveMulti}
	if haveMulti && os.Getenv("SHUTDOWN_COMPARE") != "" {
		modes = append(modes, true)
	}
	for _, single := range modes {
		c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true, SingleUprobes: single})
		probes, files := 0, 0
		for _, b := range c.GoBinaries() {
			probes += b.Probes
			files++
		}
		require.GreaterOrEqual(t, files, len(paths), "%+v; skipped %v", c.GoBinaries(), c.GoSkipped())
		require.Equal(t, !single, c.multi, "uprobe_multi links used where the kernel has them")
		start := time.Now()
		require.NoError(t, c.Close())
		took := time.Since(start)
		t.Logf("Close with %d Go files (%d probe points), single uprobes %v, load %v: %s", files, probes, single, loaded, took)
		if !single {
			require.Less(t, took, 5*time.Second)
		}
	}
}
