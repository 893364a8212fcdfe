// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A directory tree stands in for the hierarchy: the walk indexes any tree
// by inode, so no root is needed.
func TestResolverWalk(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "kubepods", "burstable", "pod"+uid)
	ctr := filepath.Join(pod, "cri-containerd-"+id1+".scope")
	require.NoError(t, os.MkdirAll(ctr, 0o755))
	now := time.Unix(1000, 0)
	r, err := NewResolver(Options{Mount: dir, MinRefresh: time.Second, Now: func() time.Time { return now }, NoHandles: true})
	require.NoError(t, err)
	assert.False(t, r.SawContainers())

	info := r.Resolve(ino(t, ctr))
	require.NotNil(t, info)
	assert.Equal(t, "/kubepods/burstable/pod"+uid+"/cri-containerd-"+id1+".scope", info.Path)
	assert.Equal(t, "0::"+info.Path, info.Cgroup)
	assert.Equal(t, id1, info.ContainerID)
	assert.Equal(t, RuntimeContainerd, info.Runtime)
	assert.Equal(t, uid, info.PodUID)
	assert.True(t, r.SawContainers())
	assert.Same(t, info, r.Lookup(ino(t, ctr)))

	root := r.Resolve(ino(t, dir))
	require.NotNil(t, root)
	assert.Equal(t, "/", root.Path)
	assert.False(t, root.InContainer())

	// A cgroup made after the walk: found by the next walk, which is due
	// only MinRefresh after the last one; misses are counted.
	late := filepath.Join(dir, "docker", id2)
	require.NoError(t, os.MkdirAll(late, 0o755))
	lateIno := ino(t, late)
	assert.Nil(t, r.Resolve(lateIno))
	assert.Equal(t, Stats{Misses: 1, Walks: 1, Cached: 2}, r.Stats())
	now = now.Add(time.Second)
	info = r.Resolve(lateIno)
	require.NotNil(t, info)
	assert.Equal(t, id2, info.ContainerID)
	assert.Equal(t, RuntimeDocker, info.Runtime)
	assert.Equal(t, Stats{Misses: 1, Walks: 2, Cached: 3}, r.Stats())

	// Removed after it was resolved: still known.
	require.NoError(t, os.Remove(late))
	now = now.Add(time.Hour)
	assert.Equal(t, id2, r.Resolve(lateIno).ContainerID)

	// An unknown id walks at most once per MinRefresh.
	assert.Nil(t, r.Resolve(1<<62))
	assert.Nil(t, r.Resolve(1<<62))
	assert.Equal(t, Stats{Misses: 3, Walks: 3, Cached: 3}, r.Stats())
}

func TestResolverBound(t *testing.T) {
	dir := t.TempDir()
	var inos []uint64
	for i := range 5 {
		p := filepath.Join(dir, "c"+string(rune('a'+i)))
		require.NoError(t, os.Mkdir(p, 0o755))
		inos = append(inos, ino(t, p))
	}
	r, err := NewResolver(Options{Mount: dir, MaxEntries: 3, NoHandles: true})
	require.NoError(t, err)
	for _, i := range inos {
		require.NotNil(t, r.Resolve(i))
	}
	assert.Equal(t, uint64(3), r.Stats().Cached)
	assert.Nil(t, r.Lookup(inos[0]), "the oldest is forgotten")
	assert.Nil(t, r.Lookup(inos[1]))
	assert.NotNil(t, r.Lookup(inos[4]))
	// Forgotten, but still in the walk's index: resolved again.
	assert.Equal(t, "/cb", r.Resolve(inos[1]).Path)
}

func TestResolverRoot(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, id1), 0o755))
	// A cgroup namespace's mount shows a subtree: paths start at its root.
	r, err := NewResolver(Options{Mount: dir, Root: "/kubepods/pod" + uid, NoHandles: true})
	require.NoError(t, err)
	info := r.Resolve(ino(t, filepath.Join(dir, id1)))
	require.NotNil(t, info)
	assert.Equal(t, "/kubepods/pod"+uid+"/"+id1, info.Path)
	assert.Equal(t, id1, info.ContainerID)
	assert.Equal(t, uid, info.PodUID)
	assert.Equal(t, "/kubepods/pod"+uid, r.Resolve(ino(t, dir)).Path)
}

// A user recreates a victim pod's container cgroup under the subtree
// systemd delegates to them: their processes get no identity, and the
// cgroup is counted.
func TestResolverSpoofed(t *testing.T) {
	dir := t.TempDir()
	spoof := filepath.Join(dir, "user.slice", "user-1000.slice", "user@1000.service", "app.slice", "kubepods", "burstable", "pod"+uid, id1)
	legit := filepath.Join(dir, "kubepods", "burstable", "pod"+uid, id1)
	require.NoError(t, os.MkdirAll(spoof, 0o755))
	require.NoError(t, os.MkdirAll(legit, 0o755))
	r, err := NewResolver(Options{Mount: dir, NoHandles: true})
	require.NoError(t, err)
	root, anchored := r.Root()
	assert.Equal(t, "/", root, "a directory without cgroup.type is the hierarchy's root")
	assert.True(t, anchored)

	info := r.Resolve(ino(t, spoof))
	require.NotNil(t, info)
	assert.Empty(t, info.ContainerID)
	assert.Empty(t, info.PodUID)
	assert.Equal(t, UntrustedDelegated, info.Untrusted)
	assert.False(t, info.InContainer())
	assert.False(t, r.SawContainers())
	assert.Equal(t, map[string]uint64{UntrustedDelegated: 1}, r.Stats().Untrusted)

	info = r.Resolve(ino(t, legit))
	assert.Equal(t, id1, info.ContainerID)
	assert.Equal(t, uid, info.PodUID)
	assert.True(t, r.SawContainers())
}

