/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The ring's producer side, shared by every BPF object that writes into a
 * ring (seq/seq.bpf.c, h2/h2.bpf.c): the maps, slot ownership, the commit of
 * a staged record and the doorbell. See ring.h for the protocol.
 * Include after vmlinux.h, bpf_helpers.h and ring/ring.h.
 */
#ifndef RING_PRODUCER_H
#define RING_PRODUCER_H

/* Set by the loader: slots - 1. */
volatile const __u64 ring_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_ctl);
} ring_control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 65536); /* replaced by the loader: the configured ring size */
	__type(key, __u32);
	__type(value, struct ring_slot);
} ring_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_stats);
} ring_counters SEC(".maps");

struct ring_scratch {
	__u8 buf[RING_SCRATCH];
} __attribute__((aligned(8)));

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ring_scratch);
} ring_scratchbuf SEC(".maps");

/* The doorbell: one 8-byte record wakes a parked reader; never one per event. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} ring_doorbell SEC(".maps");

static __always_inline void ring_wake_reader(struct ring_ctl *ctl, struct ring_stats *st)
{
	__u64 one = 1;

	/* A plain read first: the flag's cache line stays shared while the reader is awake. */
	if (!*(volatile __u64 *)&ctl->parked)
		return;
	/* Only the producer that takes the flag rings; the others see 0. */
	if (!__sync_lock_test_and_set(&ctl->parked, 0))
		return;
	if (bpf_ringbuf_output(&ring_doorbell, &one, sizeof(one), BPF_RB_FORCE_WAKEUP))
		st->doorbell_failed++;
	else
		st->doorbells++;
}

/* Copies payload chunk i of the staged record into a slot, eight bytes at a time. */
static __always_inline void ring_copy_payload(struct ring_slot *s, struct ring_scratch *rec, __u32 i)
{
	__u64 *dst = (__u64 *)s->data;
	__u64 *src = (__u64 *)&rec->buf[i * RING_SLOT_PAYLOAD];

#pragma unroll
	for (int j = 0; j < RING_SLOT_PAYLOAD / 8; j++)
		dst[j] = src[j];
}

/*
 * Takes slot s for ticket t: only from a published or never-written older
 * ticket, with a compare-and-swap from the value seen. A producer that stalls
 * mid-write (NMI, vCPU preemption) keeps the slot marked "being written", so a
 * producer a lap later cannot write into it, and the stalled one, having
 * owned the slot, cannot spoil a newer record: a reader never sees two
 * writers' bytes mixed under one ticket.
 */
static __always_inline bool ring_own(struct ring_slot *s, __u64 t)
{
	__u64 old = *(volatile __u64 *)&s->seq;

	if (old & RING_WRITING || old > t)
		return false;
	return __sync_val_compare_and_swap(&s->seq, old, (t + 1) | RING_WRITING) == old;
}

/* The tickets (slots) a record of len bytes takes: 1..RING_MAX_SLOTS. */
static __always_inline __u32 ring_slots_for(__u32 len)
{
	__u32 n = (len + RING_SLOT_PAYLOAD - 1) / RING_SLOT_PAYLOAD;

	if (n == 0)
		n = 1;
	if (n > RING_MAX_SLOTS)
		n = RING_MAX_SLOTS;
	return n;
}

#ifdef RING_RB
/*
 * RING_RB: for kernels without BPF atomic fetch, exchange and
 * compare-and-exchange (before Linux 5.12), where a producer cannot learn
 * the ticket it claims nor take a slot. The staged record goes whole into
 * this BPF ring buffer (Linux 5.8+) instead of the slots; its tickets are
 * counted in ring_ctl.head with a plain atomic add (BPF_XADD, which every
 * kernel with BPF takes), as many as the slots would take. The ring buffer
 * serialises reservations, so the reader numbers the records in ring order,
 * and the tickets of every failed output (output_failed, per CPU) as a gap.
 * Wake-ups are the kernel's own (flags 0): no doorbell, which needs the
 * exchange. The loader sizes it (max_entries).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} ring_rb SEC(".maps");

static __always_inline void ring_commit(struct ring_scratch *rec, __u32 len, __u16 type)
{
	__u32 zero = 0;
	struct ring_ctl *ctl;
	struct ring_stats *st;
	__u64 size;
	__u32 n;

	ctl = bpf_map_lookup_elem(&ring_control, &zero);
	st = bpf_map_lookup_elem(&ring_counters, &zero);
	if (!ctl || !st)
		return;
	n = ring_slots_for(len);
	size = len;
	/* 1..RING_SCRATCH, clamped in the register that is passed: clang
	 * otherwise compares a copy, and the verifier sees no bound. */
	asm volatile("if %0 <= %1 goto +1; %0 = %1;" : "+r"(size) : "i"(RING_SCRATCH));
	asm volatile("if %0 != 0 goto +1; %0 = 1;" : "+r"(size));
	/* The result unused: a plain atomic add, no fetch. */
	__sync_fetch_and_add(&ctl->head, n);
	if (bpf_ringbuf_output(&ring_rb, rec->buf, size, 0))
		st->output_failed += n;
	if (type < RING_TYPES) {
		st->events[type]++;
		st->tickets[type] += n;
	}
}
#else
/* Claims the tickets for a staged record of len bytes and publishes it slot by slot. */
static __always_inline void ring_commit(struct ring_scratch *rec, __u32 len, __u16 type)
{
	__u32 zero = 0;
	struct ring_ctl *ctl;
	struct ring_stats *st;
	__u32 n, i;
	__u64 t0;

	ctl = bpf_map_lookup_elem(&ring_control, &zero);
	st = bpf_map_lookup_elem(&ring_counters, &zero);
	if (!ctl || !st)
		return;
	n = ring_slots_for(len);
	/* Hide n's bound from clang so that it keeps the i < RING_MAX_SLOTS test the verifier needs. */
	asm volatile("" : "+r"(n));

	t0 = __sync_fetch_and_add(&ctl->head, n);

	for (i = 0; i < RING_MAX_SLOTS; i++) {
		struct ring_slot *s;
		__u64 t = t0 + i;
		__u32 idx;

		if (i >= n)
			break;
		idx = t & ring_mask;
		s = bpf_map_lookup_elem(&ring_slots, &idx);
		if (!s) {
			/* Cannot happen for idx < max_entries; the reader counts the ticket lost. */
			st->no_slot++;
			continue;
		}
		if (!ring_own(s, t)) {
			/* A stalled older writer holds the slot, or a newer ticket is already
			 * there: the ring was lapped. Skip it; the reader counts it lost. */
			st->overrun++;
			continue;
		}
		s->len = len;
		s->nslots = n;
		s->index = i;
		ring_copy_payload(s, rec, i);
		__sync_lock_test_and_set(&s->seq, t + 1);
	}

	if (type < RING_TYPES) {
		st->events[type]++;
		st->tickets[type] += n;
	}
	ring_wake_reader(ctl, st);
}
#endif /* RING_RB */

static __always_inline struct ring_scratch *ring_stage(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ring_scratchbuf, &zero);
}

#endif
