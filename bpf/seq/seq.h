/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seq receiver's records (seq.bpf.c): process lifecycle events, carried
 * by the ring (ring/ring.h) or by the other transports, and decoded again,
 * byte for byte, in Go (internal/event). Change one, change the other: the
 * Go tests check the layout. Include after ring/ring.h.
 */
#ifndef SEQ_H
#define SEQ_H

/* Largest record: the fixed event, a filename and argv (RING_MAX_SLOTS is sized for it). */
#define SEQ_MAX_FILENAME 256
#define SEQ_MAX_ARGS 4096

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

_Static_assert(SEQ_EV_MAX == RING_TYPES, "the ring's counters keep every event type apart");
_Static_assert(sizeof(struct seq_event) + SEQ_MAX_FILENAME + SEQ_MAX_ARGS <= RING_SCRATCH,
	       "the largest event fits the ring's largest record");

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
