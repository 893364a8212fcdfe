//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Process lifecycle producers for the ring (see ring/ring.h for the protocol,
 * seq.h for the records).
 *
 * Three transports, each its own set of programs; the loader loads and
 * attaches one set, and creates only the maps that set uses:
 *   seq_*  the sequencer ring: ring_commit() from ring/producer.h;
 *   rb_*   the BPF ring buffer: tickets, then bpf_ringbuf_output(), wake-ups batched;
 *   pb_*   per-CPU perf buffers: tickets, then bpf_perf_event_output().
 * All three stage the same record (struct seq_event, filename, argv) and claim
 * the same tickets with the same fetch-add on ring_ctl.head; the ring buffer and
 * perf records start with struct ring_tx_hdr (the first ticket).
 *
 * For the benchmark (tools/seqbench), never loaded by the receiver:
 *   st_*     the sequencer's programs that stage every record and drop it
 *            (the cost of the hooks and seq_fill without a transport);
 *   *_synth  a synthetic producer on sys_enter, one per transport (and st_);
 * and load-time knobs the receiver leaves at their defaults
 * seq_rb_wakeup_mode, seq_synth_*). seq_event_mask 0 is the "hook only" baseline.
 *
 * Every event is staged in a per-CPU scratch buffer, then committed: one
 * fetch-add claims its tickets, each slot is marked "being written", filled,
 * and published last with an atomic exchange. Producers never wait for each
 * other or for the reader: no locks, no retry loops.
 *
 * Built a second time with RING_NO_FETCH (the seqnf object) for kernels
 * without BPF atomic fetch, exchange and compare-and-exchange (before Linux
 * 5.12): only the rb_* programs and the snapshot iterator. They count the
 * tickets they claim with a plain atomic add (BPF_XADD, which every kernel
 * with BPF takes) but cannot learn their number: the ring buffer serialises
 * reservations, so the reader numbers the records in ring order (and every
 * failed output, counted per CPU, as a gap); wake-ups are the kernel's own
 * (flags 0: the reader is woken when it has caught up).
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "ring/ring.h"
#include "seq/seq.h"
#include "seq/fill.h"
#include "ring/producer.h"

char LICENSE[] SEC("license") = "GPL"; /* GPL-2.0-only, one of the two licenses above */

#define SIGNAL_GROUP_EXIT 0x00000004

/* Set by the loader before the programs are loaded (and ring_mask, in ring/producer.h). */
volatile const __u32 seq_event_mask = (1 << SEQ_EV_FORK) | (1 << SEQ_EV_EXEC) | (1 << SEQ_EV_EXIT);
volatile const __u32 seq_max_args = 1024;
/* Adaptive pressure (sequencer only): event types in seq_shed_mask are dropped
 * before they take a ticket while the reader is more than seq_shed_above
 * tickets behind, counted in ring_stats.shed; exits are never in the mask. */
volatile const __u32 seq_shed_mask = 0;
volatile const __u64 seq_shed_above = 0;
/* Ring buffer: force a wake-up when the tickets cross a multiple of
 * seq_rb_wakeup_mask + 1, or the unread data crosses seq_rb_wakeup_bytes. */
volatile const __u64 seq_rb_wakeup_mask = 63;
volatile const __u64 seq_rb_wakeup_bytes = 1 << 20;
/* Ring buffer wake-up policy (benchmark): the receiver's batching by default. */
volatile const enum seq_rb_wakeup seq_rb_wakeup_mode = SEQ_RB_BATCHED;
/* The synthetic producer (benchmark): every system call seq_synth_nr made by
 * process seq_synth_tgid is one fixed record of type SEQ_EV_SYNTH. */
volatile const __u32 seq_synth_tgid = 0;
volatile const __s64 seq_synth_nr = -1;
/* Never read: puts enum seq_event_type into BTF for bpf2go's -type (a
 * pointer, so that bpf2go does not also emit it as a variable's type). */
const enum seq_event_type *const seq_event_type_btf = 0;

#define EBUSY 16
#define ENOENT 2
#define ENOSPC 28

enum seq_transport {
	T_SEQ = 0,
	T_RB = 1,
	T_PERF = 2,
	T_STAGE = 3, /* benchmark: stage, then drop */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seq_tx_stats);
} seq_tx_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* replaced by the loader: ring_slots x 128 bytes */
} seq_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} seq_perf SEC(".maps");

/* Sheds a low-priority event while the ring is nearly full, counted; it stops
 * on its own as soon as the reader catches up. */
