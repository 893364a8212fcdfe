// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

var loadOpts = Options{RingSlots: 1024, MaxConns: 1024, HeaderCap: 16384}

// hooksHere lists the hooks this kernel takes, in auto's order: socket where
// the kernel has sock_send_length (6.3+), else asking for it must fail with
// an error that names the fix; syscalls unless the kernel refuses BPF on its
// tracepoints (no kernel of the matrix does since the programs read the
// right record; PREEMPT_RT 6.1 did before), where asking for it must fail
// with ErrSyscallHookRefused, which names the fix; raw_syscalls always.
//
// The kernel does not change while the test binary runs: the first call
// probes it and the others reuse what it found. Each probe opens the
// syscalls hook, one program per system call: in a PREEMPT_RT guest under
// TCG that took 24 s, and a dozen tests ask (test/kernels).
func hooksHere(t *testing.T) []Hook {
	t.Helper()
	hooksProbe.Lock()
	defer hooksProbe.Unlock()
	if hooksProbe.hooks == nil {
		hooksProbe.hooks = probeHooks(t)
	} else {
		t.Logf("hooks here (probed by an earlier test): %v", hooksProbe.hooks)
	}
	return slices.Clone(hooksProbe.hooks)
}

var hooksProbe struct {
	sync.Mutex
	hooks []Hook
}

func probeHooks(t *testing.T) []Hook {
	t.Helper()
	var hooks []Hook
	if _, err := Preflight(HookSocket, false); err != nil {
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

// Where the kernel lacks BPF atomic fetch (Linux 5.12) or bpf_task_pt_regs
// (5.15), as Debian 11's 5.10 lacks both, auto takes raw_syscalls (with the
// programs built without atomic fetch where it lacks that) and says why,
// naming each feature and its release; asking for socket or syscalls fails
// before anything is loaded, naming them and the fix, not with a verifier
// dump. Where the kernel has both, auto takes the others' programs.
func TestPreflightNamesWhatIsMissing(t *testing.T) {
	testutil.RequireRoot(t)
	atomics := kernelfeatures.Atomics.Probe()
	regs := kernelfeatures.TaskPtRegs.Probe()
	c, err := Open(loadOpts)
	require.NoError(t, err)
	hook, why, noFetch := c.Hook(), c.Why(), c.NoFetch()
	require.NoError(t, c.Close())
	t.Logf("auto: %s: %s", hook, why)
	require.Equal(t, atomics != nil, noFetch)

	refused := []Hook{HookSocket, HookSyscalls}
	if atomics == nil && regs == nil {
		// On any kernel: the programs without atomic fetch, asked for.
		p, err := Preflight(HookAuto, true)
		require.NoError(t, err)
		require.Equal(t, Plan{Hook: HookRawSyscalls, NoFetch: true, Why: "the programs built without BPF atomic fetch were asked for; their records go to a BPF ring buffer, numbered by the reader in ring order; using raw_syscalls:sys_exit, whose tracepoint passes the registers, and the fd walk"}, p)
		for _, h := range refused {
			_, err := Preflight(h, true)
			require.ErrorContains(t, err, "hook "+string(h)+": the programs built without BPF atomic fetch were asked for")
			require.ErrorContains(t, err, "set hook: raw_syscalls (or auto)")
		}
		return
	}
	require.Equal(t, HookRawSyscalls, hook)
	require.Contains(t, why, "using raw_syscalls:sys_exit, whose tracepoint passes the registers")
	if atomics != nil {
		require.Contains(t, why, "this kernel lacks BPF atomic fetch-add, exchange and compare-and-exchange (Linux 5.12)")
		// The verifier's reason, not its statistics (5.10: "BPF_STX uses
		// reserved fields").
		require.NotContains(t, why, "processed ")
		require.NotContains(t, why, "omitted")
		require.Contains(t, why, "numbered by the reader in ring order")
	}
	if regs != nil {
		require.Contains(t, why, "this kernel lacks the bpf_task_pt_regs helper (Linux 5.15)")
	}
	for _, h := range refused {
		o := loadOpts
		o.Hook = h
		_, err := Open(o)
		require.Error(t, err)
		t.Logf("%s refused: %v", h, err)
		require.ErrorContains(t, err, "set hook: raw_syscalls (or auto)")
		require.NotContains(t, err.Error(), "program h2_")
	}
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
	c, err := openOrFallBack(o, Plan{Hook: HookSyscalls, Why: "the kernel lacks sock:sock_send_length"})
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
