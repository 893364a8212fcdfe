//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Process lifecycle producers for the sequencer ring (see seq.h for the protocol).
 *
 * Every event is staged in a per-CPU scratch buffer, then committed: one
 * fetch-add claims its tickets, each slot is marked "being written", filled,
 * and published last with an atomic exchange. Producers never wait for each
 * other or for the reader: no locks, no retry loops.
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "seq.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGNAL_GROUP_EXIT 0x00000004

/* Set by the loader before the programs are loaded. */
volatile const __u64 seq_ring_mask = 0;
volatile const __u32 seq_event_mask = (1 << SEQ_EV_FORK) | (1 << SEQ_EV_EXEC) | (1 << SEQ_EV_EXIT);
volatile const __u32 seq_max_args = 1024;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seq_ctl);
} seq_control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 65536); /* replaced by the loader: the configured ring size */
	__type(key, __u32);
	__type(value, struct seq_slot);
} seq_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seq_stats);
} seq_counters SEC(".maps");

struct seq_scratch {
	__u8 buf[SEQ_SCRATCH];
} __attribute__((aligned(8)));

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seq_scratch);
} seq_scratchbuf SEC(".maps");

/* The doorbell: one 8-byte record wakes a parked reader; never one per event. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} seq_doorbell SEC(".maps");

static __always_inline void seq_doorbell_ring(struct seq_ctl *ctl, struct seq_stats *st)
{
	__u64 one = 1;

	/* A plain read first: the flag's cache line stays shared while the reader is awake. */
	if (!*(volatile __u64 *)&ctl->parked)
		return;
	/* Only the producer that takes the flag rings; the others see 0. */
	if (!__sync_lock_test_and_set(&ctl->parked, 0))
		return;
	if (bpf_ringbuf_output(&seq_doorbell, &one, sizeof(one), BPF_RB_FORCE_WAKEUP))
		st->doorbell_failed++;
	else
		st->doorbells++;
}

/* Copies payload chunk i of the staged record into a slot, eight bytes at a time. */
static __always_inline void seq_copy_payload(struct seq_slot *s, struct seq_scratch *rec, __u32 i)
{
	__u64 *dst = (__u64 *)s->data;
	__u64 *src = (__u64 *)&rec->buf[i * SEQ_SLOT_PAYLOAD];

#pragma unroll
	for (int j = 0; j < SEQ_SLOT_PAYLOAD / 8; j++)
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
static __always_inline bool seq_own(struct seq_slot *s, __u64 t)
{
	__u64 old = *(volatile __u64 *)&s->seq;

	if (old & SEQ_WRITING || old > t)
		return false;
	return __sync_val_compare_and_swap(&s->seq, old, (t + 1) | SEQ_WRITING) == old;
}

/* Claims the tickets for a staged record of len bytes and publishes it slot by slot. */
static __always_inline void seq_commit(struct seq_scratch *rec, __u32 len, __u16 type)
{
	__u32 zero = 0;
	struct seq_ctl *ctl;
	struct seq_stats *st;
	__u32 n, i;
	__u64 t0;

	ctl = bpf_map_lookup_elem(&seq_control, &zero);
	st = bpf_map_lookup_elem(&seq_counters, &zero);
	if (!ctl || !st)
		return;

	n = (len + SEQ_SLOT_PAYLOAD - 1) / SEQ_SLOT_PAYLOAD;
	if (n == 0)
		n = 1;
	if (n > SEQ_MAX_SLOTS)
		n = SEQ_MAX_SLOTS;
	/* Hide n's bound from clang so that it keeps the i < SEQ_MAX_SLOTS test the verifier needs. */
	asm volatile("" : "+r"(n));

	t0 = __sync_fetch_and_add(&ctl->head, n);

	for (i = 0; i < SEQ_MAX_SLOTS; i++) {
		struct seq_slot *s;
		__u64 t = t0 + i;
		__u32 idx;

		if (i >= n)
			break;
		idx = t & seq_ring_mask;
		s = bpf_map_lookup_elem(&seq_slots, &idx);
		if (!s) {
			/* Cannot happen for idx < max_entries; the reader counts the ticket lost. */
			st->no_slot++;
			continue;
		}
		if (!seq_own(s, t)) {
			/* A stalled older writer holds the slot, or a newer ticket is already
			 * there: the ring was lapped. Skip it; the reader counts it lost. */
			st->overrun++;
			continue;
		}
		s->len = len;
		s->nslots = n;
		s->index = i;
		seq_copy_payload(s, rec, i);
		__sync_lock_test_and_set(&s->seq, t + 1);
	}

	if (type < SEQ_EV_MAX) {
		st->events[type]++;
		st->tickets[type] += n;
	}
	seq_doorbell_ring(ctl, st);
}

static __always_inline struct seq_scratch *seq_stage(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&seq_scratchbuf, &zero);
}

