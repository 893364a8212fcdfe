/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A config with one program this kernel cannot attach (a kprobe, without
 * CONFIG_KPROBES) next to one it can (a tracepoint): by default the
 * tracepoint runs and the kprobe is reported; with strict: true the config
 * fails. The kprobe is on getpriority, which nothing else calls (see
 * ebpfx_kprobe.bpf.c).
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} ebpfx_partial_getppid_total SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_partial_getpriority_total SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int ebpfx_partial_getppid(void *ctx)
{
	u32 tgid = ebpfx_tgid();
	ebpfx_add(&ebpfx_partial_getppid_total, &tgid, 1);
	return 0;
}

SEC("kprobe/" EBPFX_SYS_GETPRIORITY)
int ebpfx_partial_kprobe(void *ctx)
{
	u32 zero = 0;
	ebpfx_add(&ebpfx_partial_getpriority_total, &zero, 1);
	return 0;
}
