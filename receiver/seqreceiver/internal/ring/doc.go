// Package ring is the userspace side of the sequencer's shared ring: the
// consumer protocol over the two memory regions that the BPF producers write,
// and a Go model of those producers for tests and benchmarks.
//
// # Wire format
//
// The format is defined in C by bpf/seq.h; this package mirrors it byte for
// byte (the tests check the constants against the header). There are two
// regions, both BPF_F_MMAPABLE array maps mmap'd by userspace:
//
//   - the control block (struct seq_ctl, [CtlSize] bytes): head, the next
//     ticket to issue (= tickets issued so far), at [HeadOffset], alone in its
//     cache line; parked, the reader's doorbell request, at [ParkedOffset];
//   - the slot array (struct seq_slot[N], N a power of two): [SlotSize]-byte
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
// of n on head, then for each slot i: xchg(seq, (t0+i+1)|[Writing]); store len,
// nslots = n, index = i and payload chunk i; xchg(seq, t0+i+1), the publish,
// always last. It then swaps parked to 0 and, if it was 1, rings the reader's
// doorbell. [Producer] is a Go model of exactly this.
//
// # Reader protocol
//
// A slot holds ticket t only if its seq reads t+1 both before and after the
// reader copies it (a seqlock read). Every shared access is an atomic 8-byte
// load, the payload included: atomic loads are ordered among themselves (on
// arm64 LDAR is an acquire), so the second seq load cannot be satisfied before
// the data loads, and the race detector sees no race against the Go producer
// model, which stores atomically too. The BPF producer's xchg operations are
// full barriers, which order its plain data stores between its two seq writes.
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
//
// # Known limitation
//
// The seqlock detects a writer that starts after the reader's first seq load,
// but not one that started before it: a producer that stalls for a full lap of
// the ring between its first xchg and its last data store writes into a slot
// that a newer ticket has already published (and its first xchg may also
// clobber a newer published record), and a reader that copies the slot during
// those stores, before the stalled producer publishes, accepts the mixed bytes
// (TestKnownLimitationLaggingWriter). Goroutine producers, which are preempted
// mid-write, hit this in TestConcurrentProducersLapping; BPF producers only if
// a CPU stalls (NMI, vCPU preemption) for as long as the ring takes to lap.
// Size the ring accordingly, or give producers exclusive slot ownership as
// [Producer.Exclusive] models: take a slot with a compare-and-swap only from
// an older, not-being-written seq, and drop the record otherwise.
package ring
