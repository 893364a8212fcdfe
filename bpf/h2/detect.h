/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Detection: whether a connection speaks HTTP/2, from its first bytes (the
 * client preface, the server's SETTINGS) or, mid-stream, a plausible frame
 * header; or HTTP/1.x, from a request or status line at a call's start;
 * the winner of the decision writes the H2_REC_OPEN.
 */
#ifndef H2_DETECT_H
#define H2_DETECT_H

static const char h2_preface[H2_PREFACE_LEN] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* Whether 9 bytes look like an HTTP/2 frame header a connection could be in the middle of. */
static __always_inline bool h2_plausible(const __u8 *b)
{
	__u32 len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	__u8 type = b[3];
	__u32 stream = ((__u32)b[5] << 24 | (__u32)b[6] << 16 | (__u32)b[7] << 8 | b[8]);

	if (len > (1 << 20) || type > F_CONTINUATION || stream & 0x80000000)
		return false;
	switch (type) {
	case F_SETTINGS:
		return stream == 0 && len % 6 == 0;
	case 6: /* PING */
		return stream == 0 && len == 8;
	case F_GOAWAY:
		return stream == 0;
	case 8: /* WINDOW_UPDATE */
		return len == 4;
	case F_RST_STREAM:
		return stream != 0 && len == 4;
	default:
		return stream != 0;
	}
}

/* The first bytes of a call: its first user segment, up to 24 bytes. */
struct h2_head {
	__u8 b[H2_PREFACE_LEN];
	__u32 n;
};

static __always_inline void h2_emit_open(struct h2_conn *c, struct sock *sk, struct h2_key *key, struct h2_scratch *s,
					 struct h2_stats *st)
{
	struct h2_open *o = (struct h2_open *)s->rec.buf;
	__u16 family;

	__builtin_memset(o, 0, sizeof(*o));
	h2_fill_rec(&o->h, c, H2_REC_OPEN, 0, true);
	if (c->state == H1_YES)
		o->h.flags |= H2_F_HTTP1;
	o->est_ns = c->est_ns;
	o->role = c->role;
	if (!sk) {
		/* TLS: the socket under the session, when it is found: its
		 * numbers name the connection, its endpoints are the session's.
		 * Else the endpoints stay unknown (family 0). */
		struct h2_isn k;

		if (h2_tls_isn(key, &k, &sk)) {
			o->h.flags |= H2_F_ISN;
			o->isn_snd = k.snd;
			o->isn_rcv = k.rcv;
			st->tls_sock++;
		} else {
			st->tls_no_sock++;
		}
		if (!sk) {
			ring_commit(&s->rec, sizeof(*o), H2_REC_OPEN);
			c->opened = 1;
			return;
		}
	}
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	o->family = family;
	o->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	o->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	o->rport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		__u32 l = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 r = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(o->laddr, &l, 4);
		__builtin_memcpy(o->raddr, &r, 4);
	} else {
		BPF_CORE_READ_INTO(&o->laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&o->raddr, sk, __sk_common.skc_v6_daddr);
	}
	ring_commit(&s->rec, sizeof(*o), H2_REC_OPEN);
	c->opened = 1;
}

/* Whether the call's first bytes are a SETTINGS frame header (stream 0). */
static __always_inline bool h2_is_settings(struct h2_head *hd)
{
	return hd->n >= H2_FRAME_HDR && hd->b[3] == F_SETTINGS && hd->b[5] == 0 && hd->b[6] == 0 && hd->b[7] == 0 &&
	       hd->b[8] == 0;
}

/* Whether the call's first bytes are the client preface (as far as they go, at least 4). */
static __always_inline bool h2_is_preface(struct h2_head *hd)
{
	bool yes = hd->n >= 4;

#pragma unroll
	for (int i = 0; i < H2_PREFACE_LEN; i++)
		if (i < hd->n && hd->b[i] != h2_preface[i])
			yes = false;
	return yes;
}

/* The first 4 bytes of a call, as one number (b[0] the most significant). */
static __always_inline __u32 h1_word(const __u8 *b)
{
	return (__u32)b[0] << 24 | (__u32)b[1] << 16 | (__u32)b[2] << 8 | b[3];
}

#define H1_W(a, b, c, d) ((__u32)(a) << 24 | (__u32)(b) << 16 | (__u32)(c) << 8 | (d))

/*
 * Whether n first bytes b begin an HTTP/1.x request line: one of RFC
 * 9110's methods (and PATCH) and its space, as far as the bytes go (at
 * least 4; a call's first bytes read are 0, 4, 9 or 24).
 */
