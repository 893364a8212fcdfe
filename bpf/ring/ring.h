/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring protocol: the wire format every producer shares (bpf/seq/ for the
 * seq receiver, bpf/h2/ for the grpc receiver), described again, byte for
 * byte, in Go (internal/ring). Change one, change the other: the Go tests
 * check the sizes below. producer.h is its BPF side (the maps, the commit,
 * the doorbell); what a record holds is each producer's own (seq/seq.h,
 * h2/h2.h).
 *
 * Ring: a BPF_F_MMAPABLE array of RING_SLOT_SIZE-byte slots, a power of two of them.
 * Ticket t lives in slot t & (slots-1). A producer
 *   1. claims n tickets with one atomic fetch-add on ring_ctl.head,
 *   2. for each of its slots: takes it with cmpxchg(seq, old, (t+1) | RING_WRITING),
 *      only if old is not being written and holds an older ticket (otherwise
 *      the slot is skipped and counted in ring_stats.overrun), fills the slot,
 *      then xchg(seq, t+1) — the publish, always last.
 * A reader accepts slot t only if seq == t+1 both before and after copying it.
 * Owning the slot with the compare-and-swap means a producer that stalls
 * mid-write can neither be overwritten by one a lap later nor spoil its record.
 *
 * A record (one event) is `len` bytes split over `nslots` consecutive tickets,
 * RING_SLOT_PAYLOAD bytes per slot; every slot of a record carries the same len
 * and nslots, and its own index (0 for the first).
 *
 * The protocol's maps and variable are named ring_* (ring_control,
 * ring_slots, ring_counters, ring_scratchbuf, ring_doorbell, RING_RB's
 * ring_rb; ring_mask): the names the loaders look up and bpftool shows. A
 * producer's own maps carry its prefix (seq_*, h2_*).
 */
#ifndef RING_H
#define RING_H

#define RING_SLOT_SIZE 128
#define RING_SLOT_HDR 16
#define RING_SLOT_PAYLOAD (RING_SLOT_SIZE - RING_SLOT_HDR)
#define RING_WRITING (1ULL << 63)

/* Largest record: seq's (its fixed event, a filename and argv: seq/seq.h). */
#define RING_MAX_SLOTS 42 /* ceil((96 + 256 + 4096) / 112) = 40, rounded up */
#define RING_SCRATCH (RING_MAX_SLOTS * RING_SLOT_PAYLOAD)

/* Record types the counters keep apart (a producer's types are 1..7). */
#define RING_TYPES 8

struct ring_slot {
	__u64 seq;    /* 0: never written; t+1: ticket t published; (t+1)|RING_WRITING: being written */
	__u32 len;    /* record length in bytes */
	__u16 nslots; /* slots (tickets) in the record */
	__u16 index;  /* this slot's place in the record, 0 for the first */
	__u8 data[RING_SLOT_PAYLOAD];
};

/* ring_control (map of one struct ring_ctl): mmapable; the ticket counter alone in its cache line. */
struct ring_ctl {
	__u64 head;    /* next ticket: tickets issued so far */
	__u64 _pad0[7];
	__u64 parked;  /* 1 while the reader sleeps; the producer that swaps it to 0 rings the doorbell */
	__u64 tail;    /* the reader's next ticket (sequencer): head - tail is the backlog */
	__u64 _pad1[6];
};

/* ring_counters (map): one per-CPU struct ring_stats. */
struct ring_stats {
	__u64 events[RING_TYPES];  /* records produced (ticketed), by type */
	__u64 tickets[RING_TYPES]; /* tickets claimed, by type */
	__u64 no_slot;             /* a claimed slot the program could not look up (never expected) */
	__u64 doorbells;           /* wake-ups sent to a parked reader */
	__u64 doorbell_failed;     /* wake-ups that found the doorbell ring full */
	__u64 overrun;             /* slots skipped: being written by a stalled producer, or already newer */
	__u64 shed[RING_TYPES];    /* events dropped before their ticket under pressure (seq's seq_shed_mask), by type */
	__u64 output_failed;       /* RING_RB (producer.h): tickets whose ring buffer output failed */
};

/*
 * The other transports (seq's rb_* and pb_* programs): a record is struct
 * ring_tx_hdr then the same staged bytes, output whole with
 * bpf_ringbuf_output() or bpf_perf_event_output(). Its tickets are claimed
 * with the same fetch-add on ring_ctl.head, as many as the slots would take
 * (one per RING_SLOT_PAYLOAD bytes), so seq.number and the accounting are the
 * same whatever the transport.
 */
struct ring_tx_hdr {
	__u64 ticket; /* the record's first ticket; it took ceil(len / RING_SLOT_PAYLOAD) */
};

#endif
