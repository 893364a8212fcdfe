// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/loader"
)

// TestIntegrationPartialAttach: by default (as ebpf_exporter) a config
// whose kprobe cannot attach runs its tracepoint, counting exactly, and
// reports the kprobe; with Strict the whole config fails. On a kernel with
// kprobes (the 6.1 VMs) both programs attach and count, strict or not.
func TestIntegrationPartialAttach(t *testing.T) {
	testutil.RequireRoot(t)
	kprobes := kernelfeatures.Kprobes.Present()
	e, err := New(Config{ConfigDir: fixturesDir, Names: []string{"ebpfx_partial"}}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { assert.NoError(t, e.Shutdown(context.Background())) })

	assert.Empty(t, e.Failures())
	progs := e.Programs()
	require.Len(t, progs["ebpfx_partial"], 2)
	assert.NoError(t, progs["ebpfx_partial"]["ebpfx_partial_getppid"])
	kerr := progs["ebpfx_partial"]["ebpfx_partial_kprobe"]
	if kprobes {
		require.NoError(t, kerr, "this kernel has kprobes: the kprobe attaches")
	} else {
		require.Error(t, kerr)
		assert.Contains(t, kerr.Error(), `program "ebpfx_partial_kprobe": failed to attach kprobe (SEC "kprobe/`+fixtureSymbol+`"): this kernel lacks kprobes`)
	}

	const calls = 37
	for range calls {
		syscall.Getppid()
	}
	pid := strconv.Itoa(os.Getpid())
	var got int64 = -1
	for _, p := range points(e.Collect(), "ebpfx_partial", "ebpfx_partial_getppid_total") {
		if p.attrs["pid"] == pid {
			got = p.value
		}
	}
	assert.Equal(t, int64(calls), got, "getppid calls of this process, from the tracepoint")
	const prios = 5
	for range prios {
		getpriority()
	}
	ns := points(e.Collect(), "ebpfx_partial", "ebpfx_partial_getpriority_total")
	require.Len(t, ns, 1)
	if kprobes {
		assert.GreaterOrEqual(t, ns[0].value, int64(prios), "the kprobe counted this process's getpriority calls (and the host's)")
	} else {
		assert.Zero(t, ns[0].value, "the kprobe never ran")
	}
	st := e.Stats()
	assert.Equal(t, 1, st.ConfigsLoaded)
	assert.Equal(t, 0, st.ConfigsFailed)
	if kprobes {
		return // nothing fails to attach: strict changes nothing
	}

	strict, err := New(Config{ConfigDir: fixturesDir, Names: []string{"ebpfx_partial"}, Strict: true}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, strict.Start(context.Background()))
	t.Cleanup(func() { assert.NoError(t, strict.Shutdown(context.Background())) })
	require.Contains(t, strict.Failures(), "ebpfx_partial")
	assert.Contains(t, strict.Failures()["ebpfx_partial"].Error(), "this kernel lacks kprobes")
	sp := strict.Programs()["ebpfx_partial"]
	require.Len(t, sp, 1, "a strict config that failed lists its failed programs only")
	assert.Error(t, sp["ebpfx_partial_kprobe"])
	assert.Equal(t, 0, strict.Stats().ConfigsLoaded)
}

// TestIntegrationUSDTReported: without Strict an unsupported section is a
// program that failed to attach, not a failed config.
func TestIntegrationUSDTReported(t *testing.T) {
	testutil.RequireRoot(t)
	e, err := New(Config{ConfigDir: fixturesDir, Names: []string{"ebpfx_usdt"}}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { assert.NoError(t, e.Shutdown(context.Background())) })
	assert.Empty(t, e.Failures())
	perr := e.Programs()["ebpfx_usdt"]["ebpfx_usdt"]
	require.Error(t, perr)
	assert.ErrorIs(t, perr, loader.ErrNotSupported)
}
