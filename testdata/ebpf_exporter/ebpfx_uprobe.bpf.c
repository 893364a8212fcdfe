/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A uprobe on libc's getppid (the library is found the way libbpf finds
 * it: LD_LIBRARY_PATH, /usr/lib64:/usr/lib, then the multiarch
 * directories), counting calls by process.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} ebpfx_libc_getppid_calls_total SEC(".maps");

SEC("uprobe/libc.so.6:getppid")
int ebpfx_uprobe_getppid(void *ctx)
{
	u32 pid = ebpfx_tgid();
	ebpfx_add(&ebpfx_libc_getppid_calls_total, &pid, 1);
	return 0;
}
