// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/otelcol-seq/otelcol-seq/internal/reorder"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
)

// How the ring buffer and perf readers wait and reorder.
const (
	// PerfWakeupEvents: the kernel wakes the perf reader after this many
	// records in one CPU's buffer; fewer are found by polling.
	PerfWakeupEvents = 16
	// perfPoll bounds a perf reader's Wait: records below the watermark wake nobody.
	perfPoll = 25 * time.Millisecond
	// ReorderWait is how long the ring buffer's reorder stage waits for a
	// missing ticket before giving up on it (also for tickets claimed whose
	// record never came).
	ReorderWait = 100 * time.Millisecond
	// PerfQuietGrace: the perf reorder stage waits for no clock while the
	// CPUs produce: it gives up on a ticket once every CPU's stream has gone
	// past it (reorder.Frontier). A CPU that has nothing to send passes it
	// when its buffer is found empty twice, this long apart, after the
	// ticket was claimed: longer than a producer takes between its ticket
	// and its output.
	PerfQuietGrace = 20 * time.Millisecond
)

// Records says what a buffer's records hold and how the tickets of the
// outputs that failed are learnt.
type Records struct {
	// Header: the bytes before a record's data: ring.TxHeader (struct
	// ring_tx_hdr, the record's first ticket), or 0 (RING_RB's records,
	// which the reader numbers).
	Header int
	// MinLen: the least data a record has.
	MinLen int
	// Trim, if set, cuts a record's data to its own lengths (perf pads).
	Trim func([]byte) []byte
	// Numbered: the producers claim no ticket numbers (RING_NO_FETCH); the
	// ring buffer's records, in the order the kernel reserved them, take
	// the tickets from 0 on, and the outputs the producers counted failed
	// take theirs as gaps where the reader learns of them.
	Numbered bool
	// Failed reads the producers' counters: tickets whose outputs failed,
	// and of those the perf outputs.
	Failed func() (total, perf uint64, err error)
	// FailReason: the reason of the gaps the producers counted (Failed).
	FailReason ring.LossReason
	// OnArrival, if set, sees every record as it is read (benchmark).
	OnArrival func(ticket uint64, data []byte)
}

// txRecord is a ring buffer or perf record in the reorder stage.
type txRecord struct {
	ticket, n uint64
	data      []byte
}

func (r txRecord) TicketSpan() (first, n uint64) { return r.ticket, r.n }

// Buf is the Source of a BPF ring buffer or of per-CPU perf buffers: it
// reads the records and puts them back in ticket order.
type Buf struct {
	ctl []byte // the mapped struct ring_ctl: the head at 0, the parked flag at 64
	rec Records
	rb  *ringbuf.Reader
	// rbRec, pRec: the record last read.
	rbRec ringbuf.Record
	pr    *perf.Reader
	pRec  perf.Record
	// stashed: Wait read a record; the next Read takes it first.
	stashed bool
	head    *uint64
	poll    time.Duration // longest Wait; 0: as asked

	ro       *reorder.Reorder[txRecord]
	q        []ring.Item // released, in order, not yet handed out
	qi       int
	fallback ring.LossReason // reason for gaps the producers did not count
	next     atomic.Uint64
	stats    ring.Stats

	failedUsed uint64 // producer-counted lost tickets attributed to gaps
	failedSeen uint64 // ... as of the last look at the counters
	perfLost   uint64 // samples the perf reader reported lost
	perfUsed   uint64 // ... attributed to gaps
	perfFailed uint64 // perf outputs the producers counted failed (the same losses, seen twice)

	waiting   bool // tickets missing below waitHead since waitSince, nothing held
	waitSince time.Time
	waitHead  uint64

	front *reorder.Frontier // perf: how far every CPU's stream has gone

	nextNum uint64 // Records.Numbered: the next record's ticket
}

// newBuf is a Buf over ctl, its reorder stage bounded by slots.
func newBuf(ctl []byte, slots int, rec Records) (*Buf, error) {
	if len(ctl) < ring.CtlSize {
		return nil, fmt.Errorf("control page of %d bytes, want %d", len(ctl), ring.CtlSize)
	}
	b := &Buf{ctl: ctl, rec: rec, head: (*uint64)(unsafe.Pointer(&ctl[0])), fallback: ring.GaveUp}
	b.ro = reorder.New[txRecord](0, max(1024, slots), ReorderWait)
	b.ro.DropLate = true
	b.ro.OnGap = b.gap
	return b, nil
}

