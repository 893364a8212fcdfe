// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxEntries = 8192
	DefaultMinRefresh = time.Second
)

// ErrNoCgroup2 is returned by NewResolver when no cgroup v2 hierarchy is
// mounted.
var ErrNoCgroup2 = errors.New("no cgroup v2 hierarchy mounted")

// Options configure a Resolver.
type Options struct {
	// Mount is where the cgroup v2 hierarchy is mounted; empty finds it in
	// /proc/self/mountinfo.
	Mount string
	// Root is the cgroup path of Mount's top directory from the root of the
	// hierarchy, trusted as given. Empty places the top directory (see
	// placeRoot): "/" when it is the hierarchy's root (it has no
	// cgroup.type, which the kernel gives every cgroup but the root),
	// else mountinfo's root when the collector is in the initial cgroup
	// namespace; else the paths cannot be placed, and no path gives a
	// container or pod identity.
	Root string
	// MaxEntries bounds the ids kept (DefaultMaxEntries when 0); beyond it
	// the oldest are forgotten.
	MaxEntries int
	// MinRefresh is the least time between two walks of the hierarchy on
	// misses (DefaultMinRefresh when 0).
	MinRefresh time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// NoHandles disables the by-handle lookup (open_by_handle_at), leaving
	// the walk alone; tests use it.
	NoHandles bool
}

// Stats are a Resolver's counters.
type Stats struct {
	Misses uint64 // lookups of ids that resolved to no cgroup (gone, or not yet walked)
	Walks  uint64 // walks of the hierarchy
	Cached uint64 // ids kept now
	// Untrusted counts the cgroups resolved whose path names a container
	// or pod that was not taken as their identity, by Info.Untrusted.
	Untrusted map[string]uint64
}

// Resolver maps the cgroup ids of events to Info, at event time: a cgroup
// may be removed soon after its last process exits, so an id is resolved
// when its first event is read and the result kept (up to MaxEntries ids).
// An id not yet known is looked up by handle (open_by_handle_at, where the
// kernel and privileges allow), else found by walking the hierarchy again,
// at most once per MinRefresh. A Resolver is safe for concurrent use.
type Resolver struct {
	mount, root string
	anchored    bool // root is a path from the hierarchy's root
	max         int
	minRefresh  time.Duration
	now         func() time.Time
	byHandle    func(id uint64) (string, bool)

	mu       sync.Mutex
	cache    map[uint64]*Info
	fifo     []uint64 // the ids of cache, oldest first, as a ring
	head     int
	index    map[uint64]dirent // inode -> parent and name, from the last walk
	lastWalk time.Time
	walked   bool

	misses, walks atomic.Uint64
	container     atomic.Bool
	untrusted     map[string]uint64 // under mu
}

// NewResolver finds the cgroup v2 hierarchy and indexes it.
func NewResolver(o Options) (*Resolver, error) {
	var shown string // the mount's root as mountinfo shows it
	if o.Mount == "" {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		mount, root, ok := FindCgroup2(b)
		if !ok {
			return nil, ErrNoCgroup2
		}
		o.Mount, shown = mount, root
	}
	anchored := true
	if o.Root == "" {
		_, err := os.Stat(filepath.Join(o.Mount, "cgroup.type"))
		o.Root, anchored = placeRoot(errors.Is(err, fs.ErrNotExist), shown, initialCgroupNS())
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = DefaultMinRefresh
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Resolver{
		mount: filepath.Clean(o.Mount), root: o.Root, anchored: anchored, max: o.MaxEntries, minRefresh: o.MinRefresh, now: o.Now,
		cache: make(map[uint64]*Info), untrusted: make(map[string]uint64),
	}
	if !o.NoHandles {
		r.byHandle = newHandleLookup(r.mount)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.walk(); err != nil {
		return nil, err
	}
	return r, nil
}

// placeRoot returns the cgroup path of a cgroup2 mount's top directory, and
// whether it is a path from the hierarchy's root (anchored), from what is
// known of it: whether the top directory is the hierarchy's root (no
// cgroup.type), the root mountinfo shows (relative to the collector's
// cgroup namespace, "/.." where it lies above it), and whether the
// collector is in the initial cgroup namespace.
//
// In a container with its own cgroup namespace (containerd's default on
// cgroup v2), mountinfo's paths start at the namespace's root, whose place
// in the hierarchy the collector does not know: unless the mount is the
// hierarchy's root itself (the DaemonSet's hostPath /sys/fs/cgroup), its
// paths are not anchored and name no container or pod.
func placeRoot(top bool, shown string, initialNS bool) (root string, anchored bool) {
	switch {
	case top:
		return "/", true
	case shown == "":
		return "/", false
	case initialNS && strings.HasPrefix(shown, "/") && !strings.Contains("/"+shown+"/", "/../"):
		return shown, true
	}
	return shown, false
}

// Mount is where the hierarchy was found.
func (r *Resolver) Mount() string { return r.mount }

// Root is the cgroup path of the mount's top directory, and whether it is a
// path from the hierarchy's root: when it is not, no path names a container
// or a pod.
func (r *Resolver) Root() (string, bool) { return r.root, r.anchored }

// Parse is Parse for a path of this hierarchy: ParseUnanchored when the
// mount's root cannot be placed.
func (r *Resolver) Parse(path string) Info {
	if !r.anchored {
		return ParseUnanchored(path)
	}
	return Parse(path)
}

// Resolve returns the Info of cgroup id, or nil when no cgroup has it (it
// was removed before it was resolved, or is too new for the last walk and
// the next walk is not due yet).
func (r *Resolver) Resolve(id uint64) *Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	if info, ok := r.cache[id]; ok {
		return info
	}
	if p, ok := r.pathOf(id); ok {
		return r.keep(id, p)
	}
	if r.byHandle != nil {
		if p, ok := r.byHandle(id); ok {
			return r.keep(id, p)
		}
	}
	if r.now().Sub(r.lastWalk) >= r.minRefresh {
		if r.walk() == nil {
			if p, ok := r.pathOf(id); ok {
				return r.keep(id, p)
			}
		}
	}
	r.misses.Add(1)
	return nil
}

// Lookup returns the Info of an id resolved before, without looking for it.
func (r *Resolver) Lookup(id uint64) *Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache[id]
}

