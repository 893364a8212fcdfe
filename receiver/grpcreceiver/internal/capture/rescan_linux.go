// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Rescanned is what RescanTLS probed: files first seen in processes that
// started, or exec'd another file, since the last look.
type Rescanned struct {
	LibSSL    []string
	Go        []GoBinary
	Failed    []string // libssl files that could not be probed, with why
	GoSkipped []string // Go executables with crypto/tls that could not be, with why
}

// maxProcs bounds the processes remembered between two rescans (a live
// process beyond it is looked at again at each rescan, and counted).
const maxProcs = 1 << 16

// procSeen is what identifies a process looked at across pid reuse and
// exec: its start time (clock ticks after boot, /proc/<pid>/stat's 22nd
// field: a new process at a pid reused has another) and its executable's
// device and inode (an exec of another file changes it).
type procSeen struct {
	start uint64
	exe   fileID
	// vsize is its virtual memory size (the 23rd field): a dlopen changes
	// it, so a change is a cue to read its maps again for a libssl (at
	// most maxMapsRelooks processes a rescan).
	vsize uint64
}

// same says whether p is the process (and executable) q was.
func (p procSeen) same(q procSeen) bool { return p.start == q.start && p.exe == q.exe }

// maxMapsRelooks bounds the processes whose maps a rescan reads again
// because their size changed (the others keep their old size, and are
// read at a later rescan).
const maxMapsRelooks = 256

// procOf reads process pid's start time and executable (zero for a kernel
// thread); false when it is gone.
func procOf(pid string) (procSeen, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return procSeen{}, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procSeen{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procSeen{}, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procSeen{}, false
	}
	vsize, _ := strconv.ParseUint(f[20], 10, 64)
	p := procSeen{start: start, vsize: vsize}
	var st unix.Stat_t
	if unix.Stat(filepath.Join("/proc", pid, "exe"), &st) == nil {
		p.exe = fileID{st.Dev, st.Ino}
	}
	return p, true
}

// remember records process pid in procs unless procs holds maxProcs
// already (then it is counted, and looked at again next time).
func (c *Capture) remember(procs map[int]procSeen, pid string, p procSeen) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return
	}
	if len(procs) >= c.maxProcs {
		c.tlsUnremembered.Add(1)
		return
	}
	procs[n] = p
}

// RescanTLS looks at the processes that started since the capture opened
// (or since the last RescanTLS), and at those that exec'd another file,
// whatever their pid (a process is known by its pid, start time and
// executable: a pid reused or an exec is a new look), and probes the
// libssl files they map and their executables (Go crypto/tls) not probed
// yet. The processes gone are forgotten. A uprobe is on the file, so every
// later process of a probed file is covered already. A process that loads
// libssl (dlopen) after it was looked at has its maps read again when its
// size changed (maxMapsRelooks a rescan; the rest at later ones). Safe
// beside the reader; not before Open with TLS. It stops between two
// processes when ctx is done or the capture is detached (the rest is
// looked at next time), and holds no lock while it parses files.
func (c *Capture) RescanTLS(ctx context.Context) Rescanned {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	var out Rescanned
	if c.procs == nil || c.closing.Load() {
		return out
	}
	pids := procPIDs()
	next := make(map[int]procSeen, min(len(pids), c.maxProcs))
	relooks := 0
	for i, pid := range pids {
		if ctx.Err() != nil || c.closing.Load() {
			// The rest keep what was known of them.
			for _, pid := range pids[i:] {
				if n, err := strconv.Atoi(pid); err == nil {
					if p, ok := c.procs[n]; ok && len(next) < c.maxProcs {
						next[n] = p
					}
				}
			}
			break
		}
		seen, ok := procOf(pid)
		if !ok {
			continue // gone
		}
		n, _ := strconv.Atoi(pid)
		prev, known := c.procs[n]
		mapsOnly := known && prev.same(seen)
		if mapsOnly && (prev.vsize == seen.vsize || relooks == maxMapsRelooks) {
			seen.vsize = prev.vsize // unchanged, or left for a later rescan
			c.remember(next, pid, seen)
			continue
		}
		c.remember(next, pid, seen)
		switch {
		case mapsOnly:
			relooks++
		case known:
			c.tlsRelooked.Add(1)
		}
		if !c.wanted(pid) {
			continue
		}
		for _, m := range libSSLOf(pid) {
			isNew, err := c.probeLibSSL(m.name(), m.open)
			switch {
			case errors.Is(err, errDetached):
			case err != nil:
				c.failed(err)
				c.tlsMu.Lock()
				c.sslSkip = c.listed(c.sslSkip, err.Error())
				c.tlsMu.Unlock()
				out.Failed = append(out.Failed, err.Error())
			case isNew:
				out.LibSSL = append(out.LibSSL, m.name())
			}
		}
		if mapsOnly {
			continue // the same executable, looked at already
		}
		b, why := c.attachGoProcess(pid)
		if b != nil {
			out.Go = append(out.Go, *b)
		}
		if why != "" {
			out.GoSkipped = append(out.GoSkipped, why)
		}
	}
	c.procs = next
	return out
}
