/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * One send or receive, on a socket or a TLS session: detection, the gap
 * check, the walk and the counters.
 */
#ifndef H2_CALL_H
#define H2_CALL_H

/*
 * The part of a call common to sockets and TLS: start..end are the call's
 * stream offsets, w (in s) holds its buffer (ub) or iovec array (iov, iov_n).
 * Detection, the gap check, the walk, the counters.
 */
static __always_inline void h2_call(struct h2_conn *c, struct h2_key *key, bool pending, struct sock *sk, int dir,
				    __u64 start, __u64 end, long ret, struct h2_scratch *s, struct h2_walk *w,
				    struct h2_stats *st, bool tls)
{
	bool detected = false, open = false;
	struct h2_user *u = NULL;
	struct h2_head hd;
	__u64 a1, a2, cost;

	/* The first user segment: detection and resynchronisation look at its start. */
	w->seg_lo = start;
	w->seg_hi = start;
	if (w->iov) {
		struct iovec v = {};

		for (__u32 i = 0; i < 4 && i < w->iov_n; i++) {
			if (bpf_probe_read_user(&v, sizeof(v), (void *)(w->iov + i * sizeof(v))))
				break;
			if (v.iov_len)
				break;
		}
		a1 = (__u64)v.iov_base;
		a2 = v.iov_len;
	} else {
		a1 = w->ub;
		a2 = ret;
		w->seg_hi = start + ret;
	}
	if (a2 > (__u64)ret)
		a2 = ret;
	hd.n = a2 > H2_PREFACE_LEN ? H2_PREFACE_LEN : a2;
	if (hd.n < H2_PREFACE_LEN) {
		__builtin_memset(hd.b, 0, sizeof(hd.b));
		if (hd.n >= H2_FRAME_HDR) {
			if (bpf_probe_read_user(hd.b, H2_FRAME_HDR, (void *)a1))
				hd.n = 0;
		} else if (hd.n >= 4) {
			if (bpf_probe_read_user(hd.b, 4, (void *)a1))
				hd.n = 0;
		} else {
			hd.n = 0;
		}
	} else if (bpf_probe_read_user(hd.b, H2_PREFACE_LEN, (void *)a1)) {
		hd.n = 0;
	}

	/* Only h2_pending holds connections not classified (h2_conns: H2_YES);
	 * testing pending first spares the verifier the detection on the
	 * h2_conns path. */
	if (tls && pending && c->state == H2_UNKNOWN && c->role == H2_ROLE_UNKNOWN && start == 0) {
		/* TLS: the first call seen on the session. Its first byte when it
		 * starts with the client preface, or with a SETTINGS frame that is
		 * not an ACK (the server's preface; a server writes it, and a
		 * client may read it, before the client preface is seen): either
		 * says which end this is. */
		int cs = -1;

		if (h2_is_preface(&hd) || h1_is_request(&hd))
			cs = dir;
		else if ((h2_is_settings(&hd) && !(hd.b[4] & 1)) || h1_is_response(&hd))
			cs = 1 - dir;
		if (cs >= 0) {
			c->role = cs == H2_EGRESS ? H2_ROLE_CLIENT : H2_ROLE_SERVER;
			c->d[cs].nf = c->d[cs].copy_end = H2_PREFACE_LEN;
		}
	}
	if (pending && c->state == H2_UNKNOWN) {
		__u64 now = h2_detect(c, dir, start, &hd, st, &open);

		if (now != H2_YES && now != H1_YES) {
			if (c->state == H2_NO)
				h2_demote(key);
			return;
		}
		detected = true;
	}
	/* HTTP/2 from here on (decided now, or by the other direction). A
	 * connection stays on probation in h2_pending, walked from there,
	 * until a HEADERS frame (a call) admits it into h2_conns (below): a
	 * flood of connections that only look like HTTP/2 (a preface, a
	 * SETTINGS frame) evicts its own kind, never the state of one that
	 * carried a call. */
	if (detected) {
		if (c->role == H2_ROLE_UNKNOWN || start != 0) {
			/* Mid-stream: the walk starts at this call's frame header. */
			c->d[dir].desync = 0;
			c->d[dir].nf = c->d[dir].copy_end = c->d[dir].seen = start;
		}
		if (open && !c->opened) {
			h2_emit_open(c, sk, key, s, st);
			st->records++;
		}
	}

