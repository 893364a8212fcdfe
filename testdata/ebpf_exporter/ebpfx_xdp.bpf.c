/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * XDP on the loopback device (SEC("xdp/lo")): counts packets by interface
 * (ifname decoder) and IP protocol (static_map decoder); passes all.
 */
#include "ebpfx.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct xdp_key {
	u32 ifindex;
	u8 proto;
	u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct xdp_key);
	__type(value, u64);
} ebpfx_xdp_packets_total SEC(".maps");

SEC("xdp/lo")
int ebpfx_xdp_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xdp_key key = {};

	key.ifindex = ctx->ingress_ifindex;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(0x0800)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end)
			return XDP_PASS;
		key.proto = ip->protocol;
	}
	ebpfx_add(&ebpfx_xdp_packets_total, &key, 1);
	return XDP_PASS;
}
