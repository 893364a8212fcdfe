// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/internal/testutil"
)

var loadOpts = Options{RingSlots: 1024, MaxConns: 1024, HeaderCap: 16384}

// hooksHere lists the hooks this kernel takes, in auto's order: socket where
// the kernel has sock_send_length (6.3+), else asking for it must fail with
// an error that names the fix; syscalls unless the kernel refuses BPF on its
// tracepoints (no kernel of the matrix does since the programs read the
// right record; PREEMPT_RT 6.1 did before), where asking for it must fail
// with ErrSyscallHookRefused, which names the fix; raw_syscalls always.
func hooksHere(t *testing.T) []Hook {
	t.Helper()
	var hooks []Hook
	if _, _, err := Preflight(HookSocket); err != nil {
		require.ErrorContains(t, err, "set hook: syscalls, raw_syscalls")
		t.Logf("this kernel has no sock_send_length: %v", err)
	} else {
		hooks = append(hooks, HookSocket)
	}
	o := loadOpts
	o.Hook = HookSyscalls
	c, err := Open(o)
	if errors.Is(err, ErrSyscallHookRefused) {
		require.ErrorContains(t, err, "set hook: raw_syscalls")
		t.Logf("this kernel refuses the syscalls hook: %v", err)
	} else {
		require.NoError(t, err)
		require.NoError(t, c.Close())
		hooks = append(hooks, HookSyscalls)
	}
	return append(hooks, HookRawSyscalls)
}

// Where the kernel lacks what the programs need (Debian 11's 5.10: BPF
// atomic fetch arrived in 5.12, bpf_task_pt_regs in 5.15), Open fails before
// anything is loaded with the preflight's error, naming the feature, the
// release it came in and whose need it is, not a verifier dump; where the
// kernel has them, Open succeeds.
func TestPreflightNamesWhatIsMissing(t *testing.T) {
	testutil.RequireRoot(t)
	atomics := sequencer.ProbeAtomics()
	regs := features.HaveProgramHelper(ebpf.TracePoint, asm.FnTaskPtRegs)
	c, err := Open(loadOpts)
	if atomics == nil && regs == nil {
		require.NoError(t, err)
		require.NoError(t, c.Close())
		return
	}
	require.Error(t, err)
	t.Logf("refused: %v", err)
	require.ErrorContains(t, err, "which the grpc receiver needs")
	if atomics != nil {
		require.ErrorContains(t, err, "BPF atomic fetch-add, exchange and compare-and-exchange (Linux 5.12)")
	} else {
		require.ErrorContains(t, err, "bpf_task_pt_regs helper, the system call's arguments (Linux 5.15)")
	}
	// The probe's own refusal may follow; no program of the receiver's was tried.
	require.NotContains(t, err.Error(), "program h2_")
}

func TestLoadHooks(t *testing.T) {
	testutil.RequireRoot(t)
	hooks := hooksHere(t)
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			o := loadOpts
			o.Hook = hook
			c, err := Open(o)
			require.NoError(t, err)
			require.Equal(t, hook, c.Hook())
			require.Equal(t, "configured", c.Why())
			require.NoError(t, c.Close())
		})
	}
	// Auto takes the first: socket, else syscalls, else raw_syscalls.
	c, err := Open(loadOpts)
	require.NoError(t, err)
	defer c.Close()
	t.Logf("auto: %s: %s", c.Hook(), c.Why())
	require.Equal(t, hooks[0], c.Hook())
	switch c.Hook() {
	case HookSyscalls:
		require.Contains(t, c.Why(), "using the system call exits")
	case HookRawSyscalls:
		require.Contains(t, c.Why(), "refuses BPF programs on the syscalls:sys_exit_* tracepoints: using raw_syscalls:sys_exit")
	}
}

// Where the kernel refuses the syscalls hook (made up here: the attach fails
// as it did on PREEMPT_RT 6.1 while the programs read raw_syscalls' record),
// an explicit syscalls fails with ErrSyscallHookRefused and auto falls back
// to raw_syscalls.
func TestSyscallHookRefused(t *testing.T) {
	testutil.RequireRoot(t)
	t.Cleanup(func() { tracepointLink = link.Tracepoint })
	tracepointLink = func(group, name string, _ *ebpf.Program, _ *link.TracepointOptions) (link.Link, error) {
		return nil, fmt.Errorf("attach %s:%s: cannot create bpf perf link: permission denied", group, name)
	}
	o := loadOpts
	o.Hook = HookSyscalls
	_, err := Open(o)
	require.ErrorIs(t, err, ErrSyscallHookRefused)
	require.ErrorContains(t, err, "set hook: raw_syscalls")

	o.Hook = HookAuto
	c, err := openOrFallBack(o, HookSyscalls, "the kernel lacks sock:sock_send_length")
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, HookRawSyscalls, c.Hook())
	require.Contains(t, c.Why(), "refuses BPF programs on the syscalls:sys_exit_* tracepoints")
}

// mustOpen opens a capture with o or fails the test.
func mustOpen(t *testing.T, o Options) *Capture {
	t.Helper()
	c, err := Open(o)
	require.NoError(t, err)
	return c
}
