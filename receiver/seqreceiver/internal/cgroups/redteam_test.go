// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package cgroups

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedTeamWalkIndexBytes: a user with a delegated subtree makes cgroups
// under a chain of long names (a path near PATH_MAX), so each cgroup, which
// costs the kernel the same whatever its depth, costs the walk's index its
// whole path. What the resolver keeps per cgroup must not grow with depth:
// 2000 leaves under a 3.6 KiB chain kept 8.1 MiB (~4 KiB a cgroup) when the
// index held paths; 578 KiB (296 B) with names.
func TestRedTeamWalkIndexBytes(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "user.slice", "user-1000.slice", "user@1000.service")
	for i := 0; i < 14; i++ {
		deep = filepath.Join(deep, strings.Repeat(strconv.Itoa(i%10), 250))
	}
	require.NoError(t, os.MkdirAll(deep, 0o755))
	const leaves = 2000
	for i := 0; i < leaves; i++ {
		require.NoError(t, os.Mkdir(filepath.Join(deep, strconv.Itoa(i)+strings.Repeat("x", 200)), 0o755))
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	r, err := NewResolver(Options{Mount: dir, MinRefresh: time.Second, NoHandles: true})
	require.NoError(t, err)
	kept := int64(heap()) - int64(before)
	runtime.KeepAlive(r)
	t.Logf("%d cgroups at depth 17: resolver keeps %d KiB (%d B a cgroup)", leaves, kept>>10, kept/leaves)
	// A cgroup's name is at most 255 bytes; with the map's own overhead,
	// 512 bytes a cgroup is generous.
	assert.Less(t, kept, int64(leaves*512), "bytes kept per cgroup grow with its depth")
}
