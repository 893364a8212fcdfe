// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// ItemKind says what an Item is.
type ItemKind uint8

const (
	// Record is one record: Ticket is its first ticket, Slots its nslots and
	// Data its len bytes.
	Record ItemKind = iota + 1
	// Gap is a run of lost tickets: Ticket is the first, Lost how many, Reason why.
	Gap
)

func (k ItemKind) String() string {
	switch k {
	case Record:
		return "record"
	case Gap:
		return "gap"
	}
	return "unknown"
}

// LossReason says why tickets were lost.
type LossReason uint8

const (
	// Lapped: the producers reused the tickets' slots (or claimed the
	// tickets that will reuse them) before the reader got there. The reader
	// skips ahead to a resync point, and every ticket it skips is lost with
	// this reason. A ticket whose producer had to skip its slot (see
	// Producer.Overrun) is lost as Lapped once the ticket a lap later is
	// claimed, if the reader has not given up on it as Abandoned before.
	Lapped LossReason = iota + 1
	// Torn: a slot was overwritten while the reader copied it (its seq changed
	// between the two loads); then the same as Lapped.
	Torn
	// Corrupt: a published slot whose header makes no sense where it is (an
	// impossible nslots or len, a continuation slot where a record should
	// start, a continuation that does not match its first slot).
	Corrupt
	// Abandoned: tickets claimed (below head) but left unpublished for longer
	// than StuckAfter: a producer claimed them and never finished, or skipped
	// their slot because a stalled producer a lap behind still owned it, and
	// the ring has been too quiet since to lap them.
	Abandoned
	// Shutdown: tickets still unread, or still being written, when the
	// receiver stopped and gave up on them (see Reader.Abandon).
	Shutdown
	// The BPF ring buffer and perf buffer transports (package sequencer) report
	// their gaps with the reasons below; the sequencer never does.

	// ReserveFailed: the ring buffer had no room for the record
	// (bpf_ringbuf_output failed), counted by the producer.
	ReserveFailed
	// OutputFailed: bpf_perf_event_output failed (the CPU's perf buffer was
	// full, or the output nested), counted by the producer.
	OutputFailed
	// PerfLost: the kernel reported perf samples lost that the producers'
	// counters do not account for.
	PerfLost
	// GaveUp: the reorder stage stopped waiting for tickets whose records
	// never came (or came later than its bounds allow: then they are dropped).
	GaveUp
	numReasons = iota + 1
)

func (r LossReason) String() string {
	switch r {
	case Lapped:
		return "lapped"
	case Torn:
		return "torn"
	case Corrupt:
		return "corrupt"
	case Abandoned:
		return "abandoned"
	case Shutdown:
		return "shutdown"
	case ReserveFailed:
		return "reserve_failed"
	case OutputFailed:
		return "perf_output_failed"
	case PerfLost:
		return "perf_lost"
	case GaveUp:
		return "reorder_gave_up"
	}
	return "unknown"
}

// State says why Read stopped.
type State uint8

const (
	// Idle: the reader has caught up with head, no ticket is left to read.
	Idle State = iota
	// Pending: the next ticket is claimed but not yet published.
	Pending
	// Full: Read delivered as many records as it was allowed to.
	Full
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Pending:
		return "pending"
	case Full:
		return "full"
	}
	return "unknown"
}

// Item is what Read hands its callback: a record or a gap.
type Item struct {
	Kind   ItemKind
	Ticket uint64 // Record: first ticket; Gap: first lost ticket
	Slots  int    // Record: slots (tickets) it took
	// Data is the record's bytes (Record only). It points into the Reader's
	// buffer and is valid only during the callback.
	Data   []byte
	Lost   uint64     // Gap: tickets lost
	Reason LossReason // Gap: why
}

