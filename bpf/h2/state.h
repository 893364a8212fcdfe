/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Connection life: sock:inet_sock_set_state opens and closes a socket's
 * state; the close of a connection (sockets and TLS sessions) writes its
 * H2_REC_CLOSE.
 */
#ifndef H2_STATE_H
#define H2_STATE_H

static __always_inline void h2_established(struct sock *sk, int oldstate)
{
	struct h2_conn c = {};
	struct h2_stats *st = h2_st();
	struct h2_key key = {.ptr = (__u64)sk};
	int cs;

	c.id = h2_new_id();
	c.est_ns = bpf_ktime_get_boot_ns();
	c.role = oldstate == TCP_SYN_SENT ? H2_ROLE_CLIENT : oldstate == TCP_SYN_RECV ? H2_ROLE_SERVER : H2_ROLE_UNKNOWN;
	for (int i = 0; i < 2; i++) {
		c.d[i].lastseq = h2_tcp_seq(sk, i);
		c.d[i].based = 1;
	}
	if (c.role == H2_ROLE_UNKNOWN) {
		/* Not from a handshake: leave the offsets to the first call. */
		c.d[0].based = 0;
		c.d[1].based = 0;
	} else {
		/* The client-to-server direction starts with the 24-byte preface. */
		cs = c.role == H2_ROLE_CLIENT ? H2_EGRESS : H2_INGRESS;
		c.d[cs].nf = H2_PREFACE_LEN;
		c.d[cs].copy_end = H2_PREFACE_LEN;
	}
	/* A new connection: whatever a socket at this address was is gone
	 * (its TCP_CLOSE forgot it; this covers one missed). */
	bpf_map_update_elem(&h2_pending, &key, &c, BPF_ANY);
	bpf_map_delete_elem(&h2_not_h2, &key);
	bpf_map_delete_elem(&h2_conns, &key);
	bpf_map_delete_elem(&h1_conns, &key);
	if (st)
		st->conns_established++;
}

/* TLS sessions closed (SSL_free, Conn.Close) whose object may still see a
 * call: a Go Write after Close is walked at its entry and then fails, a
 * Read that began before Close returns after it. Such a call must not start
 * a new session (mid-stream, with bytes never sent); a new session that
 * reuses the object's address starts with the preface or a SETTINGS frame. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_key);
	__type(value, __u8);
} h2_tls_closed SEC(".maps");

/* Writes the connection's H2_REC_CLOSE (if its open was written) and forgets
 * it, in whichever map it is. idx: the staging buffer of the calling context. */
static __always_inline void h2_close_conn(struct h2_key key, __u32 idx, bool task)
{
	struct h2_stats *st = h2_st();
	struct h2_scratch *s;
	struct h2_close *e;
	struct h2_conn *c;
	bool probation = false, h1 = false;
	__u8 one = 1;

	c = bpf_map_lookup_elem(&h2_conns, &key);
	if (!c) {
		c = bpf_map_lookup_elem(&h1_conns, &key);
		h1 = c;
	}
	if (!c) {
		/* An HTTP/2 connection on probation (no call yet) was opened too. */
		c = bpf_map_lookup_elem(&h2_pending, &key);
		probation = true;
	}
	if (!c || !c->opened) {
		/* Not HTTP/2, or not classified yet: nothing to write. */
		bool known = !bpf_map_delete_elem(&h2_pending, &key);

		known = !bpf_map_delete_elem(&h2_not_h2, &key) || known;
		if (known && key.kind != H2_K_SOCK)
			bpf_map_update_elem(&h2_tls_closed, &key, &one, BPF_ANY);
		return;
	}
	if (key.kind != H2_K_SOCK)
		bpf_map_update_elem(&h2_tls_closed, &key, &one, BPF_ANY);
	if (c->opened && (s = bpf_map_lookup_elem(&h2_scratchbuf, &idx))) {
		e = (struct h2_close *)s->rec.buf;
		h2_fill_rec(&e->h, c, H2_REC_CLOSE, 0, task);
		e->total[0] = 0;
		e->total[1] = 0;
		/* The end of the bytes the calls moved (not the sequence
		 * numbers: they count the FIN too). */
		if (c->role != H2_ROLE_UNKNOWN) {
			e->total[0] = c->d[0].seen;
			e->total[1] = c->d[1].seen;
		}
		ring_commit(&s->rec, sizeof(*e), H2_REC_CLOSE);
		if (st) {
			st->conns_closed++;
			st->records++;
		}
	}
	if (probation)
		bpf_map_delete_elem(&h2_pending, &key);
	else if (h1)
		bpf_map_delete_elem(&h1_conns, &key);
	else
		bpf_map_delete_elem(&h2_conns, &key);
}

static __always_inline void h2_closed(struct sock *sk)
{
	struct h2_key key = {.ptr = (__u64)sk};

	h2_close_conn(key, 1, false);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(h2_state, const struct sock *sk, const int oldstate, const int newstate)
{
	struct sock *s = (struct sock *)sk;

	if (newstate != TCP_ESTABLISHED && newstate != TCP_CLOSE)
		return 0;
	if (BPF_CORE_READ(s, sk_protocol) != IPPROTO_TCP)
		return 0;
	if (newstate == TCP_ESTABLISHED)
		h2_established(s, oldstate);
	else
		h2_closed(s);
	return 0;
}

#endif /* H2_STATE_H */
