/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Where the bytes of socket calls are seen (the loader attaches one set:
 * receiver/grpcreceiver/internal/capture/hooks_linux.go): sock_* (Linux
 * 6.3+), sys_* (syscalls:sys_exit_*) and raw_sys (raw_syscalls:sys_exit).
 * The system call numbers and registers they read are each architecture's
 * (arch.h).
 */
#ifndef H2_HOOKS_H
#define H2_HOOKS_H

#define MSG_PEEK 2
#define RCV_SHUTDOWN 1

static __always_inline int h2_io(struct sock *sk, int dir, long ret, __u32 flags, struct pt_regs *regs, bool sys)
{
	struct h2_key key = {.ptr = (__u64)sk};
	__u64 nr, a1, a2, start, end;
	struct h2_stats *st = h2_st();
	__u32 seq;
	struct h2_scratch *s;
	bool pending, skip;
	struct h2_conn *c;
	struct h2_walk *w;
	__u64 *busy;

	if (!st || ret <= 0)
		return 0;
	st->sock_calls++;
	if (h2_skip_self()) {
		st->self_calls++;
		return 0;
	}
	if (h2_tls_on)
		h2_tls_mark(sk);
	c = h2_find(&key, sk, st, &pending, &skip);
	if (skip)
		return 0;
	if (!c) {
		struct h2_conn n = {};

		n.id = h2_new_id();
		bpf_map_update_elem(&h2_pending, &key, &n, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&h2_pending, &key);
		if (!c)
			return 0;
		st->conns_predating++;
	}
	if (c->state == H2_NO)
		return 0;

	nr = H2_SYS_NR(regs);
	a1 = H2_SYS_ARG1(regs);
	a2 = H2_SYS_ARG2(regs);
	if (sys) {
		if (nr == NR_RECVFROM)
			flags = H2_SYS_ARG3(regs);
		else if (nr == NR_RECVMSG)
			flags = a2;
	}
	if (flags & MSG_PEEK && dir == H2_INGRESS) {
		st->peek++;
		return 0;
	}
	if (!h2_begin(st, &busy, &s))
		return 0;
	w = &s->w;
	switch (nr) {
	case NR_WRITE:
	case NR_SENDTO:
		if (dir != H2_EGRESS)
			goto unsupported;
		w->ub = a1;
		break;
	case NR_READ:
	case NR_RECVFROM:
		if (dir != H2_INGRESS)
			goto unsupported;
		w->ub = a1;
		break;
	case NR_WRITEV:
	case NR_READV:
		if ((nr == NR_WRITEV) != (dir == H2_EGRESS))
			goto unsupported;
		w->iov = a1;
		w->iov_n = a2;
		break;
	case NR_SENDMSG:
	case NR_RECVMSG: {
		struct user_msghdr m;

		if ((nr == NR_SENDMSG) != (dir == H2_EGRESS))
			goto unsupported;
		if (bpf_probe_read_user(&m, sizeof(m), (void *)a1)) {
			st->read_fault++;
			goto out;
		}
		w->iov = (__u64)m.msg_iov;
		w->iov_n = m.msg_iovlen;
		break;
	}
	default:
		goto unsupported;
	}
	if (w->iov && w->iov_n > h2_max_iov) {
		st->iov_cut++;
		w->iov_n = h2_max_iov;
	}

	/* Stream offsets from the kernel's sequence numbers. */
	if (!c->d[dir].based) {
		struct h2_dirst *d = &c->d[dir];

		d->lastseq = h2_tcp_seq(sk, dir) - (__u32)ret;
		d->lastoff = H2_PREDATE_BASE;
		d->nf = d->copy_end = d->seen = H2_PREDATE_BASE;
		d->desync = 1;
		d->based = 1;
	}
	seq = h2_tcp_seq(sk, dir);
	end = h2_off(&c->d[dir], seq);
	start = end - ret;
	/* The TCP sequence number of each of this call's offsets: taken before
	 * the FIN correction below, which puts start on the first byte read
	 * (the FIN's number is no stream byte) without moving any byte's. */
	w->seqbase = seq - (__u32)end;
	/* A read that consumed the peer's FIN: copied_seq counts it too. */
	if (dir == H2_INGRESS && start == c->d[dir].seen + 1 &&
	    BPF_CORE_READ_BITFIELD_PROBED(sk, sk_shutdown) & RCV_SHUTDOWN) {
		start--;
		end--;
		c->d[dir].lastoff--;
	}

	h2_call(c, &key, pending, sk, dir, start, end, ret, s, w, st, false);
out:
	h2_end(busy);
	return 0;

unsupported:
	st->unsupported++;
	goto out;
}

