/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The same count (getppid calls by process) from a raw_tp/ and a tp_btf/
 * program, to check both attach paths.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define PID_MAP(name)                                                                                               \
	struct {                                                                                                    \
		__uint(type, BPF_MAP_TYPE_HASH);                                                                    \
		__uint(max_entries, 1024);                                                                          \
		__type(key, u32);                                                                                   \
		__type(value, u64);                                                                                 \
	} name SEC(".maps")

PID_MAP(ebpfx_raw_tp_getppid_total);
PID_MAP(ebpfx_tp_btf_getppid_total);

SEC("raw_tp/sys_enter")
int BPF_PROG(ebpfx_raw_tp_sys_enter, struct pt_regs *regs, long id)
{
	if (id != EBPFX_NR_GETPPID)
		return 0;
	u32 pid = ebpfx_tgid();
	ebpfx_add(&ebpfx_raw_tp_getppid_total, &pid, 1);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(ebpfx_tp_btf_sys_enter, struct pt_regs *regs, long id)
{
	if (id != EBPFX_NR_GETPPID)
		return 0;
	u32 pid = ebpfx_tgid();
	ebpfx_add(&ebpfx_tp_btf_getppid_total, &pid, 1);
	return 0;
}
