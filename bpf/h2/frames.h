/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The frame walk: one step copies a frame header, a payload the tracker
 * needs (or skips one it does not) or moves to the next iovec; bpf_loop
 * runs the steps, or a bounded loop of global functions before Linux 5.17.
 */
#ifndef H2_FRAMES_H
#define H2_FRAMES_H

static __always_inline void h2_flush(struct h2_walk *w, struct h2_scratch *s)
{
	struct h2_rec *h = (struct h2_rec *)s->rec.buf;
	__u32 len = w->rec_len;

	if (!w->nseg)
		return;
	*h = w->hdr;
	h->nseg = w->nseg;
	if (w->h1 && ((struct h2_seg *)&s->rec.buf[sizeof(struct h2_rec)])->off == w->cstart)
		h->flags |= H2_F_CALL_START;
	if (len > RING_SCRATCH)
		len = RING_SCRATCH;
	ring_commit(&s->rec, len, H2_REC_DATA);
	w->records++;
	w->rec_len = sizeof(struct h2_rec);
	w->rseg = 0;
	w->nseg = 0;
}

static __always_inline bool h2_needed(__u32 type)
{
	return type == F_HEADERS || type == F_CONTINUATION || type == F_PUSH_PROMISE || type == F_SETTINGS ||
	       type == F_RST_STREAM || type == F_GOAWAY;
}

/* Copies n bytes at the cursor into the record; hdr: they are (part of) the frame header at d.nf. */
static __always_inline long h2_copy(struct h2_walk *w, __u64 n, bool hdr)
{
	struct h2_scratch *s;
	struct h2_seg *g;
	__u32 zero = 0, at, room;
	__u64 off;
	bool fresh;

	s = bpf_map_lookup_elem(&h2_scratchbuf, &zero);
	if (!s) {
		w->stop = STOP_MAP;
		return 1;
	}
	fresh = !w->rseg || w->rseg_end != w->pos;
	if (w->rec_len + (fresh ? 24 + 1 : 1) > RING_SCRATCH) {
		h2_flush(w, s);
		fresh = true;
	}
	if (fresh) {
		at = (w->rec_len + 7) & ~7U;
		asm volatile("" : "+r"(at));
		if (at > RING_SCRATCH - 24) {
			w->stop = STOP_MAP;
			return 1;
		}
		g = (struct h2_seg *)&s->rec.buf[at];
		g->off = w->pos;
		g->len = 0;
		g->seq = w->hdr.flags & H2_F_SEQ ? w->seqbase + (__u32)w->pos : 0;
		w->rseg = at;
		w->rec_len = at + sizeof(*g);
		w->nseg++;
	}
	room = RING_SCRATCH - w->rec_len;
	if (n > room)
		n = room;
	if (n > H2_CHUNK)
		n = H2_CHUNK;
	off = w->rec_len;
	if (off > RING_SCRATCH || n == 0) {
		w->stop = STOP_MAP;
		return 1;
	}
	asm volatile("" : "+r"(n));
	if (n > H2_CHUNK)
		return 1;
	if (hdr) {
		/* At most the 9 bytes of a frame header: from the window. */
		__u64 j;

		if (n > H2_FRAME_HDR)
			n = H2_FRAME_HDR;
		if (w->pos < w->win_lo || w->pos + n > w->win_hi) {
			__u64 wn = w->seg_hi - w->pos;

			if (wn > H2_WIN)
				wn = H2_WIN;
			asm volatile("" : "+r"(wn));
			if (wn < n || wn > H2_WIN) {
				w->stop = STOP_MAP;
				return 1;
			}
			if (bpf_probe_read_user(s->win, wn, (void *)(w->ub + (w->pos - w->seg_lo)))) {
				w->stop = STOP_FAULT;
				return 1;
			}
			w->win_lo = w->pos;
			w->win_hi = w->pos + wn;
		}
		j = w->pos - w->win_lo;
#pragma unroll
		for (int k = 0; k < H2_FRAME_HDR; k++) {
			__u64 jk = j + k;

			if (k >= n)
				break;
			if (jk >= H2_WIN || off + k >= sizeof(s->rec.buf) + sizeof(s->pad)) {
				w->stop = STOP_MAP;
				return 1;
			}
			s->rec.buf[off + k] = s->win[jk];
		}
	} else if (bpf_probe_read_user(&s->rec.buf[off], n, (void *)(w->ub + (w->pos - w->seg_lo)))) {
		w->stop = STOP_FAULT;
		return 1;
	}
	if (hdr) {
#pragma unroll
		for (int k = 0; k < 4; k++) {
			__u64 j = w->d.nf + k - w->pos;

			if (j < n && j < 4)
				w->d.hdr |= (__u32)s->rec.buf[off + j] << (24 - 8 * k);
		}
	}
	at = w->rseg;
	asm volatile("" : "+r"(at));
	if (at > RING_SCRATCH - 24) {
		w->stop = STOP_MAP;
		return 1;
	}
	g = (struct h2_seg *)&s->rec.buf[at];
	g->len += n;
	w->rec_len += n;
	w->pos += n;
	w->rseg_end = w->pos;
	w->copied += n;
	if (hdr && w->pos == w->d.nf + H2_FRAME_HDR) {
		__u32 len = w->d.hdr >> 8, type = w->d.hdr & 0xff;
		__u64 payload = w->d.nf + H2_FRAME_HDR;

		w->frames++;
		if (type == F_HEADERS)
			w->headers++;
		w->d.copy_end = payload;
		if (h2_needed(type)) {
			if (len > h2_hdr_cap) {
				w->cut++;
				w->cut_bytes += len - h2_hdr_cap;
				w->d.copy_end = payload + h2_hdr_cap;
			} else {
				w->d.copy_end = payload + len;
			}
		}
		w->d.nf = payload + len;
		w->d.hdr = 0;
	}
	return 0;
}