// The mount shows a cgroup namespace's subtree (its top has cgroup.type)
// and the collector is not in the initial namespace: its paths cannot be
// placed, and none names a container or pod.
func TestResolverUnanchoredRoot(t *testing.T) {
	was := initialCgroupNS
	initialCgroupNS = func() bool { return false }
	t.Cleanup(func() { initialCgroupNS = was })
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("domain\n"), 0o644))
	ctr := filepath.Join(dir, "kubepods", "burstable", "pod"+uid, id1)
	require.NoError(t, os.MkdirAll(ctr, 0o755))
	r, err := NewResolver(Options{Mount: dir, NoHandles: true})
	require.NoError(t, err)
	_, anchored := r.Root()
	assert.False(t, anchored)
	info := r.Resolve(ino(t, ctr))
	require.NotNil(t, info)
	assert.Equal(t, "/kubepods/burstable/pod"+uid+"/"+id1, info.Path)
	assert.False(t, info.InContainer())
	assert.Equal(t, UntrustedUnanchored, info.Untrusted)
	again := r.Parse(info.Path)
	assert.False(t, again.InContainer(), "the resources' parse agrees")
	assert.Equal(t, map[string]uint64{UntrustedUnanchored: 1}, r.Stats().Untrusted)
}

func TestPlaceRoot(t *testing.T) {
	tests := []struct {
		name      string
		top       bool
		shown     string
		initialNS bool
		root      string
		anchored  bool
	}{
		{"the hierarchy's root", true, "/", true, "/", true},
		{"hostPath from a cgroup namespace", true, "/../../../..", false, "/", true},
		{"the runtime's namespaced mount", false, "/", false, "/", false},
		{"a subtree, initial namespace", false, "/kubepods/pod" + uid, true, "/kubepods/pod" + uid, true},
		{"a subtree, own namespace", false, "/kubepods/pod" + uid, false, "/kubepods/pod" + uid, false},
		{"above the namespace's root", false, "/../x", true, "/../x", false},
		{"unknown", false, "", true, "/", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, anchored := placeRoot(tc.top, tc.shown, tc.initialNS)
			assert.Equal(t, tc.root, root)
			assert.Equal(t, tc.anchored, anchored)
		})
	}
}

func TestResolverNoMount(t *testing.T) {
	_, err := NewResolver(Options{Mount: filepath.Join(t.TempDir(), "absent"), NoHandles: true})
	assert.Error(t, err)
}

func TestFindCgroup2(t *testing.T) {
	tests := []struct {
		name, mountinfo string
		mount, root     string
		ok              bool
	}{
		{"hybrid", `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
`, "/sys/fs/cgroup/unified", "/", true},
		{"unified", "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", "/sys/fs/cgroup", "/", true},
		{"optional fields and a subtree", "1 2 0:26 /kubepods/pod1 /sys/fs/cgroup rw master:1 shared:2 - cgroup2 none rw\n", "/sys/fs/cgroup", "/kubepods/pod1", true},
		{"escaped", `1 2 0:26 / /mnt/my\040cgroups rw - cgroup2 cgroup2 rw` + "\n", "/mnt/my cgroups", "/", true},
		{"hostPath over the runtime's mount, own cgroup namespace", `1 2 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup rw
3 1 0:26 /../../../.. /sys/fs/cgroup ro - cgroup2 cgroup2 rw
4 1 0:26 / /mnt/other rw - cgroup2 cgroup2 rw
`, "/sys/fs/cgroup", "/../../../..", true},
		{"v1 only", "42 31 0:39 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "", "", false},
		{"empty", "", "", "", false},
		{"garbage", "- cgroup2\n1 2 3\n", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mount, root, ok := FindCgroup2([]byte(tc.mountinfo))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.mount, mount)
			assert.Equal(t, tc.root, root)
		})
	}
}

// The real hierarchy (root): the by-handle lookup and the walk agree with
// /proc/self/cgroup.
func TestResolverSelf(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (open_by_handle_at)")
	}
	r, err := NewResolver(Options{})
	if err != nil {
		t.Skip(err)
	}
	require.NotNil(t, r.byHandle, "open_by_handle_at on cgroup2 works as root on Linux 5.5+")
	b, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	var want string
	for _, l := range strings.Split(string(b), "\n") {
		if len(l) > 3 && l[:3] == "0::" {
			want = l[3:]
		}
	}
	require.NotEmpty(t, want)
	id := ino(t, filepath.Join(r.Mount(), want))
	p, ok := r.byHandle(id)
	require.True(t, ok)
	assert.Equal(t, want, r.cgroupPath(p))
	assert.Equal(t, want, r.Resolve(id).Path)
}
