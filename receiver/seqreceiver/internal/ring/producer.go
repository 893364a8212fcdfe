package ring

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Producer is a Go model of the BPF producer in bpf/seq.h, for tests and
// benchmarks: it writes records into the ring with exactly the BPF protocol,
// using Go atomics where the BPF program uses atomic instructions (fetch-add:
// atomic.AddUint64; xchg: atomic.SwapUint64) and, where the BPF program
// stores plain bytes, atomic 8-byte stores, so that the race detector can
// check the reader against it. It is safe for concurrent use by any number of
// goroutines, as the BPF program runs on many CPUs at once.
type Producer struct {
	region

	// Doorbell, if set, is called by the Write that finds the reader parked
	// (and clears parked). Set it before the first Write.
	Doorbell func()

	// Exclusive selects the slot-ownership variant of the protocol instead
	// of seq.h's, to model the proposed fix for seq.h's overlapping writers
	// (see the package's Known limitation). A producer takes a slot only if
	// no one is writing it and it holds an older ticket, with a
	// compare-and-swap from the value it saw; otherwise it drops the rest of
	// the record, whose tickets the reader will then count lost. Set it
	// before the first Write.
	Exclusive bool

	overlaps atomic.Uint64
	dropped  atomic.Uint64
}

// NewProducer returns a Producer over a control block and slot array with
// the sizes and alignment NewReader wants.
func NewProducer(ctl, slots []byte) (*Producer, error) {
	g, err := newRegion(ctl, slots)
	if err != nil {
		return nil, err
	}
	return &Producer{region: g}, nil
}

// Overlaps counts slots that another producer wrote into while this one
// did (seq.h protocol only): its first xchg found the slot being written, or
// its publish xchg found someone else's value. A record in such a slot may be
// corrupt without the reader being able to tell.
func (p *Producer) Overlaps() uint64 { return p.overlaps.Load() }

// Dropped counts slots left unwritten (Exclusive only) because another
// producer owned them or a newer ticket was already there.
func (p *Producer) Dropped() uint64 { return p.dropped.Load() }

// Write writes rec as one record and returns its first ticket. It panics if
// rec is longer than MaxRecord (the BPF program truncates instead).
func (p *Producer) Write(rec []byte) (ticket uint64) {
	n := SlotsFor(len(rec))
	if n > MaxSlots {
		panic(fmt.Sprintf("ring: %d-byte record is longer than %d", len(rec), MaxRecord))
	}
	// 1. Claim n tickets with one fetch-add on head.
	t0 := atomic.AddUint64(p.head, uint64(n)) - uint64(n)
	// 2. Fill and publish each slot.
	m := meta{len: uint32(len(rec)), nslots: uint16(n)}
	for i := range n {
		m.index = uint16(i)
		if !p.writeSlot(t0+uint64(i), m, rec[i*SlotPayload:min(len(rec), (i+1)*SlotPayload)]) {
			break
		}
	}
	// 3. Ring the doorbell if the reader is parked. The load only avoids a
	// locked write to a shared line on every record; the swap decides.
	if atomic.LoadUint64(p.parked) != 0 && atomic.SwapUint64(p.parked, 0) != 0 && p.Doorbell != nil {
		p.Doorbell()
	}
	return t0
}

// writeSlot writes slot t with header m and payload chunk (<= SlotPayload
// bytes). It reports false if it dropped the slot (Exclusive only).
func (p *Producer) writeSlot(t uint64, m meta, chunk []byte) bool {
	s := p.slot(t)
	seq := word(s, seqOffset)
	writing := (t + 1) | Writing
	if p.Exclusive {
		if !p.own(seq, t) {
			p.dropped.Add(1)
			return false
		}
	} else if old := atomic.SwapUint64(seq, writing); old&Writing != 0 {
		// Mark the slot being written: a reader in the middle of a copy
		// sees seq change. Finding it already being written means an
		// older producer is still at it (or a newer one, if we are late).
		p.overlaps.Add(1)
	}
	atomic.StoreUint64(word(s, metaOffset), packMeta(m))
	data := unsafe.Add(s, SlotHeader)
	k := 0
	for ; k+8 <= len(chunk); k += 8 {
		atomic.StoreUint64(word(data, uintptr(k)), binary.NativeEndian.Uint64(chunk[k:]))
	}
	if k < len(chunk) {
		var last [8]byte // zero padding after the record's last byte
		copy(last[:], chunk[k:])
		atomic.StoreUint64(word(data, uintptr(k)), binary.NativeEndian.Uint64(last[:]))
	}
	// Publish, always last.
	if old := atomic.SwapUint64(seq, t+1); old != writing {
		p.overlaps.Add(1)
	}
	return true
}

// own takes slot seq for ticket t (Exclusive): only from a published or
// never-written older ticket, with a compare-and-swap, a few tries at most
// as a BPF program would.
func (p *Producer) own(seq *uint64, t uint64) bool {
	for range 4 {
		old := atomic.LoadUint64(seq)
		if old&Writing != 0 || old > t {
			return false // someone is writing it, or a newer ticket is there
		}
		if atomic.CompareAndSwapUint64(seq, old, (t+1)|Writing) {
			return true
		}
	}
	return false
}