// NewRingBuf reads the BPF ring buffer m, whose producers keep their head
// and parked flag in the struct ring_ctl mapped at ctl; its reorder stage
// holds max(1024, slots) records at most. Close releases the reader.
func NewRingBuf(m *ebpf.Map, ctl []byte, slots int, rec Records) (*Buf, error) {
	b, err := newBuf(ctl, slots, rec)
	if err != nil {
		return nil, err
	}
	if b.rb, err = ringbuf.NewReader(m); err != nil {
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	return b, nil
}

// NewPerf reads the perf event array m, sharing ringBytes out over the
// CPUs' buffers, for producers whose struct ring_ctl is mapped at ctl.
// Close releases the reader.
func NewPerf(m *ebpf.Map, ctl []byte, ringBytes int, rec Records) (*Buf, error) {
	b, err := newBuf(ctl, 0, rec)
	if err != nil {
		return nil, err
	}
	b.poll = perfPoll
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	// The ring's bytes shared out over the CPUs: a power-of-two number of
	// pages each, and never less than the largest record (a full exec)
	// with its headers, so that any record can fit.
	page := os.Getpagesize()
	per := page
	for per*2 <= ringBytes/max(1, n) || per < ring.MaxRecord+64 {
		per *= 2
	}
	b.pr, err = perf.NewReaderWithOptions(m, per, perf.ReaderOptions{WakeupEvents: PerfWakeupEvents})
	if err != nil {
		return nil, fmt.Errorf("open perf buffers: %w", err)
	}
	// No clock: a ticket is given up on when every CPU has passed it
	// (the frontier). The stage may have to hold what all the buffers
	// hold: the perf reader empties one CPU's buffer before the next. The
	// least a record takes in a perf buffer: the perf event header, the
	// sample's size, the record's header and its least data.
	b.ro.MaxWait = 0
	b.ro.MaxHeld = max(1024, per*n/(8+4+rec.Header+rec.MinLen))
	b.front = reorder.NewFrontier(n, PerfQuietGrace)
	b.front.Pass(0, time.Now())
	return b, nil
}

// Close releases the ring buffer or perf reader.
func (b *Buf) Close() error {
	if b.rb != nil {
		return b.rb.Close()
	}
	return b.pr.Close()
}

// BufStats are what a ring buffer or perf source saw besides its items
// (benchmark and diagnostics).
type BufStats struct {
	ReorderMaxHeld int    // most records the reorder stage held at once
	ReorderLate    uint64 // records that came after their tickets were given up on (dropped)
	PerfLost       uint64 // samples the kernel told the perf reader it lost
}

// BufStats returns the running totals; for the reading goroutine.
func (b *Buf) BufStats() BufStats {
	return BufStats{ReorderMaxHeld: b.ro.MaxSeen, ReorderLate: b.ro.Late, PerfLost: b.perfLost}
}

func (b *Buf) Head() uint64      { return atomic.LoadUint64(b.head) }
func (b *Buf) Next() uint64      { return b.next.Load() }
func (b *Buf) Start() uint64     { return 0 }
func (b *Buf) Stats() ring.Stats { return b.stats }
func (b *Buf) SetParked()        { atomic.StoreUint64(b.parked(), 1) }
func (b *Buf) ClearParked() bool { return atomic.SwapUint64(b.parked(), 0) != 0 }

func (b *Buf) parked() *uint64 { return (*uint64)(unsafe.Pointer(&b.ctl[64])) }

func (b *Buf) Interrupt() {
	if b.rb != nil {
		_ = b.rb.Flush()
	} else {
		_ = b.pr.Flush()
	}
}

func (b *Buf) setDeadline(t time.Time) {
	if b.rb != nil {
		b.rb.SetDeadline(t)
	} else {
		b.pr.SetDeadline(t)
	}
}

// readInto reads one record or perf loss report into b.rbRec or b.pRec.
func (b *Buf) readInto() error {
	if b.rb != nil {
		return b.rb.ReadInto(&b.rbRec)
	}
	err := b.pr.ReadInto(&b.pRec)
	switch {
	case err == nil:
		if b.pRec.Remaining == 0 {
			// This CPU's buffer is empty, as of a look during this pass.
			b.front.Drained(b.pRec.CPU)
		}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, perf.ErrFlushed):
		// The perf reader returns these only once it has emptied every
		// buffer, each as of a look after its last poll, which came after
		// this pass began. The next pass begins now: its looks come after
		// this head.
		b.front.DrainedAll()
		b.front.Pass(b.Head(), time.Now())
	}
	return err
}