// Stats are a Reader's running totals. Once Read has returned Idle and no
// producer is running, Tickets + Lost == Head() - the start ticket.
type Stats struct {
	Records uint64 // records delivered
	Tickets uint64 // tickets delivered (the records' slots)
	Lost    uint64 // tickets lost, all reasons

	LostLapped    uint64
	LostTorn      uint64
	LostCorrupt   uint64
	LostAbandoned uint64
	LostShutdown  uint64

	// The ring buffer and perf buffer transports only.
	LostReserveFailed uint64
	LostOutputFailed  uint64
	LostPerfLost      uint64
	LostGaveUp        uint64
}

// Count adds n lost tickets of the given reason to s.
func (s *Stats) Count(reason LossReason, n uint64) {
	s.Lost += n
	switch reason {
	case Lapped:
		s.LostLapped += n
	case Torn:
		s.LostTorn += n
	case Corrupt:
		s.LostCorrupt += n
	case Abandoned:
		s.LostAbandoned += n
	case Shutdown:
		s.LostShutdown += n
	case ReserveFailed:
		s.LostReserveFailed += n
	case OutputFailed:
		s.LostOutputFailed += n
	case PerfLost:
		s.LostPerfLost += n
	case GaveUp:
		s.LostGaveUp += n
	}
}

// DefaultStuckAfter is how long a claimed ticket may stay unpublished before
// the reader gives up on it, unless StuckAfter says otherwise.
const DefaultStuckAfter = time.Second

// Option configures NewReader.
type Option func(*Reader)

// StartAt makes the reader start at ticket t instead of the head at creation.
func StartAt(t uint64) Option {
	return func(r *Reader) { r.start, r.startSet = t, true }
}

// StuckAfter sets how long a claimed, unpublished ticket is waited for before
// it is counted lost as Abandoned. d <= 0 waits forever.
func StuckAfter(d time.Duration) Option {
	return func(r *Reader) { r.stuckAfter = d }
}

// Clock replaces time.Now for the StuckAfter timing (tests).
func Clock(now func() time.Time) Option {
	return func(r *Reader) { r.now = now }
}

// Reader consumes the ring in ticket order. It is meant for one goroutine:
// only Head, Next, Backlog and Stats may be called from others.
type Reader struct {
	region
	margin     uint64 // resync this many tickets past the oldest slot in the ring
	start      uint64
	startSet   bool
	stuckAfter time.Duration
	now        func() time.Time

	// next is the next ticket to read, stored at the end of each Read (an
	// atomic store per record would cost a full barrier on amd64).
	next atomic.Uint64

	// Stuck-ticket timing: every ticket below waitHead was claimed no later
	// than waitSince. That stays true forever, so it survives progress.
	waiting   bool
	waitSince time.Time
	waitHead  uint64

	// The last loss ended at lossEnd with lossReason: a continuation slot
	// found right there is the tail of a record cut by that loss.
	lossEnd    uint64
	lossReason LossReason

	gap  Item     // lost tickets not yet handed out (while gap.Lost > 0)
	item Item     // what fn is given
	buf  []uint64 // the record being assembled, MaxRecord bytes
	bufb []byte   // buf as bytes

	records, tickets, lost atomic.Uint64
	lostBy                 [numReasons]atomic.Uint64

	hook func(stage hookStage, t uint64) // tests only
}

// hookStage names the points at which tests may interfere with a slot read
// (Reader) or a slot write (Producer).
type hookStage uint8

const (
	hookAfterFirstLoad hookStage = iota + 1 // reader: seq read t+1, nothing copied yet
	hookBeforeRecheck                       // reader: copied, seq not yet read again
	hookOwned                               // producer: slot owned ((t+1)|Writing), nothing stored yet
	hookFilled                              // producer: header and payload stored, not yet published
)