#ifndef RING_NO_FETCH
static __always_inline struct pt_regs *h2_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

/* Linux 6.3+: the socket layer's own tracepoints. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(h2_sock_send, struct sock *sk, int ret, int flags)
{
	return h2_io(sk, H2_EGRESS, ret, flags, h2_regs(), false);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(h2_sock_recv, struct sock *sk, int ret, int flags)
{
	return h2_io(sk, H2_INGRESS, ret, flags, h2_regs(), false);
}
#endif /* RING_NO_FETCH: sock_* and sys_* need bpf_task_pt_regs (Linux 5.15) */

/*
 * Older kernels: a system call's exit (ret > 0), the fd walked to its socket.
 * regs: the task's saved user registers, which hold the call's arguments.
 */
static __always_inline int h2_sys(struct pt_regs *regs, long ret, int dir)
{
	struct h2_stats *st = h2_st();
	struct sock *sk;
	int r;

	if (!st)
		return 0;
	r = h2_fd_sock(H2_SYS_ARG0(regs), &sk);
	if (r > 0) {
		st->not_socket++;
		return 0;
	}
	if (r < 0) {
		st->fd_unreadable++;
		return 0;
	}
	return h2_io(sk, dir, ret, 0, regs, true);
}

/*
 * The record of syscalls:sys_exit_* is struct syscall_trace_exit (int nr),
 * not raw_syscalls:sys_exit's trace_event_raw_sys_exit (long id). Their ret
 * is at the same offset (16) where struct trace_entry is 8 bytes, but the
 * PREEMPT_RT patches make it 12 (preempt_lazy_count): CO-RE then put the
 * raw record's ret at 24, past the end of the 24-byte record, and the kernel
 * refused the attach (EACCES: the program reads beyond the event's fields).
 */
#ifndef RING_NO_FETCH
#define H2_SYS_EXIT(name, dir)                                              \
	SEC("tracepoint/syscalls/sys_exit_" #name)                          \
	int h2_sys_##name(struct syscall_trace_exit *ctx)                   \
	{                                                                   \
		long ret = ctx->ret;                                        \
                                                                            \
		return ret > 0 ? h2_sys(h2_regs(), ret, dir) : 0;           \
	}

H2_SYS_EXIT(write, H2_EGRESS)
H2_SYS_EXIT(writev, H2_EGRESS)
H2_SYS_EXIT(sendto, H2_EGRESS)
H2_SYS_EXIT(sendmsg, H2_EGRESS)
H2_SYS_EXIT(read, H2_INGRESS)
H2_SYS_EXIT(readv, H2_INGRESS)
H2_SYS_EXIT(recvfrom, H2_INGRESS)
H2_SYS_EXIT(recvmsg, H2_INGRESS)
#endif

/*
 * Any kernel with BTF, one program: raw_syscalls:sys_exit, which every system
 * call of every task passes while a program is attached, so the number is
 * checked first and everything else returns at once. It is a raw tracepoint,
 * not a perf event: kernels that refuse BPF on the syscalls:* perf
 * tracepoints take it. The registers are the tracepoint's own argument
 * (current's saved user registers, as bpf_task_pt_regs would give).
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(h2_raw_sys, struct pt_regs *regs, long ret)
{
	int dir;

	switch (H2_SYS_NR_BTF(regs)) {
	case NR_WRITE:
	case NR_WRITEV:
	case NR_SENDTO:
	case NR_SENDMSG:
		dir = H2_EGRESS;
		break;
	case NR_READ:
	case NR_READV:
	case NR_RECVFROM:
	case NR_RECVMSG:
		dir = H2_INGRESS;
		break;
	default:
		return 0;
	}
	if (ret <= 0)
		return 0;
	/* An ia32 call (int 0x80) numbers its calls otherwise (20 is getpid
	 * there) and passes its arguments in other registers: not followed,
	 * as the syscalls:* tracepoints never fire for it on x86-64. The same
	 * for an AArch32 task's calls on arm64 (arch.h). */
	if (h2_compat_syscall())
		return 0;
	return h2_sys(regs, ret, dir);
}

#endif /* H2_HOOKS_H */
