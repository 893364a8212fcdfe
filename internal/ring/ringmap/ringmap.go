// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ringmap

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
)

// Ring is a sequencer ring's maps (bpf/ring/producer.h) mapped into this
// process: ring_control read-write (the head, and the parked flag the reader
// sets), ring_slots read-only, and the reader's end of ring_doorbell.
type Ring struct {
	ctl, slots []byte // the whole mappings (page-rounded)
	size       int    // the ring's bytes: slots × ring.SlotSize
	doorbell   *Doorbell
}

// Map maps the ring of coll (a collection with ring_control, and with
// ring_slots and ring_doorbell when slots > 0): the control block, and for a
// ring of slots slots its slots and doorbell. With slots 0 it maps the
// control block alone (the ring buffer and perf transports keep their head
// and parked flag there). On error nothing stays mapped.
func Map(coll *ebpf.Collection, slots int) (_ *Ring, err error) {
	r := &Ring{size: slots * ring.SlotSize}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	if r.ctl, err = Mmap(coll.Maps["ring_control"], ring.CtlSize, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return nil, err
	}
	if slots == 0 {
		return r, nil
	}
	if r.slots, err = Mmap(coll.Maps["ring_slots"], r.size, unix.PROT_READ); err != nil {
		return nil, err
	}
	if r.doorbell, err = NewDoorbell(coll.Maps["ring_doorbell"]); err != nil {
		return nil, err
	}
	return r, nil
}

// Control is the mapped struct ring_ctl (head and parked flag).
func (r *Ring) Control() []byte { return r.ctl[:ring.CtlSize] }

// Slots is the mapped ring of slots (read-only); nil when Map mapped the
// control block alone. It is exactly the ring, not the page-rounded
// mapping, so that its length gives the reader the same slot count as the
// programs' mask.
func (r *Ring) Slots() []byte {
	if r.slots == nil {
		return nil
	}
	return r.slots[:r.size]
}

// Wait waits on the doorbell (Doorbell.Wait); only for a ring mapped with its slots.
func (r *Ring) Wait(timeout time.Duration) (bool, error) { return r.doorbell.Wait(timeout) }

// Interrupt makes a blocked Wait return at once (Doorbell.Interrupt); any goroutine.
func (r *Ring) Interrupt() {
	if r.doorbell != nil {
		r.doorbell.Interrupt()
	}
}

// Close closes the doorbell and unmaps the ring.
func (r *Ring) Close() error {
	var errs []error
	if r.doorbell != nil {
		errs = append(errs, r.doorbell.Close())
		r.doorbell = nil
	}
	for _, b := range [][]byte{r.ctl, r.slots} {
		if b != nil {
			errs = append(errs, unix.Munmap(b))
		}
	}
	r.ctl, r.slots = nil, nil
	return errors.Join(errs...)
}

// Mmap maps size bytes (rounded up to whole pages) of a BPF_F_MMAPABLE map.
func Mmap(m *ebpf.Map, size int, prot int) ([]byte, error) {
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	b, err := unix.Mmap(m.FD(), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", m, err)
	}
	return b, nil
}

// Doorbell is the reader's end of a ring's doorbell (ring_doorbell in
// bpf/ring/producer.h): the producer that finds the parked flag set writes one
// record into this BPF ring buffer.
type Doorbell struct {
	rd  *ringbuf.Reader
	rec ringbuf.Record
}

// NewDoorbell opens the doorbell ring buffer m.
func NewDoorbell(m *ebpf.Map) (*Doorbell, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, fmt.Errorf("open doorbell ring buffer: %w", err)
	}
	return &Doorbell{rd: rd}, nil
}

// Wait blocks until a producer rings the doorbell or the timeout passes. The
// caller must have set the parked flag (and re-checked the head) first.
// It returns true when woken by a producer.
func (d *Doorbell) Wait(timeout time.Duration) (bool, error) {
	d.rd.SetDeadline(time.Now().Add(timeout))
	err := d.rd.ReadInto(&d.rec)
	switch {
	case err == nil:
		// Drain the other doorbell records that piled up, without blocking.
		d.rd.SetDeadline(time.Unix(0, 1))
		for d.rd.ReadInto(&d.rec) == nil {
		}
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
		return false, nil
	default:
		return false, err
	}
}

// Interrupt makes a blocked Wait return at once, or the next one if none is
// blocked; it may be called from any goroutine.
func (d *Doorbell) Interrupt() { _ = d.rd.Flush() }

// Close releases the ring buffer reader.
func (d *Doorbell) Close() error { return d.rd.Close() }