// SawContainers reports whether any id resolved so far belongs to a
// container or a pod: until one does, nothing needs grouping by container.
func (r *Resolver) SawContainers() bool { return r.container.Load() }

// Stats returns the counters.
func (r *Resolver) Stats() Stats {
	r.mu.Lock()
	n := len(r.cache)
	var untrusted map[string]uint64
	if len(r.untrusted) > 0 {
		untrusted = make(map[string]uint64, len(r.untrusted))
		for k, v := range r.untrusted {
			untrusted[k] = v
		}
	}
	r.mu.Unlock()
	return Stats{Misses: r.misses.Load(), Walks: r.walks.Load(), Cached: uint64(n), Untrusted: untrusted}
}

// keep caches the Info of id at rel (relative to the mount), forgetting the
// oldest id when full.
func (r *Resolver) keep(id uint64, rel string) *Info {
	info := r.Parse(r.cgroupPath(rel))
	if info.Untrusted != "" {
		r.untrusted[info.Untrusted]++
	}
	if len(r.fifo) < r.max {
		r.fifo = append(r.fifo, id)
	} else {
		delete(r.cache, r.fifo[r.head])
		r.fifo[r.head] = id
		r.head = (r.head + 1) % r.max
	}
	r.cache[id] = &info
	if info.InContainer() {
		r.container.Store(true)
	}
	return &info
}

// cgroupPath joins the mount's root and a path relative to the mount.
func (r *Resolver) cgroupPath(rel string) string {
	rel = strings.Trim(rel, "/")
	switch {
	case rel == "":
		return r.root
	case r.root == "/":
		return "/" + rel
	}
	return strings.TrimRight(r.root, "/") + "/" + rel
}

// dirent is a directory of the last walk: its parent's inode (0 for the
// mount's top) and its name. The index keeps names, not paths: a path is
// up to PATH_MAX bytes, and a user with a delegated subtree chooses how
// deep their cgroups are, so paths would cost the index up to 4 KiB per
// cgroup where names cost at most 255 bytes.
type dirent struct {
	parent uint64
	name   string
}

// pathOf rebuilds the path, relative to the mount, of a directory of the
// last walk.
func (r *Resolver) pathOf(id uint64) (string, bool) {
	e, ok := r.index[id]
	if !ok {
		return "", false
	}
	var names []string
	for n := 0; e.parent != 0 && n <= len(r.index); n++ { // n: a loop cannot be made, but bound it
		names = append(names, e.name)
		if e, ok = r.index[e.parent]; !ok {
			return "", false
		}
	}
	slices.Reverse(names)
	return "/" + strings.Join(names, "/"), true
}

// walk indexes every cgroup directory under the mount by inode.
func (r *Resolver) walk() error {
	r.lastWalk = r.now()
	r.walks.Add(1)
	index := make(map[uint64]dirent, max(len(r.index), 64))
	fi, err := os.Stat(r.mount)
	if err != nil {
		if !r.walked {
			return err
		}
		return nil
	}
	top, ok := inode(fi)
	if !ok {
		top = 1
	}
	index[top] = dirent{}
	var dir func(p string, ino uint64, ents []fs.DirEntry)
	dir = func(p string, parent uint64, ents []fs.DirEntry) {
		for _, d := range ents {
			if !d.IsDir() {
				continue
			}
			fi, err := d.Info()
			if err != nil {
				continue // removed while walking: skip it
			}
			ino, ok := inode(fi)
			if !ok {
				continue
			}
			index[ino] = dirent{parent: parent, name: d.Name()}
			child := p + "/" + d.Name()
			sub, err := os.ReadDir(child)
			if err != nil {
				continue // removed while walking, or past PATH_MAX: skip it
			}
			dir(child, ino, sub)
		}
	}
	ents, err := os.ReadDir(r.mount)
	if err != nil && !r.walked {
		return err
	}
	dir(r.mount, top, ents)
	r.walked = true
	r.index = index
	return nil
}

// FindCgroup2 returns where the cgroup v2 hierarchy is mounted, and the
// cgroup path the mount shows at its top, from /proc/self/mountinfo. The
// first cgroup2 mount point wins; of the mounts there, the last (the one
// on top, which a path there reaches: a DaemonSet's hostPath mount over
// the runtime's own) gives the root.
func FindCgroup2(mountinfo []byte) (mount, root string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		if m := unescape(fields[4]); !ok || m == mount {
			mount, root, ok = m, unescape(fields[3]), true
		}
	}
	return mount, root, ok
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
