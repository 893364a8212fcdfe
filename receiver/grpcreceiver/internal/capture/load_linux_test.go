// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
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