// advance gives up on the tickets every CPU has passed (perf).
func (b *Buf) advance() {
	if f := b.front.Min(); f > b.ro.Next() {
		b.ro.GiveUpBelow(f, b.out)
	}
}

func (b *Buf) Wait(timeout time.Duration) (bool, error) {
	if b.poll > 0 {
		timeout = min(timeout, b.poll)
	}
	b.setDeadline(time.Now().Add(timeout))
	err := b.readInto()
	switch {
	case err == nil:
		b.stashed = true
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed), errors.Is(err, perf.ErrFlushed):
		return false, nil
	default:
		return false, err
	}
}

// readOne takes the next record from the buffer, without waiting, into the
// reorder stage. It returns false when there is none.
func (b *Buf) readOne(now time.Time) (bool, error) {
	if !b.stashed {
		if err := b.readInto(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, perf.ErrFlushed) {
				return false, nil
			}
			return false, err
		}
	}
	b.stashed = false
	var raw []byte
	if b.rb != nil {
		raw = b.rbRec.RawSample
	} else {
		if b.pRec.LostSamples > 0 {
			// The lost samples' tickets lie between this CPU's records
			// around the report: the frontier moves past them with the
			// CPU's next record, or when its buffer stays empty.
			b.perfLost += b.pRec.LostSamples
			b.advance()
			return true, nil
		}
		raw = b.pRec.RawSample
	}
	end, ok := b.push(raw, now)
	if b.front != nil {
		if ok {
			b.front.Seen(b.pRec.CPU, end)
		}
		if b.ro.Held() > 0 {
			b.advance()
		}
	}
	return true, nil
}

// push hands one raw record (Records.Header, then the data; perf may add
// up to 7 bytes of padding, which Records.Trim cuts) to the reorder stage. It returns the end of the record's tickets; ok is false
// for a record too short to have them.
func (b *Buf) push(raw []byte, now time.Time) (end uint64, ok bool) {
	if len(raw) < b.rec.Header+b.rec.MinLen {
		// No ticket to put it in place: nothing to deliver. Its tickets
		// are given up on as missing.
		return 0, false
	}
	var t uint64
	if b.rec.Numbered {
		t = b.nextNum
	} else {
		t = binary.LittleEndian.Uint64(raw)
	}
	data := raw[b.rec.Header:]
	if b.rec.Trim != nil {
		data = b.rec.Trim(data)
	}
	if b.rec.OnArrival != nil {
		b.rec.OnArrival(t, data)
	}
	rec := txRecord{ticket: t, n: uint64(ring.SlotsFor(len(data))), data: data}
	if b.rec.Numbered {
		// In order by construction: no stage to hold it in.
		b.nextNum += rec.n
		b.out(rec)
		return b.nextNum, true
	}
	if t != b.ro.Next() || b.ro.Held() > 0 {
		// It may be held: the reader's buffer is reused by the next read.
		rec.data = append([]byte(nil), data...)
	}
	b.ro.Push(rec, now, b.out)
	return t + rec.n, true
}

// out queues a record the reorder stage released.
func (b *Buf) out(r txRecord) {
	b.q = append(b.q, ring.Item{Kind: ring.Record, Ticket: r.ticket, Slots: int(r.n), Data: r.data})
}

// gap queues a run of tickets the reorder stage gave up on, split by reason:
// first those the producers counted lost (their outputs failed), then perf
// samples the kernel reported lost, the rest with the fallback reason.
func (b *Buf) gap(first, n uint64) {
	if b.failedSeen-b.failedUsed < n {
		if total, perf, err := b.rec.Failed(); err == nil {
			b.failedSeen, b.perfFailed = total, perf
		}
	}
	if k := min(n, b.failedSeen-b.failedUsed); k > 0 {
		b.queueGap(first, k, b.rec.FailReason)
		b.failedUsed += k
		first, n = first+k, n-k
	}
	if n > 0 && b.perfLost > b.perfFailed+b.perfUsed {
		b.perfUsed++
		b.queueGap(first, n, ring.PerfLost)
		return
	}
	if n > 0 {
		b.queueGap(first, n, b.fallback)
	}
}

