/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/* A kprobe: fails to attach on kernels without CONFIG_KPROBES. */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_nanosleep_calls_total SEC(".maps");

SEC("kprobe/do_nanosleep")
int ebpfx_kprobe(void *ctx)
{
	u32 zero = 0;
	ebpfx_add(&ebpfx_nanosleep_calls_total, &zero, 1);
	return 0;
}
