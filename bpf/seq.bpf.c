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
#include "seq_ring.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGNAL_GROUP_EXIT 0x00000004

/* Set by the loader before the programs are loaded. */
/* Set by the loader before the programs are loaded (and seq_ring_mask, in seq_ring.h). */
volatile const __u32 seq_event_mask = (1 << SEQ_EV_FORK) | (1 << SEQ_EV_EXEC) | (1 << SEQ_EV_EXIT);
volatile const __u32 seq_max_args = 1024;

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
		if (seq_max_args)
			e->flags |= SEQ_F_ARGS_TRUNCATED;
		alen = seq_max_args;
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
	/* A zombie (every thread exited, not yet reaped) is not running: its exit
	 * happened before our tracepoints were attached. */
	if (!BPF_CORE_READ(task, signal, live.counter))
		return 0;
	seq_fill(&e, task, SEQ_EV_SNAPSHOT, true);
	e.ktime_ns = task->start_boottime;
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