static __always_inline bool h1_starts_request(const __u8 *b, __u32 n)
{
	__u32 w = h1_word(b);

	if (n < 4)
		return false;
	/* Each method's space by a constant index (clang turns a variable
	 * index into the stack into an OR on the frame pointer, which the
	 * verifier refuses). */
	switch (w) {
	case H1_W('G', 'E', 'T', ' '):
	case H1_W('P', 'U', 'T', ' '):
		return true;
	case H1_W('P', 'O', 'S', 'T'):
	case H1_W('H', 'E', 'A', 'D'):
		return n <= 4 || b[4] == ' ';
	case H1_W('P', 'A', 'T', 'C'): /* PATCH */
	case H1_W('T', 'R', 'A', 'C'): /* TRACE */
		return n <= 5 || (b[4] == 'H' || b[4] == 'E');
	case H1_W('D', 'E', 'L', 'E'): /* DELETE */
		return n <= 6 || b[6] == ' ';
	case H1_W('O', 'P', 'T', 'I'): /* OPTIONS */
	case H1_W('C', 'O', 'N', 'N'): /* CONNECT */
		return n <= 7 || b[7] == ' ';
	default:
		return false;
	}
}

/* Whether n first bytes b begin an HTTP/1.x status line ("HTTP/1."). */
static __always_inline bool h1_starts_response(const __u8 *b, __u32 n)
{
	return n >= 4 && h1_word(b) == H1_W('H', 'T', 'T', 'P') && (n < 9 || (b[4] == '/' && b[5] == '1' && b[6] == '.'));
}

/* The same of a call's first bytes. */
static __always_inline bool h1_is_request(struct h2_head *hd)
{
	return h1_starts_request(hd->b, hd->n);
}

static __always_inline bool h1_is_response(struct h2_head *hd)
{
	return h1_starts_response(hd->b, hd->n);
}

/*
 * Decides, from the call's first bytes at stream offset start, what the
 * connection speaks: HTTP/2 (H2_YES), HTTP/1.x (H1_YES) or neither
 * (H2_NO); H2_UNKNOWN while a connection that predates the capture has
 * not shown either yet. The two directions of a connection may decide at
 * once on two CPUs: the state leaves H2_UNKNOWN by one compare-and-swap, and
 * only its winner writes the H2_REC_OPEN (*open). Returns the state.
 */
static __always_inline __u64 h2_detect(struct h2_conn *c, int dir, __u64 start, struct h2_head *hd, struct h2_stats *st,
				       bool *open)
{
	bool cs = (dir == H2_EGRESS) == (c->role == H2_ROLE_CLIENT);
	bool decided = true;
	__u64 was, now = H2_NO;

	*open = false;
	if (c->role != H2_ROLE_UNKNOWN && start == 0) {
		if (cs) {
			/* The client preface (a short first read matches on what
			 * it has), or a request line. */
			if (h2_http2_on && h2_is_preface(hd))
				now = H2_YES;
			else if (h2_http1_on && h1_is_request(hd))
				now = H1_YES;
		} else {
			/* The server's first frame is SETTINGS on stream 0; an
			 * HTTP/1.x server speaks after the request, so the client
			 * direction decides first (a status line is taken too). */
			if (h2_http2_on && h2_is_settings(hd))
				now = H2_YES;
			else if (h2_http1_on && h1_is_response(hd))
				now = H1_YES;
		}
	} else {
		/* Mid-stream: a plausible frame header at the call's start (its
		 * length's top byte is below 0x10: never text), or a request or
		 * status line. */
		if (h2_http2_on && hd->n >= H2_FRAME_HDR && h2_plausible(hd->b))
			now = H2_YES;
		else if (h2_http1_on && (h1_is_request(hd) || h1_is_response(hd)))
			now = H1_YES;
		decided = now != H2_NO || ++c->tries >= H2_TRIES;
	}
	if (!decided)
		return H2_UNKNOWN;
#ifdef RING_NO_FETCH
	/* No compare-and-swap: both directions deciding at once on two CPUs
	 * may both open the connection (two open records, the same id). */
	was = c->state;
	if (was == H2_UNKNOWN)
		c->state = now;
#else
	was = __sync_val_compare_and_swap(&c->state, H2_UNKNOWN, now);
#endif
	if (was != H2_UNKNOWN)
		return was; /* the other direction decided first */
	if (now == H2_YES) {
		st->conns_h2++;
		*open = true;
	} else if (now == H1_YES) {
		st->conns_h1++;
		*open = true;
	} else {
		st->conns_not_h2++;
	}
	return now;
}

#endif /* H2_DETECT_H */
