/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Counters in ebpf_exporter format, driven by getppid/getpgid/getsid
 * (see ebpfx_counters.yaml): several labels with decoder chains, a map
 * with no labels, per-CPU maps with and without a cpu label, regexp and
 * static_map decoders, a cgroup label and a kaddrs/ksym label.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ebpfx_syscalls_total{pid, syscall, errno, comm} */
struct syscall_key {
	u32 pid;
	u32 nr;
	u32 err;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct syscall_key);
	__type(value, u64);
} ebpfx_syscalls_total SEC(".maps");

/* ebpfx_getppid_calls_total (no labels: key uint32(0)) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_getppid_calls_total SEC(".maps");

/* ebpfx_getppid_by_comm_total{comm} with a regexp keeping "ebpfx-*" */
struct comm_key {
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct comm_key);
	__type(value, u64);
} ebpfx_getppid_by_comm_total SEC(".maps");

/* ebpfx_getppid_per_cpu_total{pid, cpu}: per-CPU, last label cpu */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} ebpfx_getppid_per_cpu_total SEC(".maps");

/* ebpfx_getppid_cpu_only_total{cpu}: per-CPU array, only label cpu */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_getppid_cpu_only_total SEC(".maps");

/* ebpfx_getppid_percpu_sum_total: per-CPU array, no labels (summed) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_getppid_percpu_sum_total SEC(".maps");

/* ebpfx_getppid_by_cgroup_total{cgroup} */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u64);
	__type(value, u64);
} ebpfx_getppid_by_cgroup_total SEC(".maps");

/* ebpfx_kaddr_total{symbol, kind}: kaddr_do_nanosleep through ksym, and a
 * one-byte kind padded to 8 bytes through static_map. */
struct kaddr_key {
	u64 addr;
	u8 kind;
	u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct kaddr_key);
	__type(value, u64);
} ebpfx_kaddr_total SEC(".maps");

/* Filled in by the exporter from kaddrs. */
const volatile u64 kaddr_do_nanosleep = 0;

SEC("tracepoint/raw_syscalls/sys_exit")
int ebpfx_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	long nr = ctx->id;
	if (nr != EBPFX_NR_GETPPID && nr != EBPFX_NR_GETPGID && nr != EBPFX_NR_GETSID)
		return 0;

	struct syscall_key key = {};
	key.pid = ebpfx_tgid();
	key.nr = nr;
	key.err = ctx->ret < 0 ? -ctx->ret : 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	ebpfx_add(&ebpfx_syscalls_total, &key, 1);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int ebpfx_getppid(void *ctx)
{
	u32 zero = 0;
	u32 pid = ebpfx_tgid();
	u64 *v;

	ebpfx_add(&ebpfx_getppid_calls_total, &zero, 1);

	struct comm_key ck = {};
	bpf_get_current_comm(&ck.comm, sizeof(ck.comm));
	ebpfx_add(&ebpfx_getppid_by_comm_total, &ck, 1);

	v = bpf_map_lookup_elem(&ebpfx_getppid_per_cpu_total, &pid);
	if (v) {
		*v += 1;
	} else {
		u64 one = 1;
		bpf_map_update_elem(&ebpfx_getppid_per_cpu_total, &pid, &one, BPF_NOEXIST);
	}

	v = bpf_map_lookup_elem(&ebpfx_getppid_cpu_only_total, &zero);
	if (v)
		*v += 1;
	v = bpf_map_lookup_elem(&ebpfx_getppid_percpu_sum_total, &zero);
	if (v)
		*v += 1;

	u64 cg = bpf_get_current_cgroup_id();
	ebpfx_add(&ebpfx_getppid_by_cgroup_total, &cg, 1);

	struct kaddr_key kk = {};
	kk.addr = kaddr_do_nanosleep;
	kk.kind = 1;
	ebpfx_add(&ebpfx_kaddr_total, &kk, 1);
	return 0;
}
