// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/testutil"
)

func TestLoadBothHooks(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range []Hook{HookSocket, HookSyscalls} {
		t.Run(string(hook), func(t *testing.T) {
			c, err := Open(Options{Hook: hook, RingSlots: 1024, MaxConns: 1024, HeaderCap: 16384})
			require.NoError(t, err)
			require.Equal(t, hook, c.Hook())
			require.NoError(t, c.Close())
		})
	}
}
