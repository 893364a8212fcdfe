// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package cgroups

import (
	"encoding/binary"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileIDKernfs is FILEID_KERNFS: a kernfs file handle holds the node's
// 64-bit id, which is the cgroup id BPF reports.
const fileIDKernfs = 0xfe

// newHandleLookup returns a lookup of cgroup ids by file handle
// (open_by_handle_at needs CAP_DAC_READ_SEARCH), or nil when the kernel's
// cgroup handles are not kernfs ids or the call is not allowed.
func newHandleLookup(mount string) func(id uint64) (string, bool) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, mount, 0)
	if err != nil || h.Type() != fileIDKernfs || h.Size() != 8 {
		return nil
	}
	mfd, err := unix.Open(mount, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	// The fd stays open for the process's life: one per resolver, and the
	// receiver makes one.
	lookup := func(id uint64) (string, bool) {
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], id)
		fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(fileIDKernfs, b[:]), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			return "", false
		}
		defer unix.Close(fd)
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || (p != mount && !strings.HasPrefix(p, mount+"/")) {
			return "", false // a disconnected dentry, or another mount
		}
		return strings.TrimPrefix(p, mount), true
	}
	// Probe with the mount's own id: an unprivileged caller gets EPERM.
	var st unix.Stat_t
	if unix.Stat(mount, &st) != nil {
		unix.Close(mfd)
		return nil
	}
	if _, ok := lookup(st.Ino); !ok {
		unix.Close(mfd)
		return nil
	}
	return lookup
}

func inode(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ino, true
}

// initNSInode is PROC_CGROUP_INIT_INO, the inode of the initial cgroup
// namespace (/proc/self/ns/cgroup: cgroup:[4026531835]).
const initNSInode = 0xEFFFFFFB

// initialCgroupNS reports whether the collector is in the initial cgroup
// namespace, where mountinfo's cgroup paths are from the hierarchy's root.
var initialCgroupNS = func() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/ns/cgroup", &st) == nil && st.Ino == initNSInode
}
