// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import "time"

// The pacing both receivers' readers share (see [Pacer]).
const (
	// GatherMin is the shortest gather: a faster flow fills a batch, and
	// the reader reads again at once.
	GatherMin = time.Millisecond
	// Linger is how long a reader whose read found nothing waits once
	// before it parks: a burst's stragglers are read without a doorbell.
	Linger = 250 * time.Microsecond
	// PendingFirst and PendingMax bound the back-off while a producer is
	// between its ticket and its publish (State Pending): it doubles from
	// the first to the most.
	PendingFirst = 20 * time.Microsecond
	PendingMax   = time.Millisecond
)

// Action is what a reader does after a read.
type Action uint8

const (
	// PaceAgain: read again at once (a read filled its batch).
	PaceAgain Action = iota
	// PaceBackoff: a producer still writes a ticket the reader needs; sleep
	// Step.Wait (short: a precise sleep) and read again.
	PaceBackoff
	// PaceGather: records are coming; sleep Step.Wait on a runtime timer,
	// then read what piled up.
	PaceGather
	// PaceLinger: nothing came; sleep Step.Wait once more before parking.
	PaceLinger
	// PacePark: nothing came twice; park on the doorbell ([Park]) for
	// Step.Wait.
	PacePark
)

// Step is a Pacer's answer: what to do, for how long, and whether to flush
// the batch first (it is due).
type Step struct {
	Action Action
	Wait   time.Duration
	Flush  bool
}

// Pacer is a ring reader's pacing: the read, gather, flush, park cycle
// that the seq and grpc receivers share. While records keep coming the
// reader gathers: it sleeps on a runtime timer and reads what piled up, so
// a steady flow costs one wake-up per gather, not one per few records. A
// gather is FlushAfter, as long as a batch waits for its flush anyway,
// unless at the rate the last read saw the ring would be a quarter full
// sooner (never under GatherMin). Once a read finds nothing the reader
// lingers once, then parks; a parked reader is woken by the first
// producer that sees the parked flag, or when the batch it holds is due.
// A read that finds a ticket still being written backs off, doubling.
//
// The Pacer only decides; the reader reads, flushes and sleeps. One per
// reading goroutine.
type Pacer struct {
	// FlushAfter bounds how long read records wait for their batch to
	// fill, and is the longest gather.
	FlushAfter time.Duration
	// ParkTimeout is the longest park with no batch waiting.
	ParkTimeout time.Duration
	// Slots is the ring's size: the gather shortens so that a quarter of
	// it would not fill at the last read's rate.
	Slots int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	lingered bool
	pending  time.Duration // the next Backoff
	lastRead time.Time
	since    time.Duration // between the last two reads
}

func (p *Pacer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Read marks the start of a read: the gather that follows adapts to the
// rate of the records since the previous one.
func (p *Pacer) Read() {
	now := p.now()
	p.since = now.Sub(p.lastRead)
	p.lastRead = now
}

// Due reports whether a batch started at batchAt (zero: no batch) has
// waited FlushAfter.
func (p *Pacer) Due(batchAt time.Time) bool {
	return !batchAt.IsZero() && p.now().Sub(batchAt) >= p.FlushAfter
}

// Next says what to do after a read (marked by Read) that returned n
// records in state st, while the batch started at batchAt (zero: none)
// waits. Flush is set only with PacePark: a batch due while the reader is busy
// is the reader's to flush after its read (Due).
func (p *Pacer) Next(n int, st State, batchAt time.Time) Step {
	switch st {
	case Full:
		p.lingered = false
		return Step{Action: PaceAgain}
	case Pending:
		if p.pending == 0 {
			p.pending = PendingFirst
		}
		w := p.pending
		p.pending = min(2*p.pending, PendingMax)
		return Step{Action: PaceBackoff, Wait: w}
	}
	p.pending = PendingFirst
	if n > 0 {
		p.lingered = false
		return Step{Action: PaceGather, Wait: p.gatherFor(n)}
	}
	if !p.lingered {
		p.lingered = true
		return Step{Action: PaceLinger, Wait: Linger}
	}
	p.lingered = false
	// Nothing more to read. A batch still young waits on the doorbell for
	// the rest of its window (more records join the same batch); an old
	// one goes to the pipeline before the reader parks.
	s := Step{Action: PacePark, Wait: p.ParkTimeout}
	if !batchAt.IsZero() {
		if left := p.FlushAfter - p.now().Sub(batchAt); left > 0 {
			s.Wait = left
		} else {
			s.Flush = true
		}
	}
	return s
}

// gatherFor is how long to gather after a read of n records that came in
// over the last since: FlushAfter, or less where at that rate a quarter of
// the ring's slots would fill sooner, never under GatherMin.
func (p *Pacer) gatherFor(n int) time.Duration {
	if n <= 0 || p.since <= 0 {
		return p.FlushAfter
	}
	fill := time.Duration(float64(p.since) * float64(p.Slots/4) / float64(n))
	return min(p.FlushAfter, max(GatherMin, fill))
}
