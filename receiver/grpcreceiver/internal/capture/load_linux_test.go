// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/testutil"
)

// hooksHere lists the hooks this kernel has: syscalls always, socket where
// the kernel has sock_send_length (6.3+); elsewhere asking for it must fail
// with an error that names the fix.
func hooksHere(t *testing.T) []Hook {
	t.Helper()
	if _, _, err := Preflight(HookSocket); err != nil {
		require.ErrorContains(t, err, "set hook: syscalls")
		hook, why, err := Preflight(HookAuto)
		require.NoError(t, err)
		require.Equal(t, HookSyscalls, hook)
		require.Contains(t, why, "using the system call exits")
		t.Logf("this kernel has no sock_send_length: %s", why)
		require.NoError(t, openHere(t, Options{Hook: HookSyscalls, RingSlots: 1024, MaxConns: 1024, HeaderCap: 16384}).Close())
		return []Hook{HookSyscalls}
	}
	return []Hook{HookSocket, HookSyscalls}
}

func TestLoadBothHooks(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range hooksHere(t) {
		t.Run(string(hook), func(t *testing.T) {
			c, err := Open(Options{Hook: hook, RingSlots: 1024, MaxConns: 1024, HeaderCap: 16384})
			require.NoError(t, err)
			require.Equal(t, hook, c.Hook())
			require.NoError(t, c.Close())
		})
	}
}

// openHere opens a capture with o; where the kernel refuses both hooks
// (ErrSyscallHookRefused: PREEMPT_RT 6.1) the test is skipped with the
// error users get, which names the problem.
func openHere(t *testing.T, o Options) *Capture {
	t.Helper()
	c, err := Open(o)
	if errors.Is(err, ErrSyscallHookRefused) {
		t.Skipf("no capture on this kernel, with the error users get: %v", err)
	}
	require.NoError(t, err)
	return c
}