static __always_inline long h2_step1(struct h2_walk *w)
{
	__u64 lim, n;

	if (w->pos >= w->end)
		return 1;
	if (w->pos >= w->seg_hi) {
		struct iovec v;

		if (!w->iov || w->iov_i >= w->iov_n) {
			w->stop = STOP_SHORT;
			return 1;
		}
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(w->iov + (__u64)w->iov_i * sizeof(v)))) {
			w->stop = STOP_FAULT;
			return 1;
		}
		w->iov_i++;
		w->ub = (__u64)v.iov_base;
		w->seg_lo = w->seg_hi;
		w->seg_hi = w->seg_lo + v.iov_len;
		if (w->seg_hi > w->end)
			w->seg_hi = w->end;
		return 0;
	}
	lim = w->seg_hi;
	if (w->pos < w->d.copy_end) {
		if (lim > w->d.copy_end)
			lim = w->d.copy_end;
		return h2_copy(w, lim - w->pos, false);
	}
	if (w->pos < w->d.nf) {
		if (lim > w->d.nf)
			lim = w->d.nf;
		w->skipped += lim - w->pos;
		w->pos = lim;
		return 0;
	}
	if (w->h1) {
		/* HTTP/1.x: no frames; at nf, the call's last bytes. */
		w->d.copy_end = w->end;
		w->d.nf = w->end;
		return 0;
	}
	n = w->d.nf + H2_FRAME_HDR - w->pos;
	if (n > lim - w->pos)
		n = lim - w->pos;
	return h2_copy(w, n, true);
}

/*
 * One step of the walk; the record is committed from the callbacks only
 * (a commit after bpf_loop() in the program itself trips the 6.18
 * verifier: EFAULT).
 */
static __always_inline long h2_step_body(void)
{
	struct h2_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&h2_scratchbuf, &zero);
	if (!s)
		return 1;
	if (!h2_step1(&s->w))
		return 0;
	h2_flush(&s->w, s);
	return 1;
}

static __attribute__((unused)) long h2_step(__u32 i, void *ctx)
{
	return h2_step_body();
}

/* Commits what a walk that ran out of steps staged. */
static long h2_flush_cb(__u32 i, void *ctx)
{
	struct h2_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&h2_scratchbuf, &zero);
	if (s)
		h2_flush(&s->w, s);
	return 1;
}

/*
 * Kernels without bpf_loop (before 5.17; the loader clears h2_have_loop):
 * the same steps, from a bounded loop in the program. They are global
 * functions (Linux 5.6+), which the verifier checks once each, on their
 * own, instead of once per iteration of the loop that calls them: the loop
 * itself is a handful of instructions per step. H2_STEPS_BOUNDED steps per
 * call; a call with more frames than that is cut (loop_bound), as with
 * bpf_loop's H2_STEPS.
 */
#define H2_STEPS_BOUNDED 1024

__noinline int h2_step_bounded(void)
{
	/* The step's body inlined, not a call of h2_step: a third frame
	 * (program, this function, h2_step) would count 32 bytes more against
	 * the 512 a chain of calls may use on kernels without BPF private
	 * stacks (6.1 refused h2_raw_sys at 544). */
	return h2_step_body();
}

__noinline int h2_flush_bounded(void)
{
	return h2_flush_cb(0, 0);
}

#endif /* H2_FRAMES_H */