static __always_inline bool seq_shed(__u16 type)
{
	struct ring_stats *st;
	struct ring_ctl *ctl;
	__u32 zero = 0;
	__u64 head, tail;

	if (!(seq_shed_mask & (1 << type)))
		return false;
	ctl = bpf_map_lookup_elem(&ring_control, &zero);
	st = bpf_map_lookup_elem(&ring_counters, &zero);
	if (!ctl || !st)
		return false;
	/* tail first, then head: the reader's tail never passes a head read
	 * after it. Signed, so a stale head (a preempted producer, loads
	 * reordered on weakly ordered CPUs) reads as no backlog, not as 2^64. */
	tail = *(volatile __u64 *)&ctl->tail;
	head = *(volatile __u64 *)&ctl->head;
	if ((__s64)(head - tail) <= (__s64)seq_shed_above)
		return false;
	if (type < SEQ_EV_MAX)
		st->shed[type]++;
	return true;
}

static __always_inline bool seq_wanted(__u16 type)
{
	return seq_event_mask & (1 << type);
}

/* Where the event starts in the scratch buffer: the sequencer's records are the bare event. */
static __always_inline __u32 seq_off(int tr)
{
	return tr == T_SEQ ? 0 : sizeof(struct ring_tx_hdr);
}

/* Ring buffer: when to wake the reader. Per-record wake-ups cost microseconds each. */
static __always_inline __u64 seq_rb_flags(struct ring_ctl *ctl, __u64 t0, __u32 n, __u32 total, struct seq_tx_stats *tx)
{
	__u64 avail;

#ifdef RING_NO_FETCH
	/* No exchange to take the parked flag with, no ticket to batch by. */
	return 0;
#endif
	/* One test on the receiver's path: the verifier drops the rest. */
	if (seq_rb_wakeup_mode != SEQ_RB_BATCHED) {
		if (seq_rb_wakeup_mode == SEQ_RB_ADAPTIVE)
			return 0;
		goto wake;
	}
	/* A parked reader asked to be woken (the doorbell protocol of ring/producer.h;
	 * the ticket was claimed before this check). */
	if (*(volatile __u64 *)&ctl->parked && __sync_lock_test_and_set(&ctl->parked, 0))
		goto wake;
	if ((t0 & ~seq_rb_wakeup_mask) != ((t0 + n) & ~seq_rb_wakeup_mask))
		goto wake;
	avail = bpf_ringbuf_query(&seq_rb, BPF_RB_AVAIL_DATA);
	if (avail < seq_rb_wakeup_bytes && avail + total + 8 >= seq_rb_wakeup_bytes)
		goto wake;
	return BPF_RB_NO_WAKEUP;
wake:
	tx->wakeups++;
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * Hands the staged record (len bytes of event at seq_off(tr)) to transport tr.
 * tr is a constant at every call, so each program keeps only its branch: the
 * sequencer's is ring_commit() alone, as before.
 */
static __always_inline void seq_emit(void *ctx, int tr, struct ring_scratch *rec, __u32 len, __u16 type)
{
	struct ring_tx_hdr *h = (struct ring_tx_hdr *)rec->buf;
	struct seq_tx_stats *tx;
	struct ring_stats *st;
	struct ring_ctl *ctl;
	__u32 zero = 0, n, total;
	long err;

	if (tr == T_STAGE)
		return;
#ifndef RING_NO_FETCH
	if (tr == T_SEQ) {
		ring_commit(rec, len, type);
		return;
	}
#endif
	ctl = bpf_map_lookup_elem(&ring_control, &zero);
	st = bpf_map_lookup_elem(&ring_counters, &zero);
	tx = bpf_map_lookup_elem(&seq_tx_counters, &zero);
	if (!ctl || !st || !tx)
		return;
	/* As many tickets as the sequencer would take for this record. */
	n = ring_slots_for(len);
	total = len + sizeof(*h);
	if (total > RING_SCRATCH)
		total = RING_SCRATCH;
	/* The ticket last, right before the output: the order it gives is as tight as it gets. */
#ifdef RING_NO_FETCH
	/* The result unused: a plain atomic add, no fetch. The reader numbers. */
	__sync_fetch_and_add(&ctl->head, n);
	h->ticket = 0;
#else
	h->ticket = __sync_fetch_and_add(&ctl->head, n);
#endif
	if (type < SEQ_EV_MAX) {
		st->events[type]++;
		st->tickets[type] += n;
	}
	if (tr == T_RB) {
		err = bpf_ringbuf_output(&seq_rb, rec->buf, total, seq_rb_flags(ctl, h->ticket, n, total, tx));
		if (err) {
			tx->reserve_failed++;
			if (type < SEQ_EV_MAX)
				tx->failed[type] += n;
			/* -EAGAIN either way: no room, or the ring's lock was not
			 * taken. Told apart by the free space just after: approximate. */
			if (bpf_ringbuf_query(&seq_rb, BPF_RB_AVAIL_DATA) + total + 8 > bpf_ringbuf_query(&seq_rb, BPF_RB_RING_SIZE))
				tx->failed_full++;
			else
				tx->failed_busy++;
		}
		return;
	}
	err = bpf_perf_event_output(ctx, &seq_perf, BPF_F_CURRENT_CPU, rec->buf, total);
	if (err) {
		tx->perf_failed++;
		if (type < SEQ_EV_MAX)
			tx->failed[type] += n;
		if (err == -ENOSPC)
			tx->failed_full++;
		else if (err == -EBUSY)
			tx->failed_busy++;
		else
			tx->failed_other++;
	}
}

static __always_inline int do_fork(void *ctx, int tr, struct task_struct *child)
{
	bool thread = child->pid != child->tgid;
	__u16 type = thread ? SEQ_EV_THREAD_START : SEQ_EV_FORK;
	struct ring_scratch *rec;

	if (!seq_wanted(type) || (tr == T_SEQ && seq_shed(type)))
		return 0;
	rec = ring_stage();
	if (!rec)
		return 0;
	seq_fill((struct seq_event *)&rec->buf[seq_off(tr)], child, type, !thread);
	seq_emit(ctx, tr, rec, sizeof(struct seq_event), type);
	return 0;
}

static __always_inline int do_exec(void *ctx, int tr, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 off = seq_off(tr);
	struct ring_scratch *rec;
	struct seq_event *e;
	unsigned long start, end;
	__u64 flen, alen;
	long n;

	if (!seq_wanted(SEQ_EV_EXEC) || (tr == T_SEQ && seq_shed(SEQ_EV_EXEC)))
		return 0;
	rec = ring_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)&rec->buf[off];
	seq_fill(e, p, SEQ_EV_EXEC, true);
	e->old_tid = old_pid;

	n = bpf_probe_read_kernel_str(&rec->buf[off + sizeof(*e)], SEQ_MAX_FILENAME, bprm->filename);
	flen = n > 0 ? n - 1 : 0;
	if (n == SEQ_MAX_FILENAME)
		e->flags |= SEQ_F_FILENAME_TRUNCATED;
	if (flen >= SEQ_MAX_FILENAME)
		flen = SEQ_MAX_FILENAME - 1;

	start = BPF_CORE_READ(p, mm, arg_start);
	end = BPF_CORE_READ(p, mm, arg_end);
	alen = end > start ? end - start : 0;
	if (alen > seq_max_args) {
		if (seq_max_args)
			e->flags |= SEQ_F_ARGS_TRUNCATED;
		alen = seq_max_args;
	}
	if (alen > SEQ_MAX_ARGS)
		alen = SEQ_MAX_ARGS;
	if (alen && bpf_probe_read_user(&rec->buf[off + sizeof(*e) + flen], alen, (void *)start)) {
		alen = 0;
		e->flags |= SEQ_F_ARGS_UNREADABLE;
	}
	e->filename_len = flen;
	e->args_len = alen;
	seq_emit(ctx, tr, rec, sizeof(*e) + flen + alen, SEQ_EV_EXEC);
	return 0;
}

