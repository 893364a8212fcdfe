/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sequencer's wire format, shared by the BPF producers and described again,
 * byte for byte, in Go (internal/ring and internal/event).
 * Change one, change the other: the Go tests check the sizes below.
 *
 * Ring: a BPF_F_MMAPABLE array of SEQ_SLOT_SIZE-byte slots, a power of two of them.
 * Ticket t lives in slot t & (slots-1). A producer
 *   1. claims n tickets with one atomic fetch-add on seq_ctl.head,
 *   2. for each of its slots: takes it with cmpxchg(seq, old, (t+1) | SEQ_WRITING),
 *      only if old is not being written and holds an older ticket (otherwise
 *      the slot is skipped and counted in seq_stats.overrun), fills the slot,
 *      then xchg(seq, t+1) — the publish, always last.
 * A reader accepts slot t only if seq == t+1 both before and after copying it.
 * Owning the slot with the compare-and-swap means a producer that stalls
 * mid-write can neither be overwritten by one a lap later nor spoil its record.
 *
 * A record (one event) is `len` bytes split over `nslots` consecutive tickets,
 * SEQ_SLOT_PAYLOAD bytes per slot; every slot of a record carries the same len
 * and nslots, and its own index (0 for the first).
 */
#ifndef SEQ_H
#define SEQ_H

#define SEQ_SLOT_SIZE 128
#define SEQ_SLOT_HDR 16
#define SEQ_SLOT_PAYLOAD (SEQ_SLOT_SIZE - SEQ_SLOT_HDR)
#define SEQ_WRITING (1ULL << 63)

/* Largest record: the fixed event, a filename and argv. */
#define SEQ_MAX_FILENAME 256
#define SEQ_MAX_ARGS 4096
#define SEQ_MAX_SLOTS 42 /* ceil((96 + 256 + 4096) / 112) = 40, rounded up */
#define SEQ_SCRATCH (SEQ_MAX_SLOTS * SEQ_SLOT_PAYLOAD)

struct seq_slot {
	__u64 seq;    /* 0: never written; t+1: ticket t published; (t+1)|SEQ_WRITING: being written */
	__u32 len;    /* record length in bytes */
	__u16 nslots; /* slots (tickets) in the record */
	__u16 index;  /* this slot's place in the record, 0 for the first */
	__u8 data[SEQ_SLOT_PAYLOAD];
};

/* seq_control (map of one struct seq_ctl): mmapable; the ticket counter alone in its cache line. */
struct seq_ctl {
	__u64 head;    /* next ticket: tickets issued so far */
	__u64 _pad0[7];
	__u64 parked;  /* 1 while the reader sleeps; the producer that swaps it to 0 rings the doorbell */
	__u64 tail;    /* the reader's next ticket (sequencer): head - tail is the backlog */
	__u64 _pad1[6];
};

enum seq_event_type {
	SEQ_EV_FORK = 1,         /* a new process (child of a fork/clone without CLONE_THREAD) */
	SEQ_EV_EXEC = 2,
	SEQ_EV_EXIT = 3,         /* the last thread of a process exited (group_dead) */
	SEQ_EV_THREAD_START = 4, /* clone with CLONE_THREAD */
	SEQ_EV_THREAD_EXIT = 5,  /* a thread exited, its process lives on */
	SEQ_EV_SYNTH = 6,        /* the synthetic producer (seq.bpf.c's *_synth programs, for the benchmark) */
	SEQ_EV_SNAPSHOT = 7,     /* a process alive when the receiver started (task iterator, never in the ring) */
	SEQ_EV_MAX = 8,
};

enum seq_event_flags {
	SEQ_F_ARGS_TRUNCATED = 1 << 0,
	SEQ_F_FILENAME_TRUNCATED = 1 << 1,
	SEQ_F_ARGS_UNREADABLE = 1 << 2, /* argv pages not resident: args left empty */
};

