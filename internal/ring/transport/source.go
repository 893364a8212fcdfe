// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package transport

import (
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
)

// Source is what the receiver reads, whatever the transport: records in
// ticket order, with every run of lost tickets as a Gap in its place.
//
// Read, Wait, SetParked, ClearParked and Abandon are for the one reading
// goroutine; Interrupt and Head may be called from any.
type Source interface {
	// Read hands up to limit records (and the gaps between them) to fn, as
	// ring.Reader.Read does, and says why it stopped.
	Read(limit int, fn func(*ring.Item)) (int, ring.State)
	// SetParked and ClearParked are the reader's half of the doorbell
	// handshake (ring.Reader.SetParked); ring.Park sets, looks at Head again,
	// then Waits.
	SetParked()
	ClearParked() bool
	// Wait blocks until the producers wake the reader or timeout passes.
	Wait(timeout time.Duration) (bool, error)
	// Interrupt makes a blocked Wait return at once.
	Interrupt()
	Head() uint64  // tickets issued
	Next() uint64  // the next ticket the reader hands out
	Start() uint64 // the first ticket the reader was responsible for
	Stats() ring.Stats
	// Abandon hands out what is still held, gives up on every ticket up to
	// the head (as Shutdown, unless a producer counted it lost) and returns
	// that head. For a source whose producers are detached.
	Abandon(fn func(*ring.Item)) uint64
}

// Doorbell wakes a parked slot ring reader (internal/ring/ringmap's Ring, or the
// loader that holds it).
type Doorbell interface {
	// Wait blocks until a producer rings or timeout passes; true when rung.
	Wait(timeout time.Duration) (bool, error)
	// Interrupt makes a blocked Wait return at once; from any goroutine.
	Interrupt()
}

// NewSlots returns the slot ring's Source: a ring.Reader over the mapped
// control block and slots, responsible for every ticket from 0 on (the
// maps are new), woken by db.
func NewSlots(ctl, slots []byte, db Doorbell) (Source, error) {
	rd, err := ring.NewReader(ctl, slots, ring.StartAt(0))
	if err != nil {
		return nil, err
	}
	return &slotSource{Reader: rd, db: db}, nil
}

// slotSource is the slot ring: its reader and its doorbell.
type slotSource struct {
	*ring.Reader
	db Doorbell
}

func (q *slotSource) Wait(timeout time.Duration) (bool, error) { return q.db.Wait(timeout) }
func (q *slotSource) Interrupt()                               { q.db.Interrupt() }
