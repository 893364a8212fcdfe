/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Histograms in ebpf_exporter format (see ebpfx_histograms.yaml). The
 * observed value is the pid argument of getpgid / getsid, so tests choose
 * exactly which bucket every observation lands in. Each histogram keeps the
 * sum of the values at key bucket_max + 1.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct hist_key {
	u32 pid;
	u32 bucket;
};

#define HIST_MAP(name)                                                                                              \
	struct {                                                                                                    \
		__uint(type, BPF_MAP_TYPE_HASH);                                                                    \
		__uint(max_entries, 4096);                                                                          \
		__type(key, struct hist_key);                                                                       \
		__type(value, u64);                                                                                 \
	} name SEC(".maps")

HIST_MAP(ebpfx_getpgid_arg_exp2);
HIST_MAP(ebpfx_getpgid_arg_exp2zero);
HIST_MAP(ebpfx_getsid_arg_linear);
HIST_MAP(ebpfx_getsid_arg_fixed);

#define EXP2_MAX 20
#define LINEAR_MAX 10

/* observe adds one observation to bucket and v to the sum key. */
static __always_inline void observe(void *map, u32 pid, u32 bucket, u32 sum_bucket, u64 v)
{
	struct hist_key key = { .pid = pid, .bucket = bucket };
	ebpfx_add(map, &key, 1);
	key.bucket = sum_bucket;
	ebpfx_add(map, &key, v);
}

/* syscalls:sys_enter_getpgid / sys_enter_getsid context. */
struct pid_arg_ctx {
	u64 common;
	int nr;
	u64 pid;
};

SEC("tracepoint/syscalls/sys_enter_getpgid")
int ebpfx_getpgid(struct pid_arg_ctx *ctx)
{
	u64 v = ctx->pid & 0xffffffff;
	u32 pid = ebpfx_tgid();
	u32 b;

	/* exp2: bucket floor(log2(v)), capped at EXP2_MAX. */
	b = ebpfx_log2(v);
	if (b > EXP2_MAX)
		b = EXP2_MAX;
	observe(&ebpfx_getpgid_arg_exp2, pid, b, EXP2_MAX + 1, v);

	/* exp2zero: bucket 0 for zero, floor(log2(v)) + 1 otherwise. */
	b = v == 0 ? 0 : ebpfx_log2(v) + 1;
	if (b > EXP2_MAX)
		b = EXP2_MAX;
	observe(&ebpfx_getpgid_arg_exp2zero, pid, b, EXP2_MAX + 1, v);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getsid")
int ebpfx_getsid(struct pid_arg_ctx *ctx)
{
	u64 v = ctx->pid & 0xffffffff;
	u32 pid = ebpfx_tgid();
	u32 b;

	/* linear: bucket v, capped at LINEAR_MAX. */
	b = v > LINEAR_MAX ? LINEAR_MAX : v;
	observe(&ebpfx_getsid_arg_linear, pid, b, LINEAR_MAX + 1, v);

	/* fixed, bucket_keys [1, 10, 100, 1000]: the first key >= v. */
	if (v <= 1)
		b = 1;
	else if (v <= 10)
		b = 10;
	else if (v <= 100)
		b = 100;
	else
		b = 1000;
	observe(&ebpfx_getsid_arg_fixed, pid, b, 1001, v);
	return 0;
}