/*
 * The one process exit of a thread group, on kernels whose sched_process_exit
 * does not pass group_dead (before Linux 6.16): claimed by the first thread
 * that sees the group dead. Keyed by the process's identity, (tgid, the
 * leader's start time), which no two processes share; LRU, so claims of long
 * gone processes make room by themselves.
 */
struct seq_exit_key {
	__u64 start_ns;
	__u32 tgid;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct seq_exit_key);
	__type(value, __u8);
} seq_exit_claim SEC(".maps");

/* Whether p's exit ends its process, without group_dead: do_exit() decrements
 * signal->live before the tracepoint, so it reads zero once every thread of
 * the group has passed that point. Two threads ending together may both read
 * zero; the map lets exactly one of them claim the process exit. */
static __always_inline bool seq_group_dead(struct task_struct *p)
{
	struct seq_exit_key k = {};
	__u8 one = 1;

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return false;
	k.tgid = p->tgid;
	k.start_ns = p->group_leader->start_boottime;
	return bpf_map_update_elem(&seq_exit_claim, &k, &one, BPF_NOEXIST) == 0;
}

static __always_inline int do_exit(void *ctx, int tr, struct task_struct *p, bool group_dead)
{
	__u16 type = group_dead ? SEQ_EV_EXIT : SEQ_EV_THREAD_EXIT;
	struct ring_scratch *rec;
	struct seq_event *e;
	__u32 code;

	/* A process exit is never shed; a thread exit may be. */
	if (!seq_wanted(type) || (tr == T_SEQ && !group_dead && seq_shed(type)))
		return 0;
	rec = ring_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)&rec->buf[seq_off(tr)];
	seq_fill(e, p, type, group_dead);
	code = p->exit_code;
	if (group_dead) {
		/* The process's status as wait() reports it: the group's after
		 * exit_group() or a fatal signal, else the leader's own (the leader
		 * may have ended first, with pthread_exit). */
		struct signal_struct *sig = p->signal;

		if (sig->flags & SIGNAL_GROUP_EXIT)
			code = sig->group_exit_code;
		else
			code = p->group_leader->exit_code;
	}
	e->exit_code = code;
	seq_emit(ctx, tr, rec, sizeof(*e), type);
	return 0;
}

