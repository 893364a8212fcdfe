// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cilium/ebpf/link"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls"
)

// GoBinary is a Go executable whose crypto/tls is probed.
type GoBinary struct {
	Path      string // as configured, or the running process's executable
	Probes    int    // probe points: Write, Read, Close and every RET of Read
	Pclntab   bool   // found through .gopclntab (no symbol table)
	GoVersion string
	Dev, Ino  uint64 // the file probed (the one parsed)
}

// GoBinaries lists the Go executables whose crypto/tls is probed.
func (c *Capture) GoBinaries() []GoBinary {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.goBins)
}

// GoSkipped lists the running Go executables with crypto/tls that could
// not be probed, each with why (an old Go, another architecture, no
// symbols, code that did not decode, a malformed file, a refused uprobe).
func (c *Capture) GoSkipped() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.goSkip)
}

// attachGoTLS probes crypto/tls in the configured Go executables (an error
// there fails the start: they were asked for) and in those of the running
// processes (one that cannot be probed is listed in GoSkipped). One file
// reached by several paths is probed once; a uprobe is on the file, so
// processes started from it later are covered too. The collector's own
// executable is never probed.
func (c *Capture) attachGoTLS(configured []string) error {
	c.goSeen, c.procs = files{}, map[int]procSeen{}
	if c.maxProcs == 0 {
		c.maxProcs = maxProcs
	}
	if !c.probeSelf {
		c.goSeen[c.self] = true
	}
	for _, p := range configured {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("tls: go_binaries: %w", err)
		}
		id, err := idOf(f)
		if err == nil && c.seen(c.goSeen, id) {
			err = c.attachGoBinary(f, id, p)
			c.goSeen[id] = err == nil
		}
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("tls: go_binaries: %s: %w", p, err)
		}
	}
	for _, pid := range procPIDs() {
		if seen, ok := procOf(pid); ok {
			c.remember(c.procs, pid, seen)
		}
		if c.wanted(pid) {
			c.attachGoProcess(pid)
		}
	}
	return nil
}

// attachGoProcess probes the executable of process pid (one wanted) if it is a Go
// program with crypto/tls not seen yet; one that cannot be probed is listed
// in GoSkipped and counted in TLSFilesFailed, and why is returned.
func (c *Capture) attachGoProcess(pid string) (*GoBinary, string) {
	e := filepath.Join("/proc", pid, "exe")
	f, err := os.Open(e)
	if err != nil {
		return nil, "" // a kernel thread, or gone
	}
	defer f.Close()
	id, err := idOf(f)
	if err != nil || !c.seen(c.goSeen, id) {
		return nil, "" // a file seen already (the collector's own among them)
	}
	name, err := os.Readlink(e)
	if err != nil {
		name = e
	}
	err = c.attachGoBinary(f, id, name)
	c.goSeen[id] = err == nil
	if err != nil && !errors.Is(err, gotls.ErrNotGo) && !errors.Is(err, gotls.ErrNoTLS) && !errors.Is(err, errDetached) {
		c.failed(err)
		why := fmt.Sprintf("%s: %v", name, err)
		c.tlsMu.Lock()
		c.goSkip = c.listed(c.goSkip, why)
		c.tlsMu.Unlock()
		return nil, why
	}
	if err != nil {
		return nil, ""
	}
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	b := c.goBins[len(c.goBins)-1]
	return &b, ""
}

// attachGoBinary attaches the Go TLS programs to the executable open as f
// (id: its device and inode; name: what to call it), all or none: parsed
// from f and probed through f, the very file.
func (c *Capture) attachGoBinary(f *os.File, id fileID, name string) (err error) {
	p, err := gotls.FindFile(f)
	if err != nil {
		return err
	}
	ex, err := openExecutable(f)
	if err != nil {
		return err
	}
	var links []link.Link
	defer func() {
		if err != nil {
			_ = closeLinks(links)
		}
	}()
	// After the stack checks (a call that grows its stack starts over);
	// Write is walked there, Read at each of its RETs.
	points := 0
	for _, a := range []struct {
		prog string
		offs []uint64
	}{
		{"h2_go_write", []uint64{p.Write.Body}}, {"h2_go_read", []uint64{p.Read.Body}},
		{"h2_go_close", []uint64{p.Close.Body}}, {"h2_go_read_ret", p.Read.Returns},
	} {
		ls, err := c.uprobes(ex, a.prog, "", a.offs, false)
		if err != nil {
			return fmt.Errorf("uprobe (%s): %w", a.prog, err)
		}
		links = append(links, ls...)
		points += len(a.offs)
	}
	b := GoBinary{Path: name, Probes: points, Pclntab: p.Pclntab, GoVersion: p.GoVersion, Dev: id[0], Ino: id[1]}
	return c.keep(links, func() { c.goBins = append(c.goBins, b) })
}
