//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The benchmark's native arms (tools/seqbench: ringbuf-native,
 * perfbuf-native): the process lifecycle records written as a user of
 * BPF_RINGBUF or of perf buffers writes them, with nothing of the
 * sequencer's: no ticket, no control block, no staging buffer.
 *
 *   rb_*  bpf_ringbuf_reserve() a fixed record, fill it in place,
 *         bpf_ringbuf_submit() it with flags 0 (the kernel wakes the reader
 *         when it has caught up); a failed reservation is counted.
 *   pb_*  fill a fixed record in a per-CPU scratch map,
 *         bpf_perf_event_output() it to this CPU's buffer; a failed output is
 *         counted.
 *
 * The record is the sequencer's own struct seq_event, filled by the same
 * seq_fill() (seq/fill.h), so that both carry the same information and the
 * reader decodes both alike (internal/event). What differs from the
 * sequencer's records (bpf/seq/seq.bpf.c, run by seqbench without argv):
 *   - an exec record is fixed: struct seq_event and a 256-byte filename
 *     array (352 bytes), where the sequencer copies the filename's own bytes
 *     (96 + its length: one 128-byte slot for a short path). A reservation's
 *     size is a constant, so a ring buffer user reserves the largest record.
 *   - an exit's status is the exiting task's exit_code, where the sequencer
 *     takes the group's status after exit_group() or a fatal signal.
 *   - the exit of a process is told by sched_process_exit's group_dead
 *     (Linux 6.16+); before that by the exit of its thread-group leader (as
 *     libbpf-tools' exitsnoop does), where the sequencer claims the last
 *     thread's exit in an LRU map. The two agree on single-threaded
 *     processes, the only ones the benchmark's workloads run.
 *   - the synthetic producer attaches alone, without the lifecycle programs
 *     (the sequencer's stay attached, their events masked off).
 *
 * Counted per CPU (native_counters): every record a program tries to emit
 * and every one whose reservation or output failed, so that the reader can
 * account for each: attempted = delivered + failed.
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "ring/ring.h"
#include "seq/seq.h"
#include "seq/fill.h"

char LICENSE[] SEC("license") = "GPL"; /* GPL-2.0-only, one of the two licenses above */

#define ENOSPC 28

/* Set by the loader: every system call native_synth_nr made by process
 * native_synth_tgid is one fixed record of type SEQ_EV_SYNTH. */
volatile const __u32 native_synth_tgid = 0;
volatile const __s64 native_synth_nr = -1;

/* native_counters (map): one per CPU. */
struct native_stats {
	__u64 attempted;    /* records the programs tried to emit */
	__u64 failed;       /* ... whose bpf_ringbuf_reserve() or bpf_perf_event_output() failed */
	__u64 failed_nospc; /* perf: ... with -ENOSPC, which the kernel also counts lost for the reader */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct native_stats);
} native_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* replaced by the loader */
} native_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} native_perf SEC(".maps");

/* An exec record: the event and its filename (filename_len bytes of it, no NUL). */
struct native_exec {
	struct seq_event e;
	char filename[SEQ_MAX_FILENAME];
};

/* perf: where a record is filled before it is output (the largest, an exec's). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct native_exec);
} native_scratch SEC(".maps");

enum native_transport {
	N_RB = 0,
	N_PERF = 1,
};

/* Where a record of size bytes is filled: ring buffer memory reserved for it,
 * or this CPU's scratch record. NULL (counted) when there is none. tr and
 * size are constants at every call: each program keeps only its branch. */
static __always_inline void *native_begin(int tr, __u32 size, struct native_stats **stp)
{
	struct native_stats *st;
	__u32 zero = 0;
	void *rec;

	st = bpf_map_lookup_elem(&native_counters, &zero);
	if (!st)
		return NULL;
	*stp = st;
	if (tr == N_PERF) {
		rec = bpf_map_lookup_elem(&native_scratch, &zero);
		if (rec)
			st->attempted++;
		return rec;
	}
	st->attempted++;
	rec = bpf_ringbuf_reserve(&native_rb, size, 0);
	if (!rec)
		st->failed++;
	return rec;
}

