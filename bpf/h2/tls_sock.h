/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * TLS: the socket under a session. OpenSSL's is named by the socket calls
 * made inside its SSL_read / SSL_write (h2_tls_mark), Go's by the fields of
 * its *tls.Conn (h2_go_isn); h2_tls_isn gives either's numbers.
 */
#ifndef H2_TLS_SOCK_H
#define H2_TLS_SOCK_H

struct h2_tls_args {
	__u64 ssl;
	__u64 buf;
	__u64 outp; /* _ex: where the function stores the length (size_t *) */
	__u64 sock; /* 1: a socket call inside this one named the SSL object's socket (h2_ssl_isn) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* pid_tgid */
	__type(value, struct h2_tls_args);
} h2_tls_calls SEC(".maps");

struct h2_tls_sock {
	struct h2_isn isn;
	__u64 sk; /* the struct sock, for its endpoints (h2_tls_isn checks it is still that connection's) */
};

/* TLS sessions of OpenSSL: what the TCP socket under an SSL object says of
 * its initial sequence numbers (h2_sock_isn), keyed by the SSL object (an
 * H2_K_OPENSSL key). Set by the socket calls a thread makes inside SSL_read
 * / SSL_write (h2_tls_mark): OpenSSL's own BIO reads and writes the fd it
 * was given from the calling thread. A program whose BIO moves the bytes
 * elsewhere (a memory BIO pair, as gRPC's C core) names no socket here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_key);
	__type(value, struct h2_tls_sock);
} h2_ssl_isn SEC(".maps");

/* A socket call: when the thread is inside an OpenSSL call, the socket is
 * its SSL object's. */
static __always_inline void h2_tls_mark(struct sock *sk)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct h2_tls_args *a = bpf_map_lookup_elem(&h2_tls_calls, &id);
	struct h2_key key = {.tgid = id >> 32, .kind = H2_K_OPENSSL};
	struct h2_tls_sock v = {.sk = (__u64)sk}, *p;

	if (!a || a->sock)
		return;
	a->sock = 1; /* the first socket call of this OpenSSL call only */
	key.ptr = a->ssl;
	/* Known already (every call after a session's first): one lookup. */
	p = bpf_map_lookup_elem(&h2_ssl_isn, &key);
	if (p && p->sk == v.sk)
		return;
	if (h2_is_tcp(sk) && h2_sock_isn(sk, &v.isn))
		bpf_map_update_elem(&h2_ssl_isn, &key, &v, BPF_ANY);
}

/*
 * Go crypto/tls: the socket under a *tls.Conn, by its fields (Go 1.17+ on
 * amd64, unchanged since; arm64's 64-bit layout is the same): Conn.conn, the net.Conn at offset 0 (itab, data);
 * data a *net.TCPConn, whose first word is its *netFD; netFD.pfd, a
 * poll.FD, first (fdmu: 16 bytes, then Sysfd int). The fd must be a TCP
 * socket of the current process; a net.Conn of another type (a wrapper, a
 * Unix socket) gives no TCP socket there, or, should its words happen to
 * name one, ids that no other end computes.
 */
static __always_inline bool h2_go_isn(__u64 conn, struct h2_isn *k, struct sock **skp)
{
	__u64 data = 0, fdp = 0;
	__s64 fd = -1;
	struct sock *sk;

	if (bpf_probe_read_user(&data, sizeof(data), (void *)(conn + 8)) || !data ||
	    bpf_probe_read_user(&fdp, sizeof(fdp), (void *)data) || !fdp ||
	    bpf_probe_read_user(&fd, sizeof(fd), (void *)(fdp + 16)) || fd < 0 || fd > 0x7fffffff)
		return false;
	if (h2_fd_sock(fd, &sk) || !h2_is_tcp(sk))
		return false;
	*skp = sk;
	return h2_sock_isn(sk, k);
}

/* The socket's numbers under a TLS session (key), when it can be found, and
 * the socket itself (*skp) when it still is that connection's (else 0). */
static __always_inline bool h2_tls_isn(struct h2_key *key, struct h2_isn *k, struct sock **skp)
{
	struct h2_tls_sock *p;
	struct h2_isn now;
	struct sock *sk;

	*skp = 0;
	if (key->kind == H2_K_GOTLS)
		return h2_go_isn(key->ptr, k, skp);
	p = bpf_map_lookup_elem(&h2_ssl_isn, key);
	if (!p)
		return false;
	*k = p->isn;
	sk = (struct sock *)p->sk;
	/* Sockets are freed RCU-typesafe: one closed since is still a socket,
	 * maybe another connection's, whose numbers differ. */
	if (h2_sock_isn(sk, &now) && now.snd == k->snd && now.rcv == k->rcv)
		*skp = sk;
	return true;
}

#endif /* H2_TLS_SOCK_H */