/* The fixed part of every record, followed by filename then args (exec only). */
struct seq_event {
	__u64 ktime_ns;        /* bpf_ktime_get_boot_ns() when it happened */
	__u64 start_ns;        /* the task's start_boottime; for process events the group leader's */
	__u64 parent_start_ns; /* the real parent's group leader start_boottime */
	__u64 cgroup_id;       /* cgroup v2 id of the task */
	__u16 type;            /* enum seq_event_type */
	__u16 flags;           /* enum seq_event_flags */
	__u32 cpu;
	__u32 pid;             /* tgid */
	__u32 tid;
	__u32 ppid;            /* real parent's tgid */
	__u32 uid;
	__u32 gid;
	__u32 exit_code;       /* raw wait status: (code << 8) | core(0x80) | signal */
	__u32 old_tid;         /* exec: the tid that called execve (differs when a thread execs) */
	__u16 filename_len;    /* bytes of filename after this struct, no NUL */
	__u16 args_len;        /* bytes of argv after the filename, NUL-separated */
	char comm[16];
	__u32 sid;             /* session id: a process whose pid == sid leads its session */
	__u32 _pad;
};

/* seq_counters (map): one per-CPU struct seq_stats. */
struct seq_stats {
	__u64 events[SEQ_EV_MAX];  /* records produced (ticketed), by type */
	__u64 tickets[SEQ_EV_MAX]; /* tickets claimed, by type */
	__u64 no_slot;             /* a claimed slot the program could not look up (never expected) */
	__u64 doorbells;           /* wake-ups sent to a parked reader */
	__u64 doorbell_failed;     /* wake-ups that found the doorbell ring full */
	__u64 overrun;             /* slots skipped: being written by a stalled producer, or already newer */
	__u64 shed[SEQ_EV_MAX];   /* events dropped before their ticket under pressure (seq_shed_mask), by type */
	__u64 output_failed;       /* SEQ_RING_RB (seq_ring.h): tickets whose ring buffer output failed */
};

/*
 * The other transports (seq.bpf.c's rb_* and pb_* programs): a record is
 * struct seq_tx_hdr then the same staged bytes (struct seq_event, filename,
 * argv), output whole with bpf_ringbuf_output() or bpf_perf_event_output().
 * Its tickets are claimed with the same fetch-add on seq_ctl.head, as many as
 * the sequencer would take (one per SEQ_SLOT_PAYLOAD bytes), so seq.number
 * and the accounting are the same whatever the transport.
 */
struct seq_tx_hdr {
	__u64 ticket; /* the record's first ticket; it took ceil(len / SEQ_SLOT_PAYLOAD) */
};

/* seq_tx_counters (map): one per-CPU struct seq_tx_stats (ring buffer and perf buffer transports). */
struct seq_tx_stats {
	__u64 failed[SEQ_EV_MAX]; /* tickets lost because the output failed, by type */
	__u64 reserve_failed;     /* ring buffer: bpf_ringbuf_output() failed */
	__u64 perf_failed;        /* perf: bpf_perf_event_output() failed */
	__u64 wakeups;            /* ring buffer: records output with BPF_RB_FORCE_WAKEUP */
	/* Failed outputs (reserve_failed + perf_failed) by cause. */
	__u64 failed_full;  /* no room: the ring buffer looked full just after; perf -ENOSPC */
	__u64 failed_busy;  /* ring buffer: -EAGAIN with room left (its lock not taken); perf -EBUSY (nesting) */
	__u64 failed_other; /* perf -ENOENT (no buffer for this CPU), anything else */
};

/* When a ring buffer producer wakes the reader (seq_rb_wakeup_mode in seq.bpf.c, a load-time knob). */
enum seq_rb_wakeup {
	SEQ_RB_BATCHED = 0,  /* BPF_RB_NO_WAKEUP, except when a parked reader asks, every 64 tickets, or 1/4 full (the receiver's) */
	SEQ_RB_ADAPTIVE = 1, /* flags 0: the kernel wakes the reader when it has caught up */
	SEQ_RB_EVERY = 2,    /* BPF_RB_FORCE_WAKEUP on every record */
};

#endif
