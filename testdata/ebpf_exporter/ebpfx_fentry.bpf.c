/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * An fentry program: fails where BPF trampolines are refused.
 * Counts getpriority calls by process and thread name: the integration
 * test makes an exact number of getpriority calls from a thread it names.
 * Why getpriority: see ebpfx_kprobe.bpf.c.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct task_key {
	u32 pid;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct task_key);
	__type(value, u64);
} ebpfx_getpriority_calls_total SEC(".maps");

SEC("fentry/" EBPFX_SYS_GETPRIORITY)
int ebpfx_fentry(void *ctx)
{
	struct task_key key = {};
	key.pid = ebpfx_tgid();
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	ebpfx_add(&ebpfx_getpriority_calls_total, &key, 1);
	return 0;
}