/*
 * The synthetic producer (benchmark): every system call seq_synth_nr of the
 * target process is one fixed, one-slot event (seq_fill_synth).
 */
static __always_inline int do_synth(void *ctx, int tr, long id)
{
	struct ring_scratch *rec;
	struct seq_event *e;
	__u64 pid_tgid;

	if (id != seq_synth_nr)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)(pid_tgid >> 32) != seq_synth_tgid)
		return 0;
	if (!seq_wanted(SEQ_EV_SYNTH) || (tr == T_SEQ && seq_shed(SEQ_EV_SYNTH)))
		return 0;
	rec = ring_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)&rec->buf[seq_off(tr)];
	seq_fill_synth(e, pid_tgid);
	seq_emit(ctx, tr, rec, sizeof(*e), SEQ_EV_SYNTH);
	return 0;
}

#define SEQ_PROGS(prefix, tr)                                                                        \
	SEC("tp_btf/sched_process_fork")                                                             \
	int BPF_PROG(prefix##_fork, struct task_struct *parent, struct task_struct *child)           \
	{                                                                                            \
		return do_fork(ctx, tr, child);                                                      \
	}                                                                                            \
	SEC("tp_btf/sched_process_exec")                                                             \
	int BPF_PROG(prefix##_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) \
	{                                                                                            \
		return do_exec(ctx, tr, p, old_pid, bprm);                                           \
	}                                                                                            \
	SEC("tp_btf/sched_process_exit")                                                             \
	int BPF_PROG(prefix##_exit, struct task_struct *p, bool group_dead)                          \
	{                                                                                            \
		return do_exit(ctx, tr, p, group_dead);                                              \
	}                                                                                            \
	/* The same without group_dead (before Linux 6.16): the loader picks one. */                 \
	SEC("tp_btf/sched_process_exit")                                                             \
	int BPF_PROG(prefix##_exit_live, struct task_struct *p)                                      \
	{                                                                                            \
		return do_exit(ctx, tr, p, seq_group_dead(p));                                       \
	}

#define SEQ_SYNTH_PROG(prefix, tr)                                            \
	SEC("tp_btf/sys_enter")                                               \
	int BPF_PROG(prefix##_synth, struct pt_regs *regs, long id)           \
	{                                                                     \
		return do_synth(ctx, tr, id);                                 \
	}

SEQ_PROGS(rb, T_RB)
SEQ_SYNTH_PROG(rb, T_RB)
#ifndef RING_NO_FETCH
SEQ_PROGS(seq, T_SEQ)
SEQ_PROGS(pb, T_PERF)
SEQ_PROGS(st, T_STAGE)
SEQ_SYNTH_PROG(seq, T_SEQ)
SEQ_SYNTH_PROG(pb, T_PERF)
SEQ_SYNTH_PROG(st, T_STAGE)
#endif

/*
 * The processes alive when the receiver starts: one struct seq_event (type
 * SEQ_EV_SNAPSHOT) per thread-group leader, written to the iterator's output.
 * The receiver attaches the tracepoints first and reads this second, so a
 * process is seen at least once, by one or both.
 */
SEC("iter/task")
int seq_snapshot(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct seq_event e = {};

	if (!task || task->pid != task->tgid)
		return 0;
	/* A zombie (every thread exited, not yet reaped) is not running: its exit
	 * happened before our tracepoints were attached. */
	if (!BPF_CORE_READ(task, signal, live.counter))
		return 0;
	seq_fill(&e, task, SEQ_EV_SNAPSHOT, true);
	e.ktime_ns = task->start_boottime;
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
