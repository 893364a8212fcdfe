//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Transports side by side, for the benchmark (receiver/seqreceiver/cmd/seqbench).
 *
 * The same events as seq.bpf.c (fork, exec with its filename, exit; thread
 * events filtered as the receiver does by default) plus a synthetic high-rate
 * producer on sys_enter, staged the same way in the per-CPU scratch buffer,
 * then handed to one of three transports, each its own set of programs:
 *
 *   seqb_*  the sequencer: seq_commit() from seq_ring.h, exactly as the receiver;
 *   rb_*    the BPF ring buffer: a ticket, then bpf_ringbuf_output(), wake-ups batched;
 *   pb_*    per-CPU perf buffers: a ticket, then bpf_perf_event_output().
 *
 * With seq_event_mask 0 the sequencer's programs run, filter and return: the
 * cost of the hooks alone (seqbench's "hook" transport). With
 * bench_stage_only they also stage every event and then drop it: the hooks
 * and seq_fill, without a transport ("stage").
 *
 * Every transport claims its ticket with the same fetch-add on seq_ctl.head, so
 * seq.number means the same thing everywhere: head is the number of tickets
 * issued, and issued = delivered + lost exactly. For the ring buffer and perf
 * buffers a record is struct bench_hdr (the ticket) followed by the staged
 * event; a failed output is counted by type and by cause in bench_counters.
 * The loader loads and attaches only the chosen transport's programs (and the
 * maps they use).
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "seq.h"
#include "seq_event.h"
#include "seq_ring.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGNAL_GROUP_EXIT 0x00000004
#define EAGAIN 11
#define ENOENT 2
#define ENOSPC 28
#define EBUSY 16

enum bench_transport {
	T_SEQ = 0,
	T_RB = 1,
	T_PERF = 2,
};

/* Ring buffer wake-up policies (bench_rb_mode). */
enum bench_rb_mode {
	RB_BATCHED = 0, /* NO_WAKEUP, except every rb_wakeup_every-th ticket or when avail data crosses rb_wakeup_bytes */
	RB_ADAPTIVE = 1, /* flags 0: the kernel wakes when the reader has caught up */
	RB_EVERY = 2,   /* FORCE_WAKEUP on every record */
};

/* Set by the loader before the programs are loaded (and seq_ring_mask, in seq_ring.h). */
volatile const __u32 seq_event_mask = (1 << SEQ_EV_FORK) | (1 << SEQ_EV_EXEC) | (1 << SEQ_EV_EXIT) | (1 << SEQ_EV_SYNTH);
volatile const __u32 bench_target_tgid = 0; /* the synthetic producer's process */
volatile const __s64 bench_synth_nr = 39;  /* __NR_getpid (x86_64; the loader sets the host's) */
volatile const __u32 bench_rb_mode = RB_BATCHED;
volatile const __u64 bench_rb_wakeup_mask = 63;     /* wake on tickets t with t & mask == 0 */
volatile const __u64 bench_rb_wakeup_bytes = 1 << 20; /* ... and when avail data crosses this */
volatile const __u32 bench_stage_only = 0;            /* stage the event, emit nothing */

/* What the ring buffer and perf buffer records start with. */
struct bench_hdr {
	__u64 ticket;
};

/* bench_counters: one per-CPU struct bench_stats (ring buffer and perf buffer transports). */
struct bench_stats {
	__u64 events[SEQ_EV_MAX]; /* tickets claimed (records attempted), by type */
	__u64 failed[SEQ_EV_MAX]; /* outputs that failed (tickets lost), by type */
	__u64 err_full;           /* ring buffer: no room; perf: -ENOSPC */
	__u64 err_busy;           /* ring buffer: -EAGAIN with room left (lock not taken); perf: -EBUSY (nesting) */
	__u64 err_noent;          /* perf: no buffer open for this CPU */
	__u64 err_other;
	__u64 wakeups;            /* ring buffer: records output with BPF_RB_FORCE_WAKEUP */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_stats);
} bench_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* replaced by the loader */
} bench_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} bench_perf SEC(".maps");

static __always_inline bool seq_wanted(__u16 type)
{
	return seq_event_mask & (1 << type);
}

/* Where the event starts in the scratch buffer: the sequencer's records are the bare event. */
static __always_inline __u32 bench_off(int tr)
{
	return tr == T_SEQ ? 0 : sizeof(struct bench_hdr);
}

static __always_inline void bench_fail(struct bench_stats *st, __u16 type)
{
	if (type < SEQ_EV_MAX)
		st->failed[type]++;
}

