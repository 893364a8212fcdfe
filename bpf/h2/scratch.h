/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Staging: the counters, the per-CPU buffer a record and the frame walk's
 * state live in, the head every record starts with, and the claim of the
 * buffer by a data call.
 */
#ifndef H2_SCRATCH_H
#define H2_SCRATCH_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct h2_stats);
} h2_counters SEC(".maps");

/* 1 while a data program stages on this CPU: one preempted in the middle
 * must not have its record overwritten by another. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} h2_busy SEC(".maps");

enum h2_stop {
	STOP_NONE = 0,
	STOP_SHORT = 1, /* the iovecs ended before the call's bytes (never expected) */
	STOP_FAULT = 2, /* user memory unreadable */
	STOP_MAP = 3,   /* a map lookup failed (never expected) */
};

struct h2_walk {
	__u64 pos, end;        /* the cursor and the call's end, stream offsets */
	__u64 seg_lo, seg_hi;  /* the user segment under the cursor, stream offsets */
	__u64 ub;              /* its user address */
	__u64 iov;             /* user struct iovec array (0: one buffer) */
	__u64 rseg_end;        /* stream end of the record's open segment */
	struct h2_dirst d;
	__u32 iov_i, iov_n;
	__u32 rec_len;         /* bytes staged */
	__u32 rseg;            /* scratch offset of the open segment's header (0: none) */
	__u16 nseg;
	__u8 stop;
	__u8 h1;               /* an HTTP/1.x call: its first bytes and its last (h1.h) */
	__u32 seqbase;         /* H2_F_SEQ: the TCP sequence number of stream offset o is seqbase + (u32)o */
	__u64 copied, skipped, frames, cut, cut_bytes, records;
	__u64 headers;         /* HEADERS frame headers walked (a call: admits the connection into h2_conns) */
	__u64 win_lo, win_hi;  /* the stream offsets h2_scratch.win holds (within one user segment) */
	struct h2_rec hdr;     /* the head of every record of this call */
	__u64 cstart;          /* the call's first stream offset */
};

/* A record is staged in rec (the ring's scratch layout, for
 * ring_commit); pad lets a bounded copy run past the record's logical end.
 * The walk's state lives here too, not on the stack: the verifier does not
 * track what a map value holds, so the bpf_loop callback's states converge
 * at once instead of exploding (the stack version fails to load with
 * "The sequence of 8193 jumps is too complex"). */
struct h2_scratch {
	struct ring_scratch rec;
	__u8 pad[H2_CHUNK + 64];
	struct h2_walk w;
	__u8 win[H2_WIN];
};

/* Three per CPU: 0 for the data programs (process context), 1 for the state
 * changes (often softirq, which may interrupt a data program), 2 for SSL_free. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct h2_scratch);
} h2_scratchbuf SEC(".maps");

static __always_inline struct h2_stats *h2_st(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&h2_counters, &zero);
}

/* The current task's ids in the collector's pid namespace (struct
 * bpf_pidns_info), per CPU: not on the stack, which the TLS return probes
 * have little of left. */
struct h2_pidns {
	__u32 pid, tgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct h2_pidns);
} h2_pidns_buf SEC(".maps");

/* Whether the current task is the collector's own process (h2_self_tgid,
 * in the pid namespace h2_self_pidns_* names when set: a task of another
 * namespace is not). */
static __always_inline bool h2_skip_self(void)
{
	struct h2_pidns *ns;
	__u32 zero = 0;

	if (!h2_self_tgid)
		return false;
	if (!h2_self_pidns_ino)
		return bpf_get_current_pid_tgid() >> 32 == h2_self_tgid;
	ns = bpf_map_lookup_elem(&h2_pidns_buf, &zero);
	if (!ns || bpf_get_ns_current_pid_tgid(h2_self_pidns_dev, h2_self_pidns_ino, (struct bpf_pidns_info *)ns,
					       sizeof(*ns)))
		return false;
	return ns->tgid == h2_self_tgid;
}

static __always_inline void h2_fill_rec(struct h2_rec *h, struct h2_conn *c, __u8 kind, __u8 dir, bool task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->conn = c->id;
	h->time_ns = bpf_ktime_get_boot_ns();
	h->kind = kind;
	h->dir = dir;
	h->nseg = 0;
	h->flags = 0;
	if (task) {
		struct task_struct *t = (struct task_struct *)bpf_get_current_task();

		h->start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
		h->pid = pid_tgid >> 32;
		h->tid = (__u32)pid_tgid;
	} else {
		h->start_ns = 0;
		h->pid = 0;
		h->tid = 0;
		h->flags = H2_F_SOFTIRQ;
	}
}

/*
 * Takes this CPU's staging buffer for a data call (its walk state cleared),
 * or counts the call busy: a program preempted mid-call holds it.
 */
static __always_inline bool h2_begin(struct h2_stats *st, __u64 **busy, struct h2_scratch **s)
{
	__u32 zero = 0;

	*busy = bpf_map_lookup_elem(&h2_busy, &zero);
	*s = bpf_map_lookup_elem(&h2_scratchbuf, &zero);
	if (!*busy || !*s)
		return false;
#ifdef RING_NO_FETCH
	/* No exchange: a plain test and store, enough for a per-CPU flag
	 * where the program is not preempted between them. */
	if (*(volatile __u64 *)*busy) {
		st->busy++;
		return false;
	}
	*(volatile __u64 *)*busy = 1;
#else
	if (__sync_lock_test_and_set(*busy, 1)) {
		st->busy++;
		return false;
	}
#endif
	__builtin_memset(&(*s)->w, 0, sizeof((*s)->w));
	return true;
}

/* Gives this CPU's staging buffer back (h2_begin). */
static __always_inline void h2_end(__u64 *busy)
{
#ifdef RING_NO_FETCH
	*(volatile __u64 *)busy = 0;
#else
	__sync_lock_test_and_set(busy, 0);
#endif
}

#endif /* H2_SCRATCH_H */
