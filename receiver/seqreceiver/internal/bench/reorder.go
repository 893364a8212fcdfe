package bench

import "time"

// Rec is the part of a delivered event that the order checks look at.
type Rec struct {
	Ticket uint64
	KTime  uint64 // when it happened (CLOCK_BOOTTIME ns)
	Start  uint64 // the process's start time: with PID it names the process
	PID    uint32
	Type   uint16
}

// Reorder is the bounded reordering stage a perf buffer or ring buffer
// consumer needs to hand events on in ticket order: a min-heap by ticket.
//
// A record is released when its ticket is the next expected one. When more
// than MaxHeld records wait, or the oldest waiting record arrived more than
// MaxWait ago, the stage stops waiting for the missing tickets below the
// smallest one it holds: it counts them lost (Declared) and releases what it
// holds up to there. A record that arrives after its place was given up on —
// a ticket below the next expected one — is released at once, out of order,
// and counted in Late; it had been counted in Declared too. A transport that
// loses nothing silently would need neither bound; the stage is only as good
// as its bounds are long compared with how late records arrive.
type Reorder struct {
	MaxHeld int           // most records held; <= 0: no bound
	MaxWait time.Duration // longest a held record waits; <= 0: no bound

	next     uint64
	heap     []Rec
	arrivals []arrival // held records in arrival order (some may be released already)
	ahead    int       // arrivals[ahead:] are the live part of the queue

	Released uint64 // records released
	Declared uint64 // tickets given up on (counted lost) by the stage
	Late     uint64 // records that arrived after their ticket was given up on: released out of order
	Dup      uint64 // records whose ticket was already released (never expected)
	MaxSeen  int    // most records held at once
}

type arrival struct {
	at     time.Time
	ticket uint64
}

// NewReorder returns a stage that expects ticket first next.
func NewReorder(first uint64, maxHeld int, maxWait time.Duration) *Reorder {
	return &Reorder{MaxHeld: maxHeld, MaxWait: maxWait, next: first}
}

// Next is the next ticket the stage expects.
func (r *Reorder) Next() uint64 { return r.next }

// Held is how many records wait in the stage.
func (r *Reorder) Held() int { return len(r.heap) }

// Push takes one record that arrived at now and releases what it can to out,
// in ticket order (except for late records).
func (r *Reorder) Push(rec Rec, now time.Time, out func(Rec)) {
	if rec.Ticket < r.next {
		// Its place was given up on (or it is a duplicate, which a
		// correct transport never produces): release it now, out of order.
		r.Late++
		r.Released++
		out(rec)
		return
	}
	if rec.Ticket == r.next && len(r.heap) == 0 {
		// The common case for an in-order transport: straight through.
		r.next++
		r.Released++
		out(rec)
		return
	}
	r.push(rec)
	if r.MaxWait > 0 {
		r.arrivals = append(r.arrivals, arrival{now, rec.Ticket})
	}
	if len(r.heap) > r.MaxSeen {
		r.MaxSeen = len(r.heap)
	}
	r.release(out)
	for r.MaxHeld > 0 && len(r.heap) > r.MaxHeld {
		r.giveUpTo(r.heap[0].Ticket, out)
	}
	r.Tick(now, out)
}

// Tick releases records that waited longer than MaxWait, giving up on the
// tickets missing below them. Call it now and then when nothing arrives.
func (r *Reorder) Tick(now time.Time, out func(Rec)) {
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
func (r *Reorder) Flush(out func(Rec)) {
	for len(r.heap) > 0 {
		r.giveUpTo(r.heap[0].Ticket, out)
	}
	r.arrivals, r.ahead = r.arrivals[:0], 0
}

// FlushTo is Flush, and then gives up on the tickets below end too: a run
// that issued end tickets and delivered no more has lost them.
func (r *Reorder) FlushTo(end uint64, out func(Rec)) {
	r.Flush(out)
	if end > r.next {
		r.Declared += end - r.next
		r.next = end
	}
}

// giveUpTo counts the tickets missing below t lost and releases every held
// record up to t, then whatever follows in sequence.
func (r *Reorder) giveUpTo(t uint64, out func(Rec)) {
	for len(r.heap) > 0 && r.heap[0].Ticket <= t {
		rec := r.pop()
		if rec.Ticket < r.next {
			r.Dup++
			r.Released++
			out(rec)
			continue
		}
		r.Declared += rec.Ticket - r.next
		r.next = rec.Ticket + 1
		r.Released++
		out(rec)
	}
	r.release(out)
}

// release hands out the held records that continue the sequence.
func (r *Reorder) release(out func(Rec)) {
	for len(r.heap) > 0 && r.heap[0].Ticket <= r.next {
		rec := r.pop()
		if rec.Ticket < r.next {
			r.Dup++
		} else {
			r.next++
		}
		r.Released++
		out(rec)
	}
}

// A binary min-heap on Ticket, by hand: container/heap's interface calls
// cost more than the records they move.
func (r *Reorder) push(rec Rec) {
	h := append(r.heap, rec)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].Ticket <= h[i].Ticket {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	r.heap = h
}

func (r *Reorder) pop() Rec {
	h := r.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if rr := l + 1; rr < n && h[rr].Ticket < h[l].Ticket {
			m = rr
		}
		if h[i].Ticket <= h[m].Ticket {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.heap = h
	return top
}
