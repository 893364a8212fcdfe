// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package decoder

import (
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func errnoName(n uint64) string { return unix.ErrnoName(syscall.Errno(n)) }

// CgroupResolver maps cgroup ids (what bpf_get_current_cgroup_id returns:
// the cgroupfs file handle, which is the directory's inode on cgroup v2) to
// their path under root, walking the tree again on a miss at most once a
// second.
type CgroupResolver struct {
	mu     sync.Mutex
	root   string
	paths  map[uint64]string
	walked time.Time
}

// NewCgroupResolver resolves the ids of the cgroups under root.
func NewCgroupResolver(root string) *CgroupResolver {
	return &CgroupResolver{root: root, paths: map[uint64]string{}}
}

func (c *CgroupResolver) resolve(id uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.paths[id]; ok {
		return p
	}
	if time.Since(c.walked) < time.Second {
		return ""
	}
	c.walkLocked()
	return c.paths[id]
}

// All returns every cgroup (id -> path), walking the tree first.
func (c *CgroupResolver) All() map[uint64]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walkLocked()
	out := make(map[uint64]string, len(c.paths))
	for id, p := range c.paths {
		out[id] = p
	}
	return out
}

func (c *CgroupResolver) walkLocked() {
	paths := map[uint64]string{}
	_ = filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed mid-walk
		}
		if !d.IsDir() {
			return nil
		}
		// Only cgroup v2 ids are what bpf_get_current_cgroup_id returns;
		// v1 hierarchies of a hybrid setup number their directories on
		// their own and would collide.
		var fs unix.Statfs_t
		if unix.Statfs(path, &fs) != nil || fs.Type != unix.CGROUP2_SUPER_MAGIC {
			return nil
		}
		if id, ok := cgroupID(path); ok {
			paths[id] = path
		}
		return nil
	})
	c.paths = paths
	c.walked = time.Now()
}

// cgroupID is the id the kernel reports for the cgroup at path.
func cgroupID(path string) (uint64, bool) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err == nil && len(h.Bytes()) >= 8 {
		return hostOrder.Uint64(h.Bytes()), true
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) == nil {
		return st.Ino, true
	}
	return 0, false
}
