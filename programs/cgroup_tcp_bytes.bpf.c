/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * TCP bytes sent and received by cgroup, without kprobes: the
 * sock:sock_send_length and sock:sock_recv_length tracepoints (Linux 6.3+)
 * fire in the sending / receiving task's context after every
 * sock_sendmsg / sock_recvmsg, with the byte count (or -errno) in ret.
 * Only AF_INET / AF_INET6 sockets of protocol TCP count; MSG_PEEK reads
 * are not counted (the same bytes are read again later).
 */
#include "programs.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define MSG_PEEK 2

#define DIR_SENT 0
#define DIR_RECEIVED 1

struct cgroup_dir_key {
	u64 cgroup_id;
	u8 direction;
	u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cgroup_dir_key);
	__type(value, u64);
} cgroup_tcp_bytes_total SEC(".maps");

static __always_inline int count(struct trace_event_raw_sock_msg_length *ctx, u8 direction)
{
	if (ctx->ret <= 0)
		return 0;
	if (ctx->family != AF_INET && ctx->family != AF_INET6)
		return 0;
	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	if (direction == DIR_RECEIVED && (ctx->flags & MSG_PEEK))
		return 0;

	struct cgroup_dir_key key = {};
	key.cgroup_id = bpf_get_current_cgroup_id();
	key.direction = direction;
	add_u64(&cgroup_tcp_bytes_total, &key, ctx->ret);
	return 0;
}

SEC("tracepoint/sock/sock_send_length")
int cgroup_tcp_sent(struct trace_event_raw_sock_msg_length *ctx)
{
	return count(ctx, DIR_SENT);
}

SEC("tracepoint/sock/sock_recv_length")
int cgroup_tcp_received(struct trace_event_raw_sock_msg_length *ctx)
{
	return count(ctx, DIR_RECEIVED);
}