/* Hands the filled record to the reader. */
static __always_inline void native_end(void *ctx, int tr, void *rec, __u32 size, struct native_stats *st)
{
	long err;

	if (tr == N_RB) {
		bpf_ringbuf_submit(rec, 0);
		return;
	}
	err = bpf_perf_event_output(ctx, &native_perf, BPF_F_CURRENT_CPU, rec, size);
	if (err) {
		st->failed++;
		if (err == -ENOSPC)
			st->failed_nospc++;
	}
}

static __always_inline int native_fork(void *ctx, int tr, struct task_struct *child)
{
	struct native_stats *st;
	struct seq_event *e;

	/* A new thread: not a process event (the sequencer's event mask drops these). */
	if (child->pid != child->tgid)
		return 0;
	e = native_begin(tr, sizeof(*e), &st);
	if (!e)
		return 0;
	seq_fill(e, child, SEQ_EV_FORK, true);
	native_end(ctx, tr, e, sizeof(*e), st);
	return 0;
}

static __always_inline int native_exec(void *ctx, int tr, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct native_stats *st;
	struct native_exec *x;
	long n;

	x = native_begin(tr, sizeof(*x), &st);
	if (!x)
		return 0;
	seq_fill(&x->e, p, SEQ_EV_EXEC, true);
	x->e.old_tid = old_pid;
	n = bpf_probe_read_kernel_str(x->filename, sizeof(x->filename), bprm->filename);
	if (n == sizeof(x->filename))
		x->e.flags |= SEQ_F_FILENAME_TRUNCATED;
	x->e.filename_len = n > 0 ? n - 1 : 0;
	native_end(ctx, tr, x, sizeof(*x), st);
	return 0;
}

static __always_inline int native_exit(void *ctx, int tr, struct task_struct *p)
{
	struct native_stats *st;
	struct seq_event *e;

	e = native_begin(tr, sizeof(*e), &st);
	if (!e)
		return 0;
	seq_fill(e, p, SEQ_EV_EXIT, true);
	e->exit_code = p->exit_code;
	native_end(ctx, tr, e, sizeof(*e), st);
	return 0;
}

/* The synthetic producer: the sequencer's do_synth() record. */
static __always_inline int native_synth(void *ctx, int tr, long id)
{
	struct native_stats *st;
	struct seq_event *e;
	__u64 pid_tgid;

	if (id != native_synth_nr)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)(pid_tgid >> 32) != native_synth_tgid)
		return 0;
	e = native_begin(tr, sizeof(*e), &st);
	if (!e)
		return 0;
	seq_fill_synth(e, pid_tgid);
	native_end(ctx, tr, e, sizeof(*e), st);
	return 0;
}

#define NATIVE_PROGS(prefix, tr)                                                                     \
	SEC("tp_btf/sched_process_fork")                                                             \
	int BPF_PROG(prefix##_fork, struct task_struct *parent, struct task_struct *child)           \
	{                                                                                            \
		return native_fork(ctx, tr, child);                                                  \
	}                                                                                            \
	SEC("tp_btf/sched_process_exec")                                                             \
	int BPF_PROG(prefix##_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) \
	{                                                                                            \
		return native_exec(ctx, tr, p, old_pid, bprm);                                       \
	}                                                                                            \
	SEC("tp_btf/sched_process_exit")                                                             \
	int BPF_PROG(prefix##_exit, struct task_struct *p, bool group_dead)                          \
	{                                                                                            \
		return group_dead ? native_exit(ctx, tr, p) : 0;                                     \
	}                                                                                            \
	/* The same without group_dead (before Linux 6.16): the loader picks one. */                 \
	SEC("tp_btf/sched_process_exit")                                                             \
	int BPF_PROG(prefix##_exit_leader, struct task_struct *p)                                    \
	{                                                                                            \
		return p->pid == p->tgid ? native_exit(ctx, tr, p) : 0;                              \
	}                                                                                            \
	SEC("tp_btf/sys_enter")                                                                      \
	int BPF_PROG(prefix##_synth, struct pt_regs *regs, long id)                                  \
	{                                                                                            \
		return native_synth(ctx, tr, id);                                                    \
	}

NATIVE_PROGS(rb, N_RB)
NATIVE_PROGS(pb, N_PERF)
