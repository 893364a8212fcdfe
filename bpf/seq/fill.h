/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Filling struct seq_event from a task: shared by every producer of the
 * event (seq.bpf.c's lifecycle programs and its snapshot iterator, and the
 * benchmark's native ring and perf buffer programs), so that every
 * transport carries the same record. Include after vmlinux.h, bpf_core_read.h
 * and seq/seq.h.
 */
#ifndef SEQ_FILL_H
#define SEQ_FILL_H

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

/*
 * Fills the benchmark's synthetic record (SEQ_EV_SYNTH) of the calling
 * thread: only what is at hand without touching the task (the point is a
 * transport's cost and capacity, not seq_fill's).
 */
static __always_inline void seq_fill_synth(struct seq_event *e, __u64 pid_tgid)
{
	__builtin_memset(e, 0, sizeof(*e));
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->type = SEQ_EV_SYNTH;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
}

#endif