	w->d = c->d[dir];
	if (c->state == H1_YES) {
		/* HTTP/1.x: every call on its own, no frames to keep (the
		 * tracker finds messages and skips bodies; holes are its to
		 * see): its first bytes, many when it starts a message, and its
		 * last ones (frames.h: the walk at nf). */
		__u64 cap = h1_is_request(&hd) || h1_is_response(&hd) || w->d.h1_short ? h2_hdr_cap : H1_BODY_CAP;

		w->h1 = 1;
		w->cstart = start;
		w->d.desync = 0;
		w->d.h1_short = end - start < H1_SHORT;
		w->d.copy_end = end - start > cap ? start + cap : end;
		w->d.nf = end - start > H1_TAIL ? end - H1_TAIL : start;
		if (w->d.nf < w->d.copy_end)
			w->d.nf = w->d.copy_end;
		/* A request line admits the connection into h2_conns (a flood of
		 * status lines alone stays on probation). */
		if (h1_is_request(&hd))
			w->headers = 1;
		st->h1_calls++;
	} else if (!w->d.desync && start > w->d.seen && (w->d.copy_end > w->d.seen || start > w->d.nf)) {
		/* Bytes between the last call and this one that were never seen (a
		 * lost event, sendfile, splice, io_uring): harmless inside a payload
		 * that is skipped anyway, else the frame boundaries are lost. */
		w->d.desync = 1;
		st->desync++;
	}
	if (w->d.desync) {
		if (hd.n >= H2_FRAME_HDR && h2_plausible(hd.b) && start >= w->d.seen) {
			w->d.desync = 0;
			w->d.nf = w->d.copy_end = start;
			w->d.hdr = 0;
			st->resync++;
		} else {
			st->desync_bytes += ret;
			w->d.seen = end;
			c->d[dir] = w->d;
			return;
		}
	}
	/* An overlap with bytes already looked at (concurrent callers): skip it. */
	w->pos = start > w->d.seen ? start : w->d.seen;
	if (w->pos >= end)
		return;
	/* The record's head first: its time is the buckets' clock too. */
	h2_fill_rec(&w->hdr, c, H2_REC_DATA, dir, true);
	if (h2_rate && !h2_tokens(c, w->hdr.time_ns)) {
		st->throttled++;
		st->throttled_bytes += end - w->pos;
		goto throttled;
	}
	if (h2_user_rate) {
		u = h2_user_share(w->hdr.time_ns);
		if (!u || !h2_refill(&u->tokens, &u->ns, w->hdr.time_ns, h2_user_rate, h2_user_burst)) {
			st->throttled_user++;
			st->throttled_user_bytes += end - w->pos;
			goto throttled;
		}
	}
	w->end = end;
	w->rec_len = sizeof(struct h2_rec);
	if (w->h1)
		w->hdr.flags |= H2_F_HTTP1;
	if (!tls)
		w->hdr.flags |= H2_F_SEQ; /* the socket's offsets come from TCP sequence numbers (h2_io) */

#ifndef RING_NO_FETCH
	/* No bpf_loop in the h2nf objects: its callbacks' BPF_PSEUDO_FUNC
	 * loads (Linux 5.13) are refused at load time, dead or not. */
	if (h2_have_loop) {
		bpf_loop(H2_STEPS, h2_step, NULL, 0);
		if (w->nseg)
			bpf_loop(1, h2_flush_cb, NULL, 0);
	} else
#endif
	{
		for (int i = 0; i < H2_STEPS_BOUNDED; i++)
			if (h2_step_bounded())
				break;
		if (w->nseg)
			h2_flush_bounded();
	}

	if (w->pos < w->end) {
		if (w->stop == STOP_FAULT)
			st->read_fault++;
		else if (w->stop == STOP_NONE)
			st->loop_bound++;
		st->desync++;
		st->desync_bytes += w->end - w->pos;
		w->d.desync = 1;
	}
	w->d.seen = w->end;
	c->d[dir] = w->d;
	/* What the call cost: its bytes, and each frame at least h2_frame_cost
	 * (what the tracker pays per frame, whatever its size); an HTTP/1.x
	 * call is a record of its own, as a frame is: a call of one byte costs
	 * what a frame does, else a byte a call would get h2_rate calls a
	 * second through. */
	cost = (w->frames + w->h1) * h2_frame_cost;
	st->frame_tokens += cost;
	cost += w->copied;
	if (h2_rate)
		c->tb_tokens -= cost;
	if (u)
		u->tokens -= cost;
	/* A call on a connection on probation: admitted. */
	if (pending && w->headers && h2_promote(key, c, dir, st))
		st->conns_confirmed++;
	st->frames += w->frames;
	st->bytes_copied += w->copied;
	st->bytes_skipped += w->skipped;
	st->headers_cut += w->cut;
	st->bytes_cut += w->cut_bytes;
	st->records += w->records;
	return;

throttled:
	st->desync++;
	w->d.desync = 1;
	w->d.seen = end;
	c->d[dir] = w->d;
}

#endif /* H2_CALL_H */
