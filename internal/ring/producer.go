// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Producer is a Go model of the BPF producer (ring_commit in bpf/seq/seq.bpf.c),
// for tests and benchmarks: it writes records into the ring with exactly the
// BPF protocol, using Go atomics where the BPF program uses atomic
// instructions (fetch-add: atomic.AddUint64; cmpxchg:
// atomic.CompareAndSwapUint64; xchg: atomic.SwapUint64) and, where the BPF
// program stores plain bytes, atomic 8-byte stores, so that the race detector
// can check the reader against it. It is safe for concurrent use by any number
// of goroutines, as the BPF program runs on many CPUs at once.
type Producer struct {
	region

	// Doorbell, if set, is called by the Write that finds the reader parked
	// (and clears parked). Set it before the first Write.
	Doorbell func()

	overrun atomic.Uint64

	hook func(stage hookStage, t uint64) // tests only; set before the first Write
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

// Overrun counts the slots Write skipped because it could not own them (the
// BPF program's ring_stats.overrun): a producer a lap behind was still writing
// the slot, or a newer ticket was already there. The reader counts a skipped
// slot's ticket, and so its whole record, lost.
func (p *Producer) Overrun() uint64 { return p.overrun.Load() }

// Write writes rec as one record and returns its first ticket. It panics if
// rec is longer than MaxRecord (the BPF program truncates instead).
func (p *Producer) Write(rec []byte) (ticket uint64) {
	n := SlotsFor(len(rec))
	if n > MaxSlots {
		panic(fmt.Sprintf("ring: %d-byte record is longer than %d", len(rec), MaxRecord))
	}
	// 1. Claim n tickets with one fetch-add on head.
	t0 := atomic.AddUint64(p.head, uint64(n)) - uint64(n)
	// 2. Own, fill and publish each slot; skip (and count) the ones it
	// cannot own, and carry on with the rest of the record, so that the
	// reader never waits on its other tickets for nothing.
	m := meta{len: uint32(len(rec)), nslots: uint16(n)}
	for i := range n {
		m.index = uint16(i)
		p.writeSlot(t0+uint64(i), m, rec[i*SlotPayload:min(len(rec), (i+1)*SlotPayload)])
	}
	// 3. Ring the doorbell if the reader is parked. The load only avoids a
	// locked write to a shared line on every record; the swap decides.
	if atomic.LoadUint64(p.parked) != 0 && atomic.SwapUint64(p.parked, 0) != 0 && p.Doorbell != nil {
		p.Doorbell()
	}
	return t0
}

// writeSlot writes slot t with header m and payload chunk (<= SlotPayload
// bytes), if it can own it; otherwise it counts the slot in Overrun.
func (p *Producer) writeSlot(t uint64, m meta, chunk []byte) {
	s := p.slot(t)
	seq := word(s, seqOffset)
	if !own(seq, t) {
		p.overrun.Add(1)
		return
	}
	if p.hook != nil {
		p.hook(hookOwned, t)
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
	if p.hook != nil {
		p.hook(hookFilled, t)
	}
	// Publish, always last. Only the owner changes a seq marked Writing.
	atomic.SwapUint64(seq, t+1)
}

// own takes slot seq for ticket t, as ring_own in bpf/seq/seq.bpf.c: only if no one
// is writing it and it holds an older ticket (or none), with one
// compare-and-swap from the value seen to (t+1)|Writing. Once marked, no other
// producer can own the slot until its owner publishes, and a slot's ticket
// only grows, so the compare-and-swap cannot succeed on a stale value (no ABA).
func own(seq *uint64, t uint64) bool {
	old := atomic.LoadUint64(seq)
	if old&Writing != 0 || old > t {
		return false // being written (by a stalled older producer), or a newer ticket is there
	}
	return atomic.CompareAndSwapUint64(seq, old, (t+1)|Writing)
}