func (b *Buf) queueGap(first, n uint64, reason ring.LossReason) {
	if k := len(b.q); k > b.qi && b.q[k-1].Kind == ring.Gap && b.q[k-1].Reason == reason && b.q[k-1].Ticket+b.q[k-1].Lost == first {
		b.q[k-1].Lost += n
		return
	}
	b.q = append(b.q, ring.Item{Kind: ring.Gap, Ticket: first, Lost: n, Reason: reason})
}

// drain hands the queued items to fn, up to limit records in all (n so far).
func (b *Buf) drain(limit int, n *int, fn func(*ring.Item)) bool {
	for b.qi < len(b.q) {
		it := &b.q[b.qi]
		if it.Kind == ring.Record {
			if limit > 0 && *n >= limit {
				return false
			}
			*n++
			b.stats.Records++
			b.stats.Tickets += uint64(it.Slots)
			b.next.Store(it.Ticket + uint64(it.Slots))
		} else {
			b.stats.Count(it.Reason, it.Lost)
			b.next.Store(it.Ticket + it.Lost)
		}
		b.qi++
		if fn != nil {
			fn(it)
		}
	}
	clear(b.q)
	b.q, b.qi = b.q[:0], 0
	return true
}

func (b *Buf) Read(limit int, fn func(*ring.Item)) (n int, st ring.State) {
	b.setDeadline(time.Unix(0, 1)) // reads below never wait
	now := time.Now()
	for {
		if !b.drain(limit, &n, fn) {
			return n, ring.Full
		}
		got, err := b.readOne(now)
		if err != nil {
			return n, ring.Idle
		}
		if got {
			continue
		}
		// Nothing left in the buffer: the bounds.
		now = time.Now()
		if b.rec.Numbered {
			b.numberFailed()
		} else if b.front != nil {
			b.advance()
		} else {
			b.ro.Tick(now, b.out)
			b.stuck(now)
		}
		if len(b.q) == b.qi {
			break
		}
	}
	next := b.ro.Next()
	if b.rec.Numbered {
		next = b.nextNum
	}
	if b.ro.Held() == 0 && next >= b.Head() {
		return n, ring.Idle
	}
	return n, ring.Pending
}

// numberFailed gives the outputs the producers counted failed since the
// last look their tickets, as a gap at the reader's place (numbered): the
// ring buffer holds no trace of them, so where they fell among the records
// read is known only to a CPU's span. Looked at only while the head is
// ahead of what was read, which is when a failure is there to find.
func (b *Buf) numberFailed() {
	if b.Head() <= b.nextNum {
		return
	}
	total, _, err := b.rec.Failed()
	if err != nil {
		return
	}
	b.failedSeen = total
	if k := b.failedSeen - b.failedUsed; k > 0 {
		b.queueGap(b.nextNum, k, b.rec.FailReason)
		b.failedUsed += k
		b.nextNum += k
	}
}

// stuck gives up on tickets claimed but missing for ReorderWait while the
// stage holds nothing (their records never came: the output failed, or
// the record is later than the stage's bounds allow).
func (b *Buf) stuck(now time.Time) {
	next := b.ro.Next()
	if b.ro.Held() > 0 {
		b.waiting = false
		return
	}
	if !b.waiting || next >= b.waitHead {
		if h := b.Head(); h > next {
			b.waitHead, b.waitSince, b.waiting = h, now, true
		} else {
			b.waiting = false
		}
		return
	}
	if now.Sub(b.waitSince) >= ReorderWait {
		b.ro.SkipTo(b.waitHead)
		b.waiting = false
	}
}

func (b *Buf) Abandon(fn func(*ring.Item)) uint64 {
	b.fallback = ring.Shutdown
	head := b.Head()
	n := 0
	b.drain(0, &n, fn)
	if b.rec.Numbered {
		b.numberFailed()
		if head > b.nextNum {
			b.queueGap(b.nextNum, head-b.nextNum, ring.Shutdown)
			b.nextNum = head
		}
		b.drain(0, &n, fn)
		b.fallback = ring.GaveUp
		return head
	}
	b.ro.FlushTo(head, b.out)
	b.drain(0, &n, fn)
	b.fallback = ring.GaveUp
	return head
}
