// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/ringmap"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
)

// Reader is what the receiver reads the records from, in ticket order with
// the gaps in their places: the sequencer ring's reader, or, with the
// programs built without BPF atomic fetch, the ring buffer's numbering one.
type Reader interface {
	Read(limit int, fn func(*ring.Item)) (int, ring.State)
	ring.Parker
}

// Capture is the loaded, attached programs and their mapped ring.
type Capture struct {
	hook   Hook
	why    string
	coll   *ebpf.Collection
	progs  []*ebpf.Program
	links  []link.Link
	ring   *ringmap.Ring
	reader Reader
	// rb: the programs are the h2nf objects (no BPF atomic fetch), which
	// write to a ring buffer; it is the reader, and its own doorbell.
	rb *transport.Buf

	// TLS: the files probed, and the processes looked at (RescanTLS looks
	// at new ones only). tlsMu guards these and links once the capture is
	// open (RescanTLS runs beside the reader).
	tlsMu    sync.Mutex
	libssl   []string
	goBins   []GoBinary
	goSkip   []string // at most maxListed, then counted in tlsUnlisted
	sslSkip  []string
	detached bool
	// scanMu serializes the scans (Open's, RescanTLS) and guards what only
	// they touch: the files and processes seen.
	scanMu  sync.Mutex
	sslSeen files
	goSeen  files
	// procs are the processes looked at, by pid, with their start time
	// and executable: one whose start time (a pid reused) or executable
	// (an exec) changed is looked at again; rebuilt from /proc at each
	// rescan (the gone ones pruned), at most maxProcs of them (procsCap).
	procs    map[int]procSeen
	maxProcs int
	maxFiles int // of sslSeen and goSeen each (0: maxFiles)
	// closing stops a scan between two processes (Detach).
	closing   atomic.Bool
	tlsFailed atomic.Uint64
	// Of tlsFailed: files refused for declaring bytes they do not hold
	// (sparse, or past their end) or more than the parsers read of one.
	tlsNotHeld, tlsTooLarge atomic.Uint64
	// Failures not listed (the lists hold maxListed); processes looked at
	// again (pid reused or exec); processes not remembered (maxProcs).
	tlsUnlisted, tlsRelooked, tlsUnremembered atomic.Uint64
	// Files seen only, forgotten (maxFiles).
	tlsForgotten atomic.Uint64
	filter       ProcFilter
	// multi: the TLS programs are loaded for uprobe_multi links (Linux
	// 6.6+): one link per program and file, whose close waits for one RCU
	// grace period for all its probe points. A perf-event uprobe's close
	// waits for its own, under a kernel-wide lock: 190 of them took 18 s to
	// close under load, which is what kept the collector from stopping.
	multi     bool
	self      fileID // the collector's executable, never probed
	selfPID   string
	probeSelf bool
}

// Hook is the hook in use, and Why says why it was chosen.
func (c *Capture) Hook() Hook { return c.hook }

// Why says why the hook was chosen.
func (c *Capture) Why() string { return c.why }

// Reader is the ring's reader, from ticket 0: for the one reading goroutine.
func (c *Capture) Reader() Reader { return c.reader }

// NoFetch reports whether the programs are those built without BPF atomic
// fetch, whose records the reader numbers in ring order.
func (c *Capture) NoFetch() bool { return c.rb != nil }

// Wait blocks until a producer rings the doorbell (or, with NoFetch, the
// ring buffer has records) or the timeout passes; the caller sets the
// parked flag and looks at the head again first.
func (c *Capture) Wait(timeout time.Duration) (bool, error) {
	if c.rb != nil {
		return c.rb.Wait(timeout)
	}
	return c.ring.Wait(timeout)
}

// Interrupt makes a blocked Wait return; any goroutine.
func (c *Capture) Interrupt() {
	if c.rb != nil {
		c.rb.Interrupt()
	} else if c.ring != nil {
		c.ring.Interrupt()
	}
}

// Counters reads the kernel's per-CPU counters, summed.
func (c *Capture) Counters() (Counters, error) {
	var per []h2H2Stats
	var out Counters
	if err := c.coll.Maps["h2_counters"].Lookup(uint32(0), &per); err != nil {
		return out, fmt.Errorf("read h2_counters: %w", err)
	}
	for _, p := range per {
		out.add(p)
	}
	var seq []h2RingStats
	if err := c.coll.Maps["ring_counters"].Lookup(uint32(0), &seq); err != nil {
		return out, fmt.Errorf("read ring_counters: %w", err)
	}
	out.TLSFilesFailed = c.tlsFailed.Load()
	out.TLSFilesNotHeld = c.tlsNotHeld.Load()
	out.TLSFilesTooLarge = c.tlsTooLarge.Load()
	out.TLSFailedUnlisted = c.tlsUnlisted.Load()
	out.TLSProcsRelooked = c.tlsRelooked.Load()
	out.TLSProcsUnremembered = c.tlsUnremembered.Load()
	out.TLSFilesForgotten = c.tlsForgotten.Load()
	for _, p := range seq {
		out.Overrun += p.Overrun
		out.NoSlot += p.NoSlot
		out.OutputFailed += p.OutputFailed
		out.Doorbells += p.Doorbells
		out.DoorbellFailed += p.DoorbellFailed
		for _, t := range p.Tickets {
			out.Tickets += t
		}
	}
	// Runs the kernel skipped: the same program already running on that CPU
	// (preempted in the middle, on a preemptible kernel). Their bytes are
	// missed; the next call on that connection finds the hole.
	for _, p := range c.progs {
		if st, err := p.Stats(); err == nil {
			out.ProgMisses += st.RecursionMisses
		}
	}
	return out, nil
}

// ProgramIDs lists the kernel ids of the loaded programs (for leak checks).
func (c *Capture) ProgramIDs() []ebpf.ProgramID {
	return bpfload.ProgramIDs(c.progs)
}

// Detach stops the producers; what is in the ring stays readable. A
// RescanTLS under way stops at its next process; the links are closed
// concurrently (closeLinks).
func (c *Capture) Detach() error {
	c.closing.Store(true)
	c.tlsMu.Lock()
	c.detached = true
	links := c.links
	c.links = nil
	c.tlsMu.Unlock()
	return closeLinks(links)
}

// Close detaches, unmaps and closes everything.
func (c *Capture) Close() error {
	errs := []error{c.Detach()}
	if c.ring != nil {
		errs = append(errs, c.ring.Close())
		c.ring = nil
	}
	c.reader = nil
	if c.rb != nil {
		errs = append(errs, c.rb.Close())
		c.rb = nil
	}
	if c.coll != nil {
		c.coll.Close()
		c.coll = nil
	}
	return errors.Join(errs...)
}