// NewReader returns a Reader over the mmap'd control block and slot array.
// ctl must be at least CtlSize bytes, slots a power-of-two number of SlotSize
// slots; both 8-byte aligned. By default the reader starts at the head as it is
// now: 0 for a fresh ring (the common case: the receiver creates the maps, then
// the reader, then attaches the producers), or, for a ring that producers have
// already written, the first ticket not yet claimed: what was written before
// the reader existed is not its to claim. StartAt overrides this.
func NewReader(ctl, slots []byte, opts ...Option) (*Reader, error) {
	g, err := newRegion(ctl, slots)
	if err != nil {
		return nil, err
	}
	r := &Reader{
		region:     g,
		margin:     max(1, g.size/16),
		stuckAfter: DefaultStuckAfter,
		now:        time.Now,
		buf:        make([]uint64, MaxRecord/8),
	}
	r.bufb = unsafe.Slice((*byte)(unsafe.Pointer(&r.buf[0])), MaxRecord)
	for _, o := range opts {
		o(r)
	}
	if !r.startSet {
		r.start = g.loadHead()
	}
	r.next.Store(r.start)
	r.lossEnd = r.start
	return r, nil
}

// Head is the number of tickets the producers have claimed (ring_ctl.head).
func (r *Reader) Head() uint64 { return r.loadHead() }

// Next is the next ticket the reader will look at.
func (r *Reader) Next() uint64 { return r.next.Load() }

// Start is the ticket the reader started at.
func (r *Reader) Start() uint64 { return r.start }

// Backlog is how many claimed tickets the reader has yet to read (head - next).
// More than the ring's size means the reader has been lapped.
func (r *Reader) Backlog() uint64 {
	n, h := r.next.Load(), r.loadHead()
	if h < n {
		return 0
	}
	return h - n
}

// Stats returns the running totals as of the end of the last Read (gaps are
// counted as they are handed to the callback).
func (r *Reader) Stats() Stats {
	return Stats{
		Records:       r.records.Load(),
		Tickets:       r.tickets.Load(),
		Lost:          r.lost.Load(),
		LostLapped:    r.lostBy[Lapped].Load(),
		LostTorn:      r.lostBy[Torn].Load(),
		LostCorrupt:   r.lostBy[Corrupt].Load(),
		LostAbandoned: r.lostBy[Abandoned].Load(),
		LostShutdown:  r.lostBy[Shutdown].Load(),
	}
}

// SetParked tells the producers that the reader is going to sleep and wants
// its doorbell rung (ring_ctl.parked = 1).
//
// It is one half of a Dekker handshake, so the reader must look again after
// setting it and sleep only if there is still nothing to do:
//
//	reader:   parked = 1; if Head() != Next() { ClearParked(); read } else { sleep }
//	producer: fetch-add head; ...; publish; if xchg(parked, 0) == 1 { ring }
//
// All four accesses are sequentially consistent (Go atomics; BPF fetch-add and
// xchg are full barriers), so either the reader's Head load sees the claim, or
// the producer's xchg, which comes after its claim, sees parked == 1 and rings.
// The producer rings after its publish, so a reader that also sleeps while
// Pending is woken when that ticket is published, provided it re-ran Read
// after SetParked; it should still sleep with a timeout (StuckAfter) in case
// the producer never publishes, or skipped the slot (Producer.Overrun).
func (r *Reader) SetParked() { atomic.StoreUint64(r.parked, 1) }

// ClearParked takes the doorbell request back (parked = 0) after waking or
// deciding not to sleep. It reports whether the request was still there; false
// means a producer took it and has rung, or will ring, the doorbell: expect
// one spurious wake-up.
func (r *Reader) ClearParked() bool { return atomic.SwapUint64(r.parked, 0) != 0 }

// slot read results.
type slotState uint8

const (
	slotOK      slotState = iota // published for the ticket and copied intact
	slotIdle                     // not published, and head <= ticket: nothing claimed
	slotPending                  // not published, but claimed: a producer is on it
	slotLapped                   // holds a newer ticket, or ticket+N is claimed
	slotTorn                     // changed while it was copied
)

