/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/* A USDT program: refused by the receiver. */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} ebpfx_usdt_calls_total SEC(".maps");

SEC("usdt/libc.so.6:libc:setjmp")
int ebpfx_usdt(void *ctx)
{
	u32 zero = 0;
	ebpfx_add(&ebpfx_usdt_calls_total, &zero, 1);
	return 0;
}
