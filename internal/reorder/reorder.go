// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package reorder is the bounded reordering stage that a BPF ring buffer or
// perf buffer consumer needs to hand records on in ticket order: producers
// claim tickets with one fetch-add, but their records reach the reader in
// the order the outputs happened (the ring buffer) or per CPU (perf).
package reorder

import "time"

// Item is what the stage orders: a record that took the tickets [first, first+n).
type Item interface {
	TicketSpan() (first, n uint64)
}

// Reorder is a min-heap by ticket.
//
// A record is released when its ticket is the next expected one. When more
// than MaxHeld records wait, or the oldest waiting record arrived more than
// MaxWait ago, the stage stops waiting for the missing tickets below the
// smallest one it holds: it counts them lost (Declared, reported to OnGap)
// and releases what it holds up to there. A record that arrives after its
// place was given up on — a ticket below the next expected one — is counted
// in Late; it had been counted in Declared too. It is released at once, out
// of order, unless DropLate is set: then it is dropped, and every ticket is
// either released in order or declared lost, exactly once. A transport that
// loses nothing silently would need neither bound; the stage is only as good
// as its bounds are long compared with how late records arrive.
type Reorder[T Item] struct {
	MaxHeld int           // most records held; <= 0: no bound
	MaxWait time.Duration // longest a held record waits; <= 0: no bound
	// DropLate drops records that arrive after their tickets were given up
	// on instead of releasing them out of order.
	DropLate bool
	// OnGap, if set, is told of every run of tickets given up on, in place:
	// before the record that follows it is released.
	OnGap func(first, n uint64)

	next     uint64
	heap     []T
	arrivals []arrival // held records in arrival order (some may be released already)
	ahead    int       // arrivals[ahead:] are the live part of the queue

	Released uint64 // records released
	Declared uint64 // tickets given up on (counted lost) by the stage
	Late     uint64 // records that arrived after their ticket was given up on
	Dup      uint64 // records whose ticket was already released (never expected)
	MaxSeen  int    // most records held at once
}

type arrival struct {
	at     time.Time
	ticket uint64
}

// New returns a stage that expects ticket first next.
func New[T Item](first uint64, maxHeld int, maxWait time.Duration) *Reorder[T] {
	return &Reorder[T]{MaxHeld: maxHeld, MaxWait: maxWait, next: first}
}

// Next is the next ticket the stage expects.
func (r *Reorder[T]) Next() uint64 { return r.next }

// Held is how many records wait in the stage.
func (r *Reorder[T]) Held() int { return len(r.heap) }

func ticket[T Item](x T) uint64 {
	t, _ := x.TicketSpan()
	return t
}

// Push takes one record that arrived at now and releases what it can to out,
// in ticket order (except for late records).
func (r *Reorder[T]) Push(rec T, now time.Time, out func(T)) {
	t, n := rec.TicketSpan()
	if t < r.next {
		// Its place was given up on (or it is a duplicate, which a
		// correct transport never produces).
		r.Late++
		if !r.DropLate {
			r.Released++
			out(rec)
		}
		return
	}
	if t == r.next && len(r.heap) == 0 {
		// The common case for an in-order transport: straight through.
		r.next += max(n, 1)
		r.Released++
		out(rec)
		return
	}
	r.push(rec)
	if r.MaxWait > 0 {
		r.arrivals = append(r.arrivals, arrival{now, t})
	}
	if len(r.heap) > r.MaxSeen {
		r.MaxSeen = len(r.heap)
	}
	r.release(out)
	for r.MaxHeld > 0 && len(r.heap) > r.MaxHeld {
		r.giveUpTo(ticket(r.heap[0]), out)
	}
	r.Tick(now, out)
}

// Tick releases records that waited longer than MaxWait, giving up on the
// tickets missing below them. Call it now and then when nothing arrives.
func (r *Reorder[T]) Tick(now time.Time, out func(T)) {
	if r.MaxWait <= 0 {
		return
	}
	for r.ahead < len(r.arrivals) {
		a := r.arrivals[r.ahead]
		if a.ticket < r.next {
			r.ahead++ // released already
			continue
		}
		if now.Sub(a.at) < r.MaxWait {
			break
		}
		r.giveUpTo(a.ticket, out)
		r.ahead++
	}
	// Compact the queue once its dead head dominates.
	if r.ahead > 1024 && r.ahead*2 > len(r.arrivals) {
		n := copy(r.arrivals, r.arrivals[r.ahead:])
		r.arrivals = r.arrivals[:n]
		r.ahead = 0
	}
}

// Flush gives up on every missing ticket below the records still held and
// releases them all, in ticket order (the end of a run).
func (r *Reorder[T]) Flush(out func(T)) {
	for len(r.heap) > 0 {
		r.giveUpTo(ticket(r.heap[0]), out)
	}
	r.arrivals, r.ahead = r.arrivals[:0], 0
}

// FlushTo is Flush, and then gives up on the tickets below end too: a run
// that issued end tickets and delivered no more has lost them.
func (r *Reorder[T]) FlushTo(end uint64, out func(T)) {
	r.Flush(out)
	r.SkipTo(end)
}

// GiveUpBelow gives up on every ticket below end that has not come (a
// Frontier says none will): it releases the held records below end in
// order, counting the tickets missing between them lost, then whatever
// follows in sequence.
func (r *Reorder[T]) GiveUpBelow(end uint64, out func(T)) {
	if end <= r.next {
		return
	}
	r.giveUpTo(end-1, out)
	r.SkipTo(end)
	r.release(out)
}

// SkipTo gives up on the tickets from Next up to end, when nothing is held
// below end: tickets claimed whose records never came.
func (r *Reorder[T]) SkipTo(end uint64) {
	if end <= r.next || len(r.heap) > 0 && ticket(r.heap[0]) < end {
		return
	}
	r.declare(end - r.next)
	r.next = end
}

func (r *Reorder[T]) declare(n uint64) {
	if n == 0 {
		return
	}
	r.Declared += n
	if r.OnGap != nil {
		r.OnGap(r.next, n)
	}
}

// giveUpTo counts the tickets missing below t lost and releases every held
// record up to t, then whatever follows in sequence.
func (r *Reorder[T]) giveUpTo(t uint64, out func(T)) {
	for len(r.heap) > 0 && ticket(r.heap[0]) <= t {
		rec := r.pop()
		rt, n := rec.TicketSpan()
		if rt < r.next {
			r.Dup++
			if !r.DropLate {
				r.Released++
				out(rec)
			}
			continue
		}
		r.declare(rt - r.next)
		r.next = rt + max(n, 1)
		r.Released++
		out(rec)
	}
	r.release(out)
}

// release hands out the held records that continue the sequence.
func (r *Reorder[T]) release(out func(T)) {
	for len(r.heap) > 0 && ticket(r.heap[0]) <= r.next {
		rec := r.pop()
		rt, n := rec.TicketSpan()
		if rt < r.next {
			r.Dup++
			if r.DropLate {
				continue
			}
		} else {
			r.next = rt + max(n, 1)
		}
		r.Released++
		out(rec)
	}
}

// A binary min-heap on the ticket, by hand: container/heap's interface calls
// cost more than the records they move.
func (r *Reorder[T]) push(rec T) {
	h := append(r.heap, rec)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if ticket(h[p]) <= ticket(h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	r.heap = h
}

func (r *Reorder[T]) pop() T {
	h := r.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	var zero T
	h[n] = zero
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if rr := l + 1; rr < n && ticket(h[rr]) < ticket(h[l]) {
			m = rr
		}
		if ticket(h[i]) <= ticket(h[m]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.heap = h
	return top
}