// readSlot reads the slot of ticket t as slot i of a record: on slotOK its
// header is returned and its payload copied into r.buf at i*SlotPayload.
func (r *Reader) readSlot(t uint64, i int) (meta, slotState) {
	p := r.slot(t)
	seq := word(p, seqOffset)
	want := t + 1
	s1 := atomic.LoadUint64(seq)
	if s1 != want {
		if s1&^Writing > want {
			return meta{}, slotLapped
		}
		// Older ticket, never written, ours being written, or an older
		// one still being written (then t's producer skipped the slot).
		h := r.loadHead()
		if h <= t {
			return meta{}, slotIdle
		}
		if h-t > r.size {
			// Ticket t+N is claimed: the slot is no longer t's even if
			// t's producer has yet to publish (or never will).
			return meta{}, slotLapped
		}
		return meta{}, slotPending
	}
	if r.hook != nil {
		r.hook(hookAfterFirstLoad, t)
	}
	m := unpackMeta(atomic.LoadUint64(word(p, metaOffset)))
	// Copy the words of chunk i of an m.len-byte record. The header may be
	// garbage if the slot is being overwritten: clamp to the slot, and let
	// the second seq load throw the copy away.
	c := int(m.len) - i*SlotPayload
	c = min(max(c, 0), SlotPayload)
	dst := r.buf[i*slotWords : i*slotWords+(c+7)/8]
	src := unsafe.Add(p, SlotHeader)
	for k := range dst {
		// Atomic loads: each is ordered before the second seq load below
		// (acquire loads on arm64), and they do not race with the model
		// producer's atomic stores.
		dst[k] = atomic.LoadUint64(word(src, uintptr(k)*8))
	}
	if r.hook != nil {
		r.hook(hookBeforeRecheck, t)
	}
	if atomic.LoadUint64(seq) != s1 {
		return meta{}, slotTorn
	}
	return m, slotOK
}

// Read delivers up to limit records (limit <= 0: no limit) to fn, strictly in
// ticket order, with every run of lost tickets delivered as a Gap item where
// it is in the stream, before the next record; consecutive lost tickets with
// the same reason make one Gap. Gaps do not count toward limit. The Item and
// its Data are valid only during the call to fn. Read returns the number of
// records delivered and why it stopped.
func (r *Reader) Read(limit int, fn func(*Item)) (n int, st State) {
	var recs, tix uint64
	t := r.next.Load()
	for {
		m, s := r.readSlot(t, 0)
		switch s {
		case slotIdle:
			st = Idle
			goto out
		case slotPending:
			if !r.stuck(t) {
				st = Pending
				goto out
			}
			t = r.lose(t, 1, Abandoned, fn)
			continue
		case slotLapped, slotTorn:
			t = r.resync(t, t+1, reasonOf(s), fn)
			continue
		}
		if m.index != 0 {
			// A record's tail without its head: cut by a loss just before,
			// or the producer wrote nonsense.
			reason := Corrupt
			if r.lossEnd == t && r.lossReason != 0 {
				reason = r.lossReason
			}
			t = r.lose(t, 1, reason, fn)
			continue
		}
		ns := int(m.nslots)
		if ns < 1 || ns > MaxSlots || ns != SlotsFor(int(m.len)) {
			t = r.lose(t, 1, Corrupt, fn)
			continue
		}
		// Continuation slots. The producer claimed all of them before
		// publishing the first, so head >= t+ns here.
		ok := true
		for i := 1; i < ns && ok; i++ {
			u := t + uint64(i)
			mi, si := r.readSlot(u, i)
			switch si {
			case slotOK:
				if mi.index != uint16(i) || mi.len != m.len || mi.nslots != m.nslots {
					// Not this record's slot: lose the record so far,
					// look at u afresh.
					t, ok = r.lose(t, uint64(i), Corrupt, fn), false
				}
			case slotIdle: // head < t+ns: the first slot lied about nslots
				t, ok = r.lose(t, uint64(i), Corrupt, fn), false
			case slotPending:
				if !r.stuck(u) {
					st = Pending // retry the whole record from t later
					goto out
				}
				t, ok = r.lose(t, uint64(ns), Abandoned, fn), false
			case slotLapped, slotTorn:
				t, ok = r.resync(t, u+1, reasonOf(si), fn), false
			}
		}
		if !ok {
			continue
		}
		r.flushGap(fn)
		r.item = Item{Kind: Record, Ticket: t, Slots: ns, Data: r.bufb[:m.len]}
		if fn != nil {
			fn(&r.item)
		}
		t += uint64(ns)
		recs++
		tix += uint64(ns)
		n++
		if limit > 0 && n >= limit {
			st = Full
			goto out
		}
	}
out:
	r.flushGap(fn)
	r.item = Item{}
	if r.next.Swap(t) != t {
		// The producers shed low-priority events on head - tail. Stored only
		// when it moved: the line is the one producers read parked from.
		atomic.StoreUint64(r.tail, t)
	}
	if recs != 0 {
		r.records.Add(recs)
		r.tickets.Add(tix)
	}
	return n, st
}

