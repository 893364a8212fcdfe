/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Detection: whether a connection speaks HTTP/2, from its first bytes (the
 * client preface, the server's SETTINGS) or, mid-stream, a plausible frame
 * header; the winner of the decision writes the H2_REC_OPEN.
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

/*
 * Decides, from the call's first bytes at stream offset start, whether the
 * connection speaks HTTP/2. The two directions of a connection may decide at
 * once on two CPUs: the state leaves H2_UNKNOWN by one compare-and-swap, and
 * only its winner writes the H2_REC_OPEN (*open). Returns true when the
 * connection is HTTP/2 and the walk should go on.
 */
static __always_inline bool h2_detect(struct h2_conn *c, int dir, __u64 start, struct h2_head *hd, struct h2_stats *st,
				      bool *open)
{
	bool cs = (dir == H2_EGRESS) == (c->role == H2_ROLE_CLIENT);
	bool yes = false, decided = true;
	__u64 was;

	*open = false;
	if (c->role != H2_ROLE_UNKNOWN && start == 0) {
		if (cs) {
			/* The client preface; a short first read matches on what it has. */
			yes = h2_is_preface(hd);
		} else {
			/* The server's first frame is SETTINGS on stream 0. */
			yes = h2_is_settings(hd);
		}
	} else {
		/* Mid-stream: a plausible frame header at the call's start. */
		yes = hd->n >= H2_FRAME_HDR && h2_plausible(hd->b);
		decided = yes || ++c->tries >= H2_TRIES;
	}
	if (!decided)
		return false;
#ifdef RING_NO_FETCH
	/* No compare-and-swap: both directions deciding at once on two CPUs
	 * may both open the connection (two open records, the same id). */
	was = c->state;
	if (was == H2_UNKNOWN)
		c->state = yes ? H2_YES : H2_NO;
#else
	was = __sync_val_compare_and_swap(&c->state, H2_UNKNOWN, yes ? H2_YES : H2_NO);
#endif
	if (was != H2_UNKNOWN)
		return was == H2_YES; /* the other direction decided first */
	if (yes) {
		st->conns_h2++;
		*open = true;
	} else {
		st->conns_not_h2++;
	}
	return yes;
}

#endif /* H2_DETECT_H */
