// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package ring is the userspace side of the sequencer's shared ring: the
// consumer protocol over the two memory regions that the BPF producers write,
// and a Go model of those producers for tests and benchmarks.
//
// # Wire format
//
// The format is defined in C by bpf/ring/ring.h; this package mirrors it byte for
// byte (the tests check the constants against the header). There are two
// regions, both BPF_F_MMAPABLE array maps mmap'd by userspace:
//
//   - the control block (struct ring_ctl, [CtlSize] bytes): head, the next
//     ticket to issue (= tickets issued so far), at [HeadOffset], alone in its
//     cache line; parked, the reader's doorbell request, at [ParkedOffset];
//   - the slot array (struct ring_slot[N], N a power of two): [SlotSize]-byte
//     slots, each a [SlotHeader]-byte header (seq u64, len u32, nslots u16,
//     index u16) followed by [SlotPayload] payload bytes. Ticket t lives in
//     slot t & (N-1).
//
// All fields are in the host's byte order (BPF programs store natively); on
// the little-endian machines the sequencer runs on, that is little-endian.
//
// # Producer protocol
//
// A record of len bytes takes n = max(1, ceil(len/SlotPayload)) slots, at most
// [MaxSlots]. The producer claims tickets t0..t0+n-1 with one atomic fetch-add
// of n on head, then for each slot i, ticket t = t0+i:
//
//  1. own: load seq; if [Writing] is set or seq > t (the slot holds ticket t
//     or newer), skip the slot; otherwise one compare-and-swap from that value
//     to (t+1)|[Writing], and skip the slot if it fails;
//  2. store len, nslots = n, index = i and payload chunk i;
//  3. publish: xchg(seq, t+1), always last.
//
// A skipped slot is counted in ring_stats.overrun and the producer carries on
// with the record's next slot. It then swaps parked to 0 and, if it was 1,
// rings the reader's doorbell. [Producer] is a Go model of exactly this
// (ring_own and ring_commit in bpf/ring/producer.h), [Producer.Overrun] its overrun.
//
// # Reader protocol
//
// A slot holds ticket t only if its seq reads t+1 both before and after the
// reader copies it (a seqlock read). Every shared access is an atomic 8-byte
// load, the payload included: atomic loads are ordered among themselves (on
// arm64 LDAR is an acquire), so the second seq load cannot be satisfied before
// the data loads, and the race detector sees no race against the Go producer
// model, which stores atomically too. The BPF producer's compare-and-swap and
// xchg are full barriers, which order its plain data stores between its two
// seq writes.
//
// A slot that shows a newer ticket means the producers have lapped the reader:
// the reader counts every ticket from where it was up to a resync point near
// the oldest intact slot as lost and carries on from there. Nothing is ever
// delivered twice or out of order, and every ticket below head is either
// delivered (inside a record) or reported lost, exactly once, as a [Gap] item
// placed where the lost tickets were in the stream.
//
// # Users
//
// A [Reader] is meant for one goroutine: the transport that creates and mmaps
// the BPF maps (and nothing else should hold it), plus this package's tests.
// [Producer] and [NewMemory] exist for tests and benchmarks, in this package
// and in the packages built on it; the real producers are the BPF programs.
// Beside it, the parts that touch the kernel: internal/ring/ringmap maps a
// loaded ring's BPF maps (the control block, the slots, the doorbell), and
// internal/ring/transport reads the ring, or a ring buffer or perf buffers,
// as a source of records in ticket order.
//
// # Stalled producers
//
// A slot's seq only grows (ignoring [Writing]), and only the producer that
// owns a slot, having marked it [Writing] with its compare-and-swap, stores
// into it or changes its seq until it publishes. So a producer that stalls
// mid-write (NMI, vCPU preemption, or a preempted goroutine in the model) for
// a full lap of the ring keeps its slot: the producer of the ticket a lap
// later cannot own it and skips it, instead of publishing a newer record there
// that the stalled producer's late stores would then mix their bytes into. The
// stalled producer writes only into its own, still unpublished slot, and
// cannot clobber a newer record either: every slot the reader accepts holds
// the bytes of exactly the producer that claimed its ticket, and a record's
// slots, all claimed by one fetch-add, those of one Write.
//
// The ticket of a skipped slot is never published. The reader sees it pending
// and loses it, with the rest of its record: as [Lapped] once ticket t+N is
// claimed (N the ring's size), or as [Abandoned] after [StuckAfter] if the ring
// is too quiet for that. Records after it are delivered as usual.
package ring