func reasonOf(s slotState) LossReason {
	if s == slotTorn {
		return Torn
	}
	return Lapped
}

// stuck reports whether pending ticket u has been claimed for StuckAfter.
func (r *Reader) stuck(u uint64) bool {
	if r.stuckAfter <= 0 {
		return false
	}
	if r.waiting && u < r.waitHead {
		return r.now().Sub(r.waitSince) >= r.stuckAfter
	}
	// Start timing: head first, then the clock, so that every ticket below
	// waitHead was claimed no later than waitSince.
	r.waitHead = r.loadHead()
	r.waitSince = r.now()
	r.waiting = true
	return false
}

// Abandon gives up on every ticket from the reader's position to the current
// head — unread, or claimed and still being written — reporting them to fn as
// one Shutdown gap, and returns that head: afterwards delivered + lost ==
// head - Start() exactly. For a reader whose producers are detached.
func (r *Reader) Abandon(fn func(*Item)) (head uint64) {
	head = r.loadHead()
	if t := r.next.Load(); head > t {
		r.lose(t, head-t, Shutdown, fn)
	}
	r.flushGap(fn)
	r.next.Store(head)
	atomic.StoreUint64(r.tail, head)
	return head
}

// resync handles a lapped or torn slot met while reading the record at t:
// tickets from t up to max(floor, head - N + margin) are lost, and reading
// resumes there, margin slots past the oldest one the producers may still be
// about to overwrite. floor is past the bad slot, which is below head.
func (r *Reader) resync(t, floor uint64, reason LossReason, fn func(*Item)) uint64 {
	to := floor
	if h, back := r.loadHead(), r.size-r.margin; h >= back && h-back > to {
		to = h - back
	}
	return r.lose(t, to-t, reason, fn)
}

// lose counts tickets [t, t+n) lost, merging them into the pending gap when it
// ends at t with the same reason, and returns the next ticket to read.
func (r *Reader) lose(t, n uint64, reason LossReason, fn func(*Item)) uint64 {
	if r.gap.Lost != 0 && (r.gap.Reason != reason || r.gap.Ticket+r.gap.Lost != t) {
		r.flushGap(fn)
	}
	if r.gap.Lost == 0 {
		r.gap = Item{Kind: Gap, Ticket: t, Reason: reason}
	}
	r.gap.Lost += n
	t += n
	r.lossEnd, r.lossReason = t, reason
	return t
}

// flushGap hands the pending gap, if any, to fn and counts it.
func (r *Reader) flushGap(fn func(*Item)) {
	if r.gap.Lost == 0 {
		return
	}
	r.lostBy[r.gap.Reason].Add(r.gap.Lost)
	r.lost.Add(r.gap.Lost)
	r.item = r.gap
	r.gap = Item{}
	if fn != nil {
		fn(&r.item)
	}
}
