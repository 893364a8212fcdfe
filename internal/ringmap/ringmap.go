// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package ringmap maps a sequencer ring's BPF maps into this process and
// waits on its doorbell: the part of reading a ring that touches the kernel,
// shared by every loader of a sequencer producer (internal/sequencer for the
// seq receiver, the grpc receiver's capture). The ring protocol itself is
// internal/ring, pure Go.
package ringmap

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

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

// Doorbell is the reader's end of a ring's doorbell (seq_doorbell in
// bpf/seq_ring.h): the producer that finds the parked flag set writes one
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