/* Ring buffer: when to wake the reader. Per-event wake-ups cost microseconds each. */
static __always_inline __u64 rb_flags(__u64 ticket, __u32 len, struct bench_stats *st)
{
	__u64 avail;

	if (bench_rb_mode == RB_ADAPTIVE)
		return 0;
	if (bench_rb_mode == RB_EVERY) {
		st->wakeups++;
		return BPF_RB_FORCE_WAKEUP;
	}
	if ((ticket & bench_rb_wakeup_mask) == 0) {
		st->wakeups++;
		return BPF_RB_FORCE_WAKEUP;
	}
	avail = bpf_ringbuf_query(&bench_rb, BPF_RB_AVAIL_DATA);
	if (avail < bench_rb_wakeup_bytes && avail + len + 8 >= bench_rb_wakeup_bytes) {
		st->wakeups++;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

/*
 * Hands the staged record (len bytes of event at bench_off(tr)) to transport
 * tr. tr is a constant at every call, so each program keeps only its branch.
 */
static __always_inline void bench_emit(void *ctx, int tr, struct seq_scratch *rec, __u32 len, __u16 type)
{
	__u32 zero = 0;
	struct bench_hdr *h = (struct bench_hdr *)rec->buf;
	struct bench_stats *st;
	struct seq_ctl *ctl;
	__u32 total;
	long err;

	if (bench_stage_only)
		return;
	if (tr == T_SEQ) {
		seq_commit(rec, len, type);
		return;
	}
	ctl = bpf_map_lookup_elem(&seq_control, &zero);
	st = bpf_map_lookup_elem(&bench_counters, &zero);
	if (!ctl || !st)
		return;
	total = len + sizeof(*h);
	if (total > SEQ_SCRATCH)
		total = SEQ_SCRATCH;
	/* The ticket last, right before the output: the order it gives is as tight as it gets. */
	h->ticket = __sync_fetch_and_add(&ctl->head, 1);
	if (type < SEQ_EV_MAX)
		st->events[type]++;

	if (tr == T_RB) {
		err = bpf_ringbuf_output(&bench_rb, rec->buf, total, rb_flags(h->ticket, total, st));
		if (err) {
			bench_fail(st, type);
			/* -EAGAIN either way: no room, or the ring's lock was not taken. */
			if (bpf_ringbuf_query(&bench_rb, BPF_RB_AVAIL_DATA) + total + 8 > bpf_ringbuf_query(&bench_rb, BPF_RB_RING_SIZE))
				st->err_full++;
			else if (err == -EAGAIN)
				st->err_busy++;
			else
				st->err_other++;
		}
		return;
	}

	err = bpf_perf_event_output(ctx, &bench_perf, BPF_F_CURRENT_CPU, rec->buf, total);
	if (err) {
		bench_fail(st, type);
		if (err == -ENOSPC)
			st->err_full++;
		else if (err == -EBUSY)
			st->err_busy++;
		else if (err == -ENOENT)
			st->err_noent++;
		else
			st->err_other++;
	}
}

static __always_inline int do_fork(void *ctx, int tr, struct task_struct *child)
{
	bool thread = child->pid != child->tgid;
	__u16 type = thread ? SEQ_EV_THREAD_START : SEQ_EV_FORK;
	struct seq_scratch *rec;

	if (!seq_wanted(type))
		return 0;
	rec = seq_stage();
	if (!rec)
		return 0;
	seq_fill((struct seq_event *)&rec->buf[bench_off(tr)], child, type, !thread);
	bench_emit(ctx, tr, rec, sizeof(struct seq_event), type);
	return 0;
}

/* Exec: the filename only (no argv), so every record fits one sequencer slot. */
static __always_inline int do_exec(void *ctx, int tr, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 off = bench_off(tr);
	struct seq_scratch *rec;
	struct seq_event *e;
	__u64 flen;
	long n;

	if (!seq_wanted(SEQ_EV_EXEC))
		return 0;
	rec = seq_stage();
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
	e->filename_len = flen;
	e->args_len = 0;
	bench_emit(ctx, tr, rec, sizeof(*e) + flen, SEQ_EV_EXEC);
	return 0;
}

static __always_inline int do_exit(void *ctx, int tr, struct task_struct *p, bool group_dead)
{
	__u16 type = group_dead ? SEQ_EV_EXIT : SEQ_EV_THREAD_EXIT;
	struct seq_scratch *rec;
	struct seq_event *e;
	__u32 code;

	if (!seq_wanted(type))
		return 0;
	rec = seq_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)&rec->buf[bench_off(tr)];
	seq_fill(e, p, type, group_dead);
	code = p->exit_code;
	if (group_dead) {
		struct signal_struct *sig = p->signal;

		if (sig->flags & SIGNAL_GROUP_EXIT)
			code = sig->group_exit_code;
	}
	e->exit_code = code;
	bench_emit(ctx, tr, rec, sizeof(*e), type);
	return 0;
}

/*
 * The synthetic producer: every getpid() of the target process is one fixed,
 * one-slot event. Only what is at hand without touching the task: the point
 * is the transport's cost and capacity, not seq_fill's.
 */
static __always_inline int do_synth(void *ctx, int tr, long id)
{
	__u64 pid_tgid;
	struct seq_scratch *rec;
	struct seq_event *e;

	if (id != bench_synth_nr)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)(pid_tgid >> 32) != bench_target_tgid)
		return 0;
	if (!seq_wanted(SEQ_EV_SYNTH))
		return 0;
	rec = seq_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)&rec->buf[bench_off(tr)];
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->start_ns = 0;
	e->parent_start_ns = 0;
	e->cgroup_id = 0;
	e->type = SEQ_EV_SYNTH;
	e->flags = 0;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->ppid = 0;
	e->uid = 0;
	e->gid = 0;
	e->exit_code = 0;
	e->old_tid = 0;
	e->filename_len = 0;
	e->args_len = 0;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	e->sid = 0;
	e->_pad = 0;
	bench_emit(ctx, tr, rec, sizeof(*e), SEQ_EV_SYNTH);
	return 0;
}

#define BENCH_PROGS(prefix, tr)                                                                      \
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
	SEC("tp_btf/sys_enter")                                                                      \
	int BPF_PROG(prefix##_synth, struct pt_regs *regs, long id)                                  \
	{                                                                                            \
		return do_synth(ctx, tr, id);                                                        \
	}

BENCH_PROGS(seqb, T_SEQ)
BENCH_PROGS(rb, T_RB)
BENCH_PROGS(pb, T_PERF)
