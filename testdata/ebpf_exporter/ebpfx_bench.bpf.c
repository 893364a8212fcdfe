/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The side-by-side benchmark's config (make bench-ebpf-exporter; see
 * ebpfx_bench.yaml): thousands of series created deterministically. A
 * getpgid(EBPFX_BENCH_MAGIC) call fills, in one bpf_loop, BENCH_COUNTERS
 * counter series keyed by (pid, syscall) and BENCH_HISTS exp2 histograms
 * keyed by pid (BENCH_BUCKETS buckets and the sum each), adding to what is
 * there: every call is one "round" of the same series with larger values.
 * Any other getpgid is ignored.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define EBPFX_BENCH_MAGIC 0x7eb0beef
#define BENCH_COUNTERS 16384
#define BENCH_SYSCALLS 4 /* syscalls per pid: BENCH_COUNTERS / 4 pids */
#define BENCH_HISTS 1024
#define BENCH_BUCKETS 16 /* exp2 buckets 0..15; the sum at 16 */
#define BENCH_PID0 100000

struct counter_key {
	u32 pid;
	u32 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BENCH_COUNTERS);
	__type(key, struct counter_key);
	__type(value, u64);
} ebpfx_bench_syscalls_total SEC(".maps");

struct hist_key {
	u32 pid;
	u32 bucket;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BENCH_HISTS *(BENCH_BUCKETS + 1));
	__type(key, struct hist_key);
	__type(value, u64);
} ebpfx_bench_latency_seconds SEC(".maps");

/* The syscall numbers the counters use, so that the syscall decoder names
 * them: read, write, close, clock_nanosleep. (A switch, not a const array:
 * clang puts that in .rodata.cst16, which libbpf cannot open.) */
static __always_inline u32 bench_nr(u32 i)
{
	switch (i % BENCH_SYSCALLS) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return 3;
	default:
		return 230;
	}
}

static long fill_counter(u32 i, void *ctx)
{
	struct counter_key key = {
		.pid = BENCH_PID0 + i / BENCH_SYSCALLS,
		.nr = bench_nr(i),
	};
	ebpfx_add(&ebpfx_bench_syscalls_total, &key, 1 + i % 7);
	return 0;
}

static long fill_hist(u32 i, void *ctx)
{
	u32 h = i / (BENCH_BUCKETS + 1);
	struct hist_key key = {
		.pid = BENCH_PID0 + h,
		.bucket = i % (BENCH_BUCKETS + 1),
	};
	/* The sum key (bucket 16) adds what the buckets' observations would. */
	u64 inc = key.bucket == BENCH_BUCKETS ? 1000 + h : 1 + (h + key.bucket) % 5;
	ebpfx_add(&ebpfx_bench_latency_seconds, &key, inc);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getpgid")
int ebpfx_bench_fill(struct { u64 common; int nr; u64 pid; } *ctx)
{
	if ((ctx->pid & 0xffffffff) != EBPFX_BENCH_MAGIC)
		return 0;
	bpf_loop(BENCH_COUNTERS, fill_counter, NULL, 0);
	bpf_loop(BENCH_HISTS * (BENCH_BUCKETS + 1), fill_hist, NULL, 0);
	return 0;
}
