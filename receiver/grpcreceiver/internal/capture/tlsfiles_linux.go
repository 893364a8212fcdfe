// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The files probed for TLS belong to other processes: each is opened once
// (O_RDONLY|O_CLOEXEC), parsed from that descriptor, and probed through it
// (/proc/self/fd/N: the kernel resolves the magic link to the very inode),
// so that a process that execs another program, or a path replaced, between
// the parse and the attach cannot move the breakpoints into another file.

// fileID is a file's device and inode.
type fileID [2]uint64

// idOf is the device and inode of the open file f.
func idOf(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, fmt.Errorf("%s: not a regular file", f.Name())
	}
	return fileID{st.Dev, st.Ino}, nil
}

// fdPath is the path of f's descriptor as this process sees it: what
// link.OpenExecutable and the kernel's uprobe attach resolve to f's inode.
func fdPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// openExecutable opens f's file for link (through its descriptor).
func openExecutable(f *os.File) (*link.Executable, error) { return link.OpenExecutable(fdPath(f)) }

// openInRoot opens path (absolute, as a process whose root is root sees
// it) without leaving root: symlinks, absolute ones too, resolve inside it
// and magic links (/proc/<pid>/...) are refused.
func openInRoot(root, p string) (*os.File, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: filepath.Join(root, p), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, p)), nil
}

// mappedFile is a file that process pid maps: its path as the process
// sees it, the address range of one mapping and the inode the maps line
// gives.
type mappedFile struct {
	pid, path, mapping string
	ino                uint64
}

// name is how the file is called in the logs: through the process's root.
func (m mappedFile) name() string { return filepath.Join("/proc", m.pid, "root", m.path) }

// open opens the mapped file: /proc/<pid>/map_files/<range> (the mapped
// file itself; root only), else its path resolved inside the process's
// root; the inode must be the one mapped.
func (m mappedFile) open() (*os.File, error) {
	f, err := os.Open(filepath.Join("/proc", m.pid, "map_files", m.mapping))
	if err != nil {
		if f, err = openInRoot(filepath.Join("/proc", m.pid, "root"), m.path); err != nil {
			return nil, err
		}
	}
	id, err := idOf(f)
	if err == nil && m.ino != 0 && id[1] != m.ino {
		err = fmt.Errorf("%s: inode %d, not the mapped %d (replaced)", m.name(), id[1], m.ino)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// libSSLOf lists the libssl files process pid maps.
func libSSLOf(pid string) []mappedFile {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "maps"))
	if err != nil {
		return nil
	}
	var out []mappedFile
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "/")
		if i < 0 || !strings.Contains(line[i:], "/libssl.so") {
			continue
		}
		// start-end perms offset dev inode path
		f := strings.Fields(line[:i])
		if len(f) < 5 || slices.ContainsFunc(out, func(m mappedFile) bool { return m.path == line[i:] }) {
			continue
		}
		ino, _ := strconv.ParseUint(f[4], 10, 64)
		out = append(out, mappedFile{pid: pid, path: line[i:], mapping: f[0], ino: ino})
	}
	return out
}

// ProcFilter picks the processes whose files are probed for TLS: by their
// executable's path (globs, path.Match) and their cgroup v2 path (prefixes,
// whole components). Exclusion wins; an empty include list includes all.
type ProcFilter struct {
	IncludeExecutables, ExcludeExecutables []string
	IncludeCgroups, ExcludeCgroups         []string
}

func (p ProcFilter) empty() bool {
	return len(p.IncludeExecutables)+len(p.ExcludeExecutables)+len(p.IncludeCgroups)+len(p.ExcludeCgroups) == 0
}

// allows says whether process pid is to be probed, and why not.
func (p ProcFilter) allows(pid string) (bool, string) {
	if p.empty() {
		return true, ""
	}
	if len(p.IncludeExecutables)+len(p.ExcludeExecutables) > 0 {
		exe, err := os.Readlink(filepath.Join("/proc", pid, "exe"))
		if err != nil {
			return false, "no executable"
		}
		glob := func(g string) bool { ok, _ := path.Match(g, exe); return ok }
		if slices.ContainsFunc(p.ExcludeExecutables, glob) {
			return false, exe + ": excluded executable"
		}
		if len(p.IncludeExecutables) > 0 && !slices.ContainsFunc(p.IncludeExecutables, glob) {
			return false, exe + ": executable not included"
		}
	}
	if len(p.IncludeCgroups)+len(p.ExcludeCgroups) > 0 {
		cg := cgroupOf(pid)
		under := func(prefix string) bool {
			prefix = strings.TrimSuffix(prefix, "/")
			return cg == prefix || strings.HasPrefix(cg, prefix+"/") || prefix == ""
		}
		if slices.ContainsFunc(p.ExcludeCgroups, under) {
			return false, cg + ": excluded cgroup"
		}
		if len(p.IncludeCgroups) > 0 && (cg == "" || !slices.ContainsFunc(p.IncludeCgroups, under)) {
			return false, cg + ": cgroup not included"
		}
	}
	return true, ""
}

// cgroupOf is process pid's cgroup v2 path (the "0::" line of
// /proc/<pid>/cgroup), "" when it has none.
func cgroupOf(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if cg, ok := strings.CutPrefix(line, "0::"); ok {
			return cg
		}
	}
	return ""
}

// closeLinks closes links concurrently: closing a perf-event uprobe waits
// for an RCU grace period, one after another they add up (seconds on a
// loaded machine with many probed files); at once they share the waits.
func closeLinks(links []link.Link) error {
	errs := make([]error, len(links))
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i, l := range links {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = l.Close()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wanted says whether the files of process pid are to be probed: not the
// collector itself, and allowed by the include and exclude lists.
func (c *Capture) wanted(pid string) bool {
	if pid == c.selfPID && !c.probeSelf {
		return false
	}
	ok, _ := c.filter.allows(pid)
	return ok
}

// procPIDs lists the processes in /proc.
func procPIDs() []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, filepath.Base(d))
	}
	return out
}

// files is a set of files by device and inode: one file reached by
// several paths (links, /proc/<pid>/root, /proc/<pid>/exe) is one. True:
// the file is probed (kept for good), false: seen only (not Go, no TLS, or
// failed: forgotten when the set is full).
type files map[fileID]bool

// maxFiles bounds each set of files seen: past it, those seen only are
// forgotten (counted in tls_files_forgotten) and parsed again if seen again.
const maxFiles = 1 << 16

// seen adds file id to set and says whether it is new; the files seen
// only are forgotten first when the set holds maxFiles (c.maxFiles).
func (c *Capture) seen(set files, id fileID) bool {
	if _, ok := set[id]; ok {
		return false
	}
	limit := c.maxFiles
	if limit == 0 {
		limit = maxFiles
	}
	if len(set) >= limit {
		for k, probed := range set {
			if !probed {
				delete(set, k)
				c.tlsForgotten.Add(1)
			}
		}
	}
	set[id] = false
	return true
}
