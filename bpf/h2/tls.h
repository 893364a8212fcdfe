/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * TLS, opt-in: what the OpenSSL and Go crypto/tls probes share (a
 * session's key, its first bytes, one call's plaintext).
 */
#ifndef H2_TLS_H
#define H2_TLS_H

/*
 * TLS, opt-in. The plaintext of a TLS session is one HTTP/2 byte stream per
 * session: offsets are running byte counts per direction, from the first
 * call seen (offset 0: the preface, or the server's SETTINGS, tells client
 * from server; otherwise mid-stream). A session is keyed by its object's
 * address in its process (struct h2_key). Its H2_REC_OPEN carries the TCP
 * socket under it when that is found (h2_tls_isn: its endpoints and
 * initial sequence numbers, H2_F_ISN): the ids both ends of a call compute.
 */

static __always_inline struct h2_key h2_tls_key(__u64 ptr, __u32 kind)
{
	struct h2_key k = {.ptr = ptr, .tgid = bpf_get_current_pid_tgid() >> 32, .kind = kind};

	return k;
}

/* Whether the 9 bytes a session's first call begins with open one: the
 * client preface, or a SETTINGS frame (not an ACK) on stream 0. */
static __always_inline bool h2_session_start(const __u8 *b)
{
	bool preface = true;

#pragma unroll
	for (int i = 0; i < H2_FRAME_HDR; i++)
		if (b[i] != h2_preface[i])
			preface = false;
	return preface || (b[3] == F_SETTINGS && b[4] == 0 && !b[5] && !b[6] && !b[7] && !b[8] &&
			   ((__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2]) % 6 == 0);
}

/* A TLS call that moved ret plaintext bytes at buf, in direction dir. */
static __always_inline void h2_tls_data(struct h2_key key, __u64 buf, int dir, long ret, struct h2_stats *st)
{
	struct h2_scratch *s;
	bool pending, skip;
	struct h2_conn *c;
	struct h2_walk *w;
	__u64 start, end;
	__u64 *busy;

	if (h2_skip_self()) {
		st->self_calls++;
		return;
	}
	c = h2_find(&key, 0, st, &pending, &skip);
	if (skip)
		return;
	if (!c) {
		struct h2_conn n = {};

		if (bpf_map_lookup_elem(&h2_tls_closed, &key)) {
			__u8 b[H2_FRAME_HDR] = {};

			/* A call on a closed session: only a new session's first
			 * bytes (the preface, or a SETTINGS frame; a request or
			 * status line) open one. */
			if (ret < H2_FRAME_HDR || bpf_probe_read_user(b, sizeof(b), (void *)buf) ||
			    !(h2_session_start(b) ||
			      (h2_http1_on && (h1_starts_request(b, sizeof(b)) || h1_starts_response(b, sizeof(b)))))) {
				st->tls_after_close++;
				return;
			}
			bpf_map_delete_elem(&h2_tls_closed, &key);
		}
		n.id = h2_new_id();
		n.d[0].based = n.d[1].based = 1;
		bpf_map_update_elem(&h2_pending, &key, &n, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&h2_pending, &key);
		if (!c)
			return;
		st->conns_tls++;
	}
	if (c->state == H2_NO)
		return;
	if (!h2_begin(st, &busy, &s)) {
		/* Busy (a program preempted mid-call holds the staging buffer:
		 * PREEMPT_RT runs programs preemptibly): the call's bytes are
		 * not copied, but the session's offsets move past them, so the
		 * reader finds the hole and reports it, as a dropped socket
		 * call's sequence numbers do, instead of a stream that looks
		 * whole with frames missing (seen on 6.12 PREEMPT_RT). */
		c->d[dir].lastoff += ret;
		return;
	}
	w = &s->w;
	w->ub = buf;
	start = c->d[dir].lastoff;
	end = start + ret;
	c->d[dir].lastoff = end;
	h2_call(c, &key, pending, 0, dir, start, end, ret, s, w, st, true);
	h2_end(busy);
}

#endif /* H2_TLS_H */
