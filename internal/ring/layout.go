// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Sizes and offsets, mirroring bpf/ring/ring.h.
const (
	SlotSize    = 128                    // RING_SLOT_SIZE: bytes per slot
	SlotHeader  = 16                     // RING_SLOT_HDR: seq, len, nslots, index
	SlotPayload = SlotSize - SlotHeader  // RING_SLOT_PAYLOAD: record bytes per slot
	MaxSlots    = 42                     // RING_MAX_SLOTS: slots in the largest record
	MaxRecord   = MaxSlots * SlotPayload // RING_SCRATCH: bytes in the largest record

	// Writing is set in a slot's seq while its producer fills it.
	Writing uint64 = 1 << 63

	CtlSize      = 128 // sizeof(struct ring_ctl)
	HeadOffset   = 0   // ring_ctl.head: next ticket, tickets issued so far
	ParkedOffset = 64  // ring_ctl.parked: 1 while the reader sleeps
	TailOffset   = 72  // ring_ctl.tail: the reader's next ticket, for the producers' pressure check

	// TxHeader is what precedes a record in the ring buffer and perf
	// transports: sizeof(struct ring_tx_hdr), its first ticket.
	TxHeader = 8

	seqOffset  = 0 // ring_slot.seq
	metaOffset = 8 // ring_slot.len, nslots and index: one 8-byte word
	slotWords  = SlotPayload / 8
)

// meta is a slot header's second word: len u32 @8, nslots u16 @12, index u16 @14.
type meta struct {
	len    uint32
	nslots uint16
	index  uint16
}

// packMeta and unpackMeta convert between the header fields and the 8-byte
// word that holds them, in the host's byte order, as the BPF program stores them.
func packMeta(m meta) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint32(b[0:], m.len)
	binary.NativeEndian.PutUint16(b[4:], m.nslots)
	binary.NativeEndian.PutUint16(b[6:], m.index)
	return binary.NativeEndian.Uint64(b[:])
}

func unpackMeta(w uint64) meta {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], w)
	return meta{
		len:    binary.NativeEndian.Uint32(b[0:]),
		nslots: binary.NativeEndian.Uint16(b[4:]),
		index:  binary.NativeEndian.Uint16(b[6:]),
	}
}

// SlotsFor is the number of slots a record of n bytes takes: max(1, ceil(n/SlotPayload)).
func SlotsFor(n int) int {
	if n <= SlotPayload {
		return 1
	}
	return (n + SlotPayload - 1) / SlotPayload
}

// word returns the 8-byte word at p+off, for atomic access.
func word(p unsafe.Pointer, off uintptr) *uint64 {
	return (*uint64)(unsafe.Add(p, off))
}

// region is the validated shared memory both Reader and Producer work on.
type region struct {
	ctl, slots []byte // kept so the memory stays referenced
	head       *uint64
	parked     *uint64
	tail       *uint64        // written by the Reader: the producers' view of its position
	base       unsafe.Pointer // &slots[0]
	size       uint64         // N, slots in the ring
	mask       uint64         // N-1
}

func newRegion(ctl, slots []byte) (region, error) {
	if len(ctl) < CtlSize {
		return region{}, fmt.Errorf("ring: control block is %d bytes, need at least %d", len(ctl), CtlSize)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(ctl)))%8 != 0 {
		return region{}, errors.New("ring: control block is not 8-byte aligned")
	}
	if len(slots) == 0 {
		return region{}, errors.New("ring: slot array is empty")
	}
	if len(slots)%SlotSize != 0 {
		return region{}, fmt.Errorf("ring: slot array is %d bytes, not a multiple of the %d-byte slot", len(slots), SlotSize)
	}
	n := uint64(len(slots) / SlotSize)
	if n&(n-1) != 0 {
		return region{}, fmt.Errorf("ring: %d slots is not a power of two", n)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(slots)))%8 != 0 {
		return region{}, errors.New("ring: slot array is not 8-byte aligned")
	}
	cp := unsafe.Pointer(unsafe.SliceData(ctl))
	return region{
		ctl:    ctl,
		slots:  slots,
		head:   word(cp, HeadOffset),
		parked: word(cp, ParkedOffset),
		tail:   word(cp, TailOffset),
		base:   unsafe.Pointer(unsafe.SliceData(slots)),
		size:   n,
		mask:   n - 1,
	}, nil
}

// slot returns the address of the slot that holds ticket t.
func (g *region) slot(t uint64) unsafe.Pointer {
	return unsafe.Add(g.base, (t&g.mask)*SlotSize)
}

// loadHead reads ring_ctl.head.
func (g *region) loadHead() uint64 { return atomic.LoadUint64(g.head) }

// NewMemory allocates a zeroed control block and a ring of the given number of
// slots, both 8-byte aligned (they are backed by []uint64), for tests and
// benchmarks. It panics if slots is not positive.
func NewMemory(slots int) (ctl, ring []byte) {
	if slots <= 0 {
		panic("ring: NewMemory needs at least one slot")
	}
	return alignedBytes(CtlSize), alignedBytes(slots * SlotSize)
}

func alignedBytes(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}
