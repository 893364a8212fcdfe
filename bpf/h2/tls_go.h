/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Go crypto/tls (the loader finds the probe points by disassembly:
 * receiver/grpcreceiver/internal/gotls). Go's register ABI (amd64, Go
 * 1.17+; arm64, Go 1.18+): at entry the receiver is in the first integer
 * register (RAX; R0) and the slice b in the next two (RBX, RCX; R1, R2:
 * pointer, length); at a RET n is in the first and the error's itab in the
 * second (0: nil); the goroutine (g) is always in R14 (R28 on arm64): the
 * H2_GO_* of arch.h. The entry probes sit after the
 * prologue's stack check: a goroutine whose stack must grow starts the
 * function over, and would be seen twice at its first instruction.
 *
 * (*Conn).Write: one uprobe, the bytes walked there, before they are sent
 * (len(b): Write sends all of b or fails, and after a failure every later
 * Write fails too). Walked at the return, they could be counted after the
 * peer's answer to them, read by another goroutine meanwhile.
 *
 * (*Conn).Read: a uprobe at entry saves the buffer, one at every RET
 * instruction walks the n bytes read. Never a uretprobe: it swaps the
 * return address on the goroutine's stack, which the Go runtime copies and
 * unwinds. Entry and return are matched by goroutine, not thread: a
 * goroutine blocked in Read can resume on another thread.
 *
 * (*Conn).Close ends the session.
 */
#ifndef H2_TLS_GO_H
#define H2_TLS_GO_H

struct h2_go_call_key {
	__u64 g;
	__u32 tgid;
	__u32 _pad;
};

struct h2_go_call {
	__u64 conn;
	__u64 buf;
	__u64 stack_lo, stack_hi; /* the goroutine's stack at entry (g.stack, g's first field) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_go_call_key);
	__type(value, struct h2_go_call);
} h2_go_calls SEC(".maps");

static __always_inline struct h2_go_call_key h2_go_call_key(struct pt_regs *ctx)
{
	struct h2_go_call_key k = {.g = H2_GO_G(ctx), .tgid = bpf_get_current_pid_tgid() >> 32};

	return k;
}

SEC("uprobe/go_tls_write")
int h2_go_write(struct pt_regs *ctx)
{
	struct h2_stats *st = h2_st();
	long n = H2_GO_INT2(ctx);

	if (!st || n <= 0)
		return 0;
	st->go_tls_calls++;
	h2_tls_data(h2_tls_key(H2_GO_INT0(ctx), H2_K_GOTLS), H2_GO_INT1(ctx), H2_EGRESS, n, st);
	return 0;
}

SEC("uprobe/go_tls_read")
int h2_go_read(struct pt_regs *ctx)
{
	struct h2_go_call_key k = h2_go_call_key(ctx);
	struct h2_go_call a = {.conn = H2_GO_INT0(ctx), .buf = H2_GO_INT1(ctx)};
	__u64 stack[2];

	if (!bpf_probe_read_user(stack, sizeof(stack), (void *)k.g)) {
		a.stack_lo = stack[0];
		a.stack_hi = stack[1];
	}
	bpf_map_update_elem(&h2_go_calls, &k, &a, BPF_ANY);
	return 0;
}

/* At every RET of Read. */
SEC("uprobe/go_tls_read_ret")
int h2_go_read_ret(struct pt_regs *ctx)
{
	struct h2_go_call_key k = h2_go_call_key(ctx);
	struct h2_stats *st = h2_st();
	struct h2_go_call *a, args;
	long n = H2_GO_INT0(ctx);
	__u64 stack[2];

	a = bpf_map_lookup_elem(&h2_go_calls, &k);
	if (!a)
		return 0;
	args = *a;
	bpf_map_delete_elem(&h2_go_calls, &k);
	if (!st)
		return 0;
	if (H2_GO_INT1(ctx))
		st->go_tls_errors++; /* the n bytes before the error still count */
	if (n <= 0)
		return 0;
	st->go_tls_calls++;
	/* A buffer on the goroutine's stack moves when the stack is copied
	 * (grown while the call blocked): by the change of its top. */
	if (args.buf >= args.stack_lo && args.buf < args.stack_hi &&
	    !bpf_probe_read_user(stack, sizeof(stack), (void *)k.g) && stack[1] != args.stack_hi)
		args.buf += stack[1] - args.stack_hi;
	h2_tls_data(h2_tls_key(args.conn, H2_K_GOTLS), args.buf, H2_INGRESS, n, st);
	return 0;
}

SEC("uprobe/go_tls_close")
int h2_go_close(struct pt_regs *ctx)
{
	h2_close_conn(h2_tls_key(H2_GO_INT0(ctx), H2_K_GOTLS), 2, true);
	return 0;
}

#endif /* H2_TLS_GO_H */