static __always_inline bool seq_wanted(__u16 type)
{
	return seq_event_mask & (1 << type);
}

/* Fills the fixed part of an event about task. */
static __always_inline void seq_fill(struct seq_event *e, struct task_struct *task, __u16 type, bool process)
{
	struct task_struct *parent = task->real_parent;
	const struct cred *cred = task->cred;

	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->start_ns = process ? task->group_leader->start_boottime : task->start_boottime;
	e->parent_start_ns = parent->group_leader->start_boottime;
	e->cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	e->type = type;
	e->flags = 0;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = task->tgid;
	e->tid = task->pid;
	e->ppid = parent->tgid;
	e->uid = cred->uid.val;
	e->gid = cred->gid.val;
	e->exit_code = 0;
	e->old_tid = 0;
	e->filename_len = 0;
	e->args_len = 0;
	bpf_probe_read_kernel(e->comm, sizeof(e->comm), task->comm);
	e->sid = BPF_CORE_READ(task, signal, pids[PIDTYPE_SID], numbers[0].nr);
	e->_pad = 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(seq_fork, struct task_struct *parent, struct task_struct *child)
{
	bool thread = child->pid != child->tgid;
	__u16 type = thread ? SEQ_EV_THREAD_START : SEQ_EV_FORK;
	struct seq_scratch *rec;

	if (!seq_wanted(type))
		return 0;
	rec = seq_stage();
	if (!rec)
		return 0;
	seq_fill((struct seq_event *)rec->buf, child, type, !thread);
	seq_commit(rec, sizeof(struct seq_event), type);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(seq_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct seq_scratch *rec;
	struct seq_event *e;
	unsigned long start, end;
	__u64 flen, alen;
	long n;

	if (!seq_wanted(SEQ_EV_EXEC))
		return 0;
	rec = seq_stage();
	if (!rec)
		return 0;
	e = (struct seq_event *)rec->buf;
	seq_fill(e, p, SEQ_EV_EXEC, true);
	e->old_tid = old_pid;

	n = bpf_probe_read_kernel_str(&rec->buf[sizeof(*e)], SEQ_MAX_FILENAME, bprm->filename);
	flen = n > 0 ? n - 1 : 0;
	if (n == SEQ_MAX_FILENAME)
		e->flags |= SEQ_F_FILENAME_TRUNCATED;
	if (flen >= SEQ_MAX_FILENAME)
		flen = SEQ_MAX_FILENAME - 1;

	start = BPF_CORE_READ(p, mm, arg_start);
	end = BPF_CORE_READ(p, mm, arg_end);
	alen = end > start ? end - start : 0;
	if (alen > seq_max_args) {
		alen = seq_max_args;
		e->flags |= SEQ_F_ARGS_TRUNCATED;
	}
	if (alen > SEQ_MAX_ARGS)
		alen = SEQ_MAX_ARGS;
	if (alen && bpf_probe_read_user(&rec->buf[sizeof(*e) + flen], alen, (void *)start)) {
		alen = 0;
		e->flags |= SEQ_F_ARGS_UNREADABLE;
	}
	e->filename_len = flen;
	e->args_len = alen;
	seq_commit(rec, sizeof(*e) + flen + alen, SEQ_EV_EXEC);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(seq_exit, struct task_struct *p, bool group_dead)
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
	e = (struct seq_event *)rec->buf;
	seq_fill(e, p, type, group_dead);
	code = p->exit_code;
	if (group_dead) {
		struct signal_struct *sig = p->signal;

		if (sig->flags & SIGNAL_GROUP_EXIT)
			code = sig->group_exit_code;
	}
	e->exit_code = code;
	seq_commit(rec, sizeof(*e), type);
	return 0;
}

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
	seq_fill(&e, task, SEQ_EV_SNAPSHOT, true);
	e.ktime_ns = task->start_boottime;
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
