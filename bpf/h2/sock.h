/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What a TCP socket and the current task say: the stream counters, the
 * initial sequence numbers, the socket behind a file descriptor.
 */
#ifndef H2_SOCK_H
#define H2_SOCK_H

#define AF_INET 2
#define AF_INET6 10
#define S_IFMT 00170000
#define S_IFSOCK 0140000

static __always_inline __u32 h2_tcp_seq(struct sock *sk, int dir)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	return dir == H2_EGRESS ? BPF_CORE_READ(tp, write_seq) : BPF_CORE_READ(tp, copied_seq);
}

static __always_inline bool h2_is_tcp(struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	return (family == AF_INET || family == AF_INET6) && BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
}

/*
 * What a TCP socket says of its connection's initial sequence numbers, at
 * any time after the handshake (the TLS call ids, h2.h's h2_open): snd_una -
 * bytes_acked and rcv_nxt - bytes_received (RFC 4898's counters, Linux
 * 4.1+). Each pair is changed by two stores (tcp_snd_una_update,
 * tcp_rcv_nxt_update); a read between them on another CPU gives a wrong
 * sum, so the counters are read twice and must agree.
 */
struct h2_isn {
	__u32 snd, rcv;
};

static __always_inline bool h2_sock_isn(struct sock *sk, struct h2_isn *k)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	for (int i = 0; i < 3; i++) {
		__u64 ba = BPF_CORE_READ(tp, bytes_acked), br = BPF_CORE_READ(tp, bytes_received);
		__u32 una = BPF_CORE_READ(tp, snd_una), nxt = BPF_CORE_READ(tp, rcv_nxt);

		if (ba == BPF_CORE_READ(tp, bytes_acked) && br == BPF_CORE_READ(tp, bytes_received) &&
		    una == BPF_CORE_READ(tp, snd_una) && nxt == BPF_CORE_READ(tp, rcv_nxt)) {
			k->snd = una - (__u32)ba;
			k->rcv = nxt - (__u32)br;
			return true;
		}
	}
	return false;
}

/* The struct sock of the current task's fd (0: none): 1 when fd is not
 * a socket, -1 when the fd table walk failed. */
static __always_inline int h2_fd_sock(__u32 fd, struct sock **skp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file **fds;
	struct socket *so;
	struct file *f;
	umode_t mode;
	__u32 max;

	*skp = 0;
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (fd >= max || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return -1;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return 1;
	so = BPF_CORE_READ(f, private_data);
	*skp = BPF_CORE_READ(so, sk);
	return *skp ? 0 : -1;
}

#endif /* H2_SOCK_H */
