/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * tracing.spans fixture, modelled on ebpf_exporter's examples/exec-trace
 * (a span per process, from exec to exit) with a child span per
 * clock_nanosleep call of that process. Only processes whose comm after
 * exec is "ebpfx_spanwork" are traced, so the test controls the workload.
 *
 * The records start with ebpf_exporter's span_base_t (examples/tracing.bpf.h):
 * trace id (hi, lo), parent span id, span id, CLOCK_MONOTONIC start
 * (bpf_ktime_get_ns) and duration, each cut into the labels of the same
 * names by the yaml.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct span_parent_t {
	u64 trace_id_hi;
	u64 trace_id_lo;
	u64 span_id;
};

struct span_base_t {
	struct span_parent_t parent;
	u64 span_id;
	u64 span_monotonic_timestamp_ns;
	u64 span_duration_ns;
};

/* 72 bytes: span base, comm (span_name), pid + 4 bytes of padding. */
struct process_span_t {
	struct span_base_t span_base;
	char comm[16];
	u32 pid;
	u32 pad;
};

/* 64 bytes: span base, syscall number, pid, tid. */
struct syscall_span_t {
	struct span_base_t span_base;
	u64 nr;
	u32 pid;
	u32 tid;
};

struct inflight_t {
	u64 ts;
	u64 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct process_span_t);
} traced_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, struct inflight_t);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} process_spans SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} syscall_spans SEC(".maps");

static const char traced_comm[] = "ebpfx_spanwork";

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ebpfx_span_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct process_span_t span = {};
	u64 ts = bpf_ktime_get_ns();
	u32 tgid = p->tgid;

	bpf_get_current_comm(span.comm, sizeof(span.comm));
	for (int i = 0; i < sizeof(traced_comm); i++) {
		if (span.comm[i] != traced_comm[i])
			return 0;
	}
	span.span_base.parent.trace_id_hi = tgid;
	span.span_base.parent.trace_id_lo = ts;
	span.span_base.span_id = ts;
	span.span_base.span_monotonic_timestamp_ns = ts;
	span.pid = tgid;
	bpf_map_update_elem(&traced_tgids, &tgid, &span, BPF_ANY);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(ebpfx_span_sys_enter, struct pt_regs *regs, long id)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32, tid = (u32)pid_tgid;
	struct inflight_t in = {};

	if (id != EBPFX_NR_CLOCK_NANOSLEEP || !bpf_map_lookup_elem(&traced_tgids, &tgid))
		return 0;
	in.ts = bpf_ktime_get_ns();
	in.nr = id;
	bpf_map_update_elem(&inflight, &tid, &in, BPF_ANY);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(ebpfx_span_sys_exit, struct pt_regs *regs, long ret)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32, tid = (u32)pid_tgid;
	struct process_span_t *parent;
	struct syscall_span_t *span;
	struct inflight_t *in;

	in = bpf_map_lookup_elem(&inflight, &tid);
	if (!in)
		return 0;
	parent = bpf_map_lookup_elem(&traced_tgids, &tgid);
	if (!parent)
		goto out;
	span = bpf_ringbuf_reserve(&syscall_spans, sizeof(*span), 0);
	if (!span)
		goto out;
	span->span_base.parent.trace_id_hi = parent->span_base.parent.trace_id_hi;
	span->span_base.parent.trace_id_lo = parent->span_base.parent.trace_id_lo;
	span->span_base.parent.span_id = parent->span_base.span_id;
	span->span_base.span_id = in->ts;
	span->span_base.span_monotonic_timestamp_ns = in->ts;
	span->span_base.span_duration_ns = bpf_ktime_get_ns() - in->ts;
	span->nr = in->nr;
	span->pid = tgid;
	span->tid = tid;
	bpf_ringbuf_submit(span, 0);
out:
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ebpfx_span_exit, struct task_struct *p)
{
	u32 tgid = p->tgid;
	struct process_span_t *span, *submit;

	if (p->pid != p->tgid)
		return 0;
	span = bpf_map_lookup_elem(&traced_tgids, &tgid);
	if (!span)
		return 0;
	span->span_base.span_duration_ns = bpf_ktime_get_ns() - span->span_base.span_monotonic_timestamp_ns;
	submit = bpf_ringbuf_reserve(&process_spans, sizeof(*submit), 0);
	if (submit) {
		*submit = *span;
		bpf_ringbuf_submit(submit, 0);
	}
	bpf_map_delete_elem(&traced_tgids, &tgid);
	return 0;
}
