/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Run queue latency: the time from a task becoming runnable (woken up,
 * newly created, or preempted while still runnable) to it running on a
 * CPU, as a power-of-two histogram in microseconds (exported in seconds).
 * BTF tracepoints (tp_btf/) on sched_wakeup, sched_wakeup_new and
 * sched_switch; no kprobes needed.
 */
#include "programs.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0
#define MAX_BUCKET 26 /* 2^26 us = 67 s */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u64);
} runq_enqueued_at SEC(".maps");

struct bucket_key {
	u32 bucket;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_BUCKET + 2);
	__type(key, struct bucket_key);
	__type(value, u64);
} run_queue_latency_seconds SEC(".maps");

static __always_inline void enqueued(struct task_struct *p)
{
	u32 pid = p->pid;
	u64 ts;

	if (!pid)
		return;
	ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&runq_enqueued_at, &pid, &ts, BPF_ANY);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runq_wakeup, struct task_struct *p)
{
	enqueued(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runq_wakeup_new, struct task_struct *p)
{
	enqueued(p);
	return 0;
}

/* Linux 5.14 renamed task_struct's state to __state: the kernel's own name,
 * found by CO-RE, so that the program loads before and after. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *p)
{
	struct task_struct___pre514 *old = (void *)p;

	if (bpf_core_field_exists(old->state))
		return BPF_CORE_READ(old, state);
	return BPF_CORE_READ(p, __state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(runq_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	u32 pid;
	u64 *start, delta_us;
	struct bucket_key key;

	/* A task switched out while still runnable waits in the queue again. */
	if (task_state(prev) == TASK_RUNNING)
		enqueued(prev);

	pid = next->pid;
	start = bpf_map_lookup_elem(&runq_enqueued_at, &pid);
	if (!start)
		return 0;
	delta_us = (bpf_ktime_get_ns() - *start) / 1000;
	bpf_map_delete_elem(&runq_enqueued_at, &pid);

	key.bucket = log2_u64(delta_us);
	if (key.bucket > MAX_BUCKET)
		key.bucket = MAX_BUCKET;
	u64 *v = bpf_map_lookup_elem(&run_queue_latency_seconds, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	key.bucket = MAX_BUCKET + 1; /* the sum, in microseconds */
	v = bpf_map_lookup_elem(&run_queue_latency_seconds, &key);
	if (v)
		__sync_fetch_and_add(v, delta_us);
	return 0;
}
