//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The grpc receiver's capture: the HTTP/2 framing of every TCP connection on
 * the host, from tracepoints only (no kprobes, no uprobes, no change to the
 * applications), written into the receiver's own sequencer ring (seq.h,
 * seq_ring.h) as the records of h2.h. TLS plaintext (opt-in, at the bottom)
 * is taken by uprobes on OpenSSL and on Go's crypto/tls.
 *
 * Where the bytes are seen, three program sets; the loader attaches one:
 *   sock_*  tp_btf on sock:sock_send_length / sock:sock_recv_length (found
 *           in the kernel's BTF: Linux 6.3+): they fire for socket I/O only
 *           and pass the struct sock;
 *   sys_*   tracepoint syscalls/sys_exit_{write,writev,sendto,sendmsg,read,
 *           readv,recvfrom,recvmsg} on older kernels: the fd is walked to its
 *           struct sock (task->files->fdt->fd[fd]->private_data->sk);
 *   raw_sys tp_btf on raw_syscalls:sys_exit, every system call's exit, the
 *           same eight picked by number and the same fd walk: a raw
 *           tracepoint, not a perf event, for kernels that refuse BPF on the
 *           syscalls:* perf tracepoints.
 * All read the system call's arguments (fd, buffer or iovec array) from the
 * task's saved user registers (x86-64), after the call, when the bytes are
 * in the user buffer either way. The byte stream offsets
 * are the kernel's own: tcp_sock.write_seq and copied_seq at the end of the
 * call, minus its return value, relative to their values when the
 * connection was established (sock:inet_sock_set_state). Caveat: two threads
 * writing (or reading) one socket at the same time can see each other's
 * bytes in those counters; an overlap is skipped, a hole is a gap.
 *
 * Per connection (keyed by the struct sock's address), in three LRU maps so
 * that connections that are not HTTP/2, however many a local user opens,
 * never push out the state of one that is:
 *   h2_pending  not yet classified (every TCP connection at establishment,
 *               or at its first call when it predates the capture); sized
 *               on its own (Options.MaxPending);
 *   h2_conns    found HTTP/2 (the client preface, or a SETTINGS frame, at
 *               offset 0; a plausible frame header for a connection that
 *               predates the capture): moved here from h2_pending
 *               (max_connections);
 *   h2_not_h2   found not HTTP/2: the key only, nothing else kept.
 * A call looks in h2_conns first, then h2_not_h2 (a hit: skipped, that one
 * lookup more), then h2_pending. TLS sessions go the same way. An HTTP/2 direction walks its frames
 * with bpf_loop (Linux 5.17+; before, a bounded loop of global functions),
 * keeping the offset of the next frame header, the end of the payload to
 * copy and the first 4 bytes of a header split across calls; it copies every frame header, the payloads the tracker needs
 * (HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM, GOAWAY; cut at
 * h2_hdr_cap) and the client preface, never a DATA, PING or WINDOW_UPDATE
 * payload. Everything skipped, cut or lost is counted in h2_counters.
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "seq.h"
#include "seq_ring.h"
#include "h2.h"

char LICENSE[] SEC("license") = "GPL"; /* GPL-2.0-only, one of the two licenses above */

#define AF_INET 2
#define AF_INET6 10
#define MSG_PEEK 2
#define RCV_SHUTDOWN 1
#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* x86-64 system call numbers. */
#define NR_READ 0
#define NR_WRITE 1
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47

/* HTTP/2 frame types (RFC 9113). */
#define F_HEADERS 1
#define F_RST_STREAM 3
#define F_SETTINGS 4
#define F_PUSH_PROMISE 5
#define F_GOAWAY 7
#define F_CONTINUATION 9

#define H2_PREFACE_LEN 24
#define H2_FRAME_HDR 9
/* Most bytes one bpf_probe_read_user() copies. */
#define H2_CHUNK 1024
/* Frame headers are read from a window of the user buffer, read once per
 * H2_WIN bytes, not one bpf_probe_read_user() per frame. */
#define H2_WIN 512
/* Most steps (frame headers, copies, skips, iovecs) one call's walk takes. */
#define H2_STEPS 8192
/* A connection that predates the capture (or whose state was evicted) gets
 * offsets from here on: never mistaken for the start of a stream. */
#define H2_PREDATE_BASE (1ULL << 40)
/* Calls on a predating connection looked at for a frame header before it is
 * taken for not HTTP/2. */
#define H2_TRIES 8

/* Set by the loader. */
volatile const __u32 h2_hdr_cap = 16384; /* most payload bytes copied per frame */
volatile const __u32 h2_max_iov = 1024;  /* most iovecs walked per call */
volatile const __u32 h2_have_loop = 1;   /* 0: the kernel has no bpf_loop (Linux 5.17); see h2_step_bounded */
/* Each connection's share of the ring: bytes copied per second and at most
 * at once (h2_tokens); 0: no limit. */
volatile const __u64 h2_rate = 0;
volatile const __u64 h2_burst = 0;
/* 1: the TLS probes are attached: a socket call made inside an OpenSSL call
 * names the socket under its SSL object (h2_ssl_isn). */
volatile const __u32 h2_tls_on = 0;

/* Never read: put the record structs into BTF (the Go layout test reads them). */
const struct h2_open *const h2_open_btf = 0;
const struct h2_close *const h2_close_btf = 0;
const struct h2_seg *const h2_seg_btf = 0;
const enum h2_rec_flags *const h2_rec_flags_btf = 0;

/* The next connection id (starts at 1). */
__u64 h2_next_id = 0;

enum h2_state {
	H2_UNKNOWN = 0,
	H2_YES = 1,
	H2_NO = 2,
};

/* One direction of a connection. */
struct h2_dirst {
	__u64 nf;       /* stream offset of the next frame header */
	__u64 copy_end; /* bytes below this offset are copied (a payload the tracker needs, the preface) */
	__u64 seen;     /* end of the bytes looked at */
	__u64 lastoff;  /* the stream offset of lastseq */
	__u32 lastseq;  /* a TCP sequence number of this direction */
	__u32 hdr;      /* the first 4 bytes of the frame header at nf, as far as read */
	__u8 desync;    /* frame boundaries lost: looking for a frame header at a call's start */
	__u8 based;     /* lastseq and lastoff are set */
	__u8 _pad[6];
};

struct h2_conn {
	__u64 id;
	__u64 est_ns;
	struct h2_dirst d[2];
	__u64 state; /* enum h2_state; left H2_UNKNOWN by one compare-and-swap (64-bit: BPF's atomics) */
	__u8 role;   /* enum h2_role */
	__u8 opened; /* H2_REC_OPEN written */
	__u8 tries;
	__u8 _pad[5];
	/* Its share of the ring (h2_tokens): bytes it may still copy, and when
	 * that was worked out. */
	__s64 tb_tokens;
	__u64 tb_ns;
};

/* What a connection is keyed by: a TCP socket, an OpenSSL SSL object or a
 * Go *tls.Conn. The kinds never collide: a socket key has tgid 0, the TLS
 * ones the process (their pointers are user addresses of that process). */
enum h2_key_kind {
	H2_K_SOCK = 0,    /* ptr: the struct sock */
	H2_K_OPENSSL = 1, /* ptr: the SSL object */
	H2_K_GOTLS = 2,   /* ptr: the crypto/tls.Conn */
};

struct h2_key {
	__u64 ptr;
	__u32 tgid;
	__u32 kind; /* enum h2_key_kind */
};

/* A connection map: LRU hash, sized by the loader. */
struct h2_conn_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* replaced by the loader */
	__type(key, struct h2_key);
	__type(value, struct h2_conn);
};

/* HTTP/2 connections (H2_YES). */
struct h2_conn_map h2_conns SEC(".maps");

/* Connections not yet classified (H2_UNKNOWN): a flood of them evicts its
 * own kind only. */
struct h2_conn_map h2_pending SEC(".maps");

/* Connections found not HTTP/2 (H2_NO): the key only. One evicted is seen
 * again as a connection that predates the capture (h2_pending, mid-stream). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* replaced by the loader */
	__type(key, struct h2_key);
	__type(value, __u8);
} h2_not_h2 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct h2_stats);
} h2_counters SEC(".maps");

/* 1 while a data program stages on this CPU: one preempted in the middle
 * must not have its record overwritten by another. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} h2_busy SEC(".maps");

enum h2_stop {
	STOP_NONE = 0,
	STOP_SHORT = 1, /* the iovecs ended before the call's bytes (never expected) */
	STOP_FAULT = 2, /* user memory unreadable */
	STOP_MAP = 3,   /* a map lookup failed (never expected) */
};

struct h2_walk {
	__u64 pos, end;        /* the cursor and the call's end, stream offsets */
	__u64 seg_lo, seg_hi;  /* the user segment under the cursor, stream offsets */
	__u64 ub;              /* its user address */
	__u64 iov;             /* user struct iovec array (0: one buffer) */
	__u64 rseg_end;        /* stream end of the record's open segment */
	struct h2_dirst d;
	__u32 iov_i, iov_n;
	__u32 rec_len;         /* bytes staged */
	__u32 rseg;            /* scratch offset of the open segment's header (0: none) */
	__u16 nseg;
	__u8 stop;
	__u8 _pad;
	__u32 seqbase;         /* H2_F_SEQ: the TCP sequence number of stream offset o is seqbase + (u32)o */
	__u64 copied, skipped, frames, cut, cut_bytes, records;
	__u64 win_lo, win_hi;  /* the stream offsets h2_scratch.win holds (within one user segment) */
	struct h2_rec hdr;     /* the head of every record of this call */
};

/* A record is staged in rec (the sequencer's scratch layout, for
 * seq_commit); pad lets a bounded copy run past the record's logical end.
 * The walk's state lives here too, not on the stack: the verifier does not
 * track what a map value holds, so the bpf_loop callback's states converge
 * at once instead of exploding (the stack version fails to load with
 * "The sequence of 8193 jumps is too complex"). */
struct h2_scratch {
	struct seq_scratch rec;
	__u8 pad[H2_CHUNK + 64];
	struct h2_walk w;
	__u8 win[H2_WIN];
};

/* Three per CPU: 0 for the data programs (process context), 1 for the state
 * changes (often softirq, which may interrupt a data program), 2 for SSL_free. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct h2_scratch);
} h2_scratchbuf SEC(".maps");

static __always_inline struct h2_stats *h2_st(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&h2_counters, &zero);
}

static __always_inline void h2_fill_rec(struct h2_rec *h, struct h2_conn *c, __u8 kind, __u8 dir, bool task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->conn = c->id;
	h->time_ns = bpf_ktime_get_boot_ns();
	h->kind = kind;
	h->dir = dir;
	h->nseg = 0;
	h->flags = 0;
	if (task) {
		struct task_struct *t = (struct task_struct *)bpf_get_current_task();

		h->start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
		h->pid = pid_tgid >> 32;
		h->tid = (__u32)pid_tgid;
	} else {
		h->start_ns = 0;
		h->pid = 0;
		h->tid = 0;
		h->flags = H2_F_SOFTIRQ;
	}
}

/* The stream offset of TCP sequence number seq in direction d. */
static __always_inline __u64 h2_off(struct h2_dirst *d, __u32 seq)
{
	__s32 delta = (__s32)(seq - d->lastseq);
	__u64 off = d->lastoff + (__s64)delta;

	if (delta > 0) {
		d->lastseq = seq;
		d->lastoff = off;
	}
	return off;
}

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

static __always_inline __u64 h2_new_id(void)
{
	return __sync_fetch_and_add(&h2_next_id, 1) + 1;
}

/* ---- Connection life: sock:inet_sock_set_state ---- */

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
	__u8 one = 1;

	c = bpf_map_lookup_elem(&h2_conns, &key);
	if (!c) {
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
		seq_commit(&s->rec, sizeof(*e), H2_REC_CLOSE);
		if (st) {
			st->conns_closed++;
			st->records++;
		}
	}
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

/* ---- The frame walk ---- */

static __always_inline void h2_flush(struct h2_walk *w, struct h2_scratch *s)
{
	struct h2_rec *h = (struct h2_rec *)s->rec.buf;
	__u32 len = w->rec_len;

	if (!w->nseg)
		return;
	*h = w->hdr;
	h->nseg = w->nseg;
	if (len > SEQ_SCRATCH)
		len = SEQ_SCRATCH;
	seq_commit(&s->rec, len, H2_REC_DATA);
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
	if (w->rec_len + (fresh ? 24 + 1 : 1) > SEQ_SCRATCH) {
		h2_flush(w, s);
		fresh = true;
	}
	if (fresh) {
		at = (w->rec_len + 7) & ~7U;
		asm volatile("" : "+r"(at));
		if (at > SEQ_SCRATCH - 24) {
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
	room = SEQ_SCRATCH - w->rec_len;
	if (n > room)
		n = room;
	if (n > H2_CHUNK)
		n = H2_CHUNK;
	off = w->rec_len;
	if (off > SEQ_SCRATCH || n == 0) {
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
	if (at > SEQ_SCRATCH - 24) {
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
static long h2_step(__u32 i, void *ctx)
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
	return h2_step(0, 0);
}

__noinline int h2_flush_bounded(void)
{
	return h2_flush_cb(0, 0);
}

/* ---- TLS: the socket under a session ---- */

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
 * amd64, unchanged since): Conn.conn, the net.Conn at offset 0 (itab, data);
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

/* ---- Detection ---- */

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
			seq_commit(&s->rec, sizeof(*o), H2_REC_OPEN);
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
	seq_commit(&s->rec, sizeof(*o), H2_REC_OPEN);
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
	was = __sync_val_compare_and_swap(&c->state, H2_UNKNOWN, yes ? H2_YES : H2_NO);
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

/* ---- Where a connection's state is ---- */

/*
 * The connection's state, cheapest first: an HTTP/2 connection's
 * (h2_conns); a connection known not HTTP/2 (h2_not_h2: NULL, *skip); one
 * not classified yet (h2_pending, *pending). NULL without *skip: not known.
 * sk: a socket key's socket, looked at (TCP?) before h2_pending is; 0 for TLS.
 */
static __always_inline struct h2_conn *h2_find(struct h2_key *key, struct sock *sk, struct h2_stats *st, bool *pending,
					       bool *skip)
{
	struct h2_conn *c = bpf_map_lookup_elem(&h2_conns, key);

	*pending = false;
	*skip = false;
	if (c)
		return c;
	if (bpf_map_lookup_elem(&h2_not_h2, key)) {
		st->not_h2_calls++;
		*skip = true;
		return NULL;
	}
	if (sk && !h2_is_tcp(sk)) {
		st->not_tcp++;
		*skip = true;
		return NULL;
	}
	*pending = true;
	c = bpf_map_lookup_elem(&h2_pending, key);
	if (c)
		return c;
	/* Moved by h2_promote on another CPU since the first lookup (it
	 * inserts into h2_conns before it deletes from h2_pending): without
	 * this look, the call would take the connection for one never seen. */
	c = bpf_map_lookup_elem(&h2_conns, key);
	if (c)
		*pending = false;
	return c;
}

/* A connection found not HTTP/2: its key into h2_not_h2, its state dropped. */
static __always_inline void h2_demote(struct h2_key *key)
{
	__u8 one = 1;

	bpf_map_update_elem(&h2_not_h2, key, &one, BPF_ANY);
	bpf_map_delete_elem(&h2_pending, key);
}

/*
 * A connection found HTTP/2 (state H2_YES in h2_pending): moved into
 * h2_conns. Both directions may get here at once: the first inserts the
 * whole state, each copies its own direction's (its call changed it), the
 * calls after find it in h2_conns. Returns the state in h2_conns, NULL
 * when it could not be moved (the call is skipped, the next one tries
 * again): the walk only ever sees h2_conns' values, so that the verifier
 * explores it once, not once per map it could come from. A pending entry
 * made for the key while h2_conns already held it (an eviction or a close
 * raced) is dropped with its call: its offsets are not the connection's.
 */
static __always_inline struct h2_conn *h2_promote(struct h2_key *key, struct h2_conn *c, int dir,
						  struct h2_stats *st)
{
	struct h2_conn *n;

	bpf_map_update_elem(&h2_conns, key, c, BPF_NOEXIST);
	n = bpf_map_lookup_elem(&h2_conns, key);
	if (!n) {
		st->promote_failed++;
		return NULL;
	}
	bpf_map_delete_elem(&h2_pending, key);
	if (n->id != c->id) {
		st->promote_failed++;
		return NULL;
	}
	n->d[dir] = c->d[dir];
	return n;
}

/*
 * A connection's share of the ring, a token bucket of copied bytes: h2_rate
 * a second, h2_burst at most. One process pair writing header blocks faster
 * than the reader drains them would otherwise lap the ring, and every other
 * connection's records with it. A call made while the bucket is empty is
 * not walked (throttled): a counted hole, after which the direction finds
 * its frames again at a later call, once the bucket refilled. The bucket
 * may go below zero by what one call copied. Racy across CPUs by design: a
 * bound, not an account.
 */
static __always_inline bool h2_tokens(struct h2_conn *c, __u64 now)
{
	__u64 dt = 0;
	__s64 t;

	if (now > c->tb_ns)
		dt = now - c->tb_ns;
	if (dt > 1000000000ULL)
		dt = 1000000000ULL;
	t = c->tb_tokens + (__s64)(dt * h2_rate / 1000000000ULL);
	if (t > (__s64)h2_burst)
		t = (__s64)h2_burst;
	c->tb_tokens = t;
	c->tb_ns = now;
	return t > 0;
}

/* ---- A send or receive on a socket ---- */

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
	struct h2_head hd;
	__u64 a1, a2;

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

		if (h2_is_preface(&hd))
			cs = dir;
		else if (h2_is_settings(&hd) && !(hd.b[4] & 1))
			cs = 1 - dir;
		if (cs >= 0) {
			c->role = cs == H2_EGRESS ? H2_ROLE_CLIENT : H2_ROLE_SERVER;
			c->d[cs].nf = c->d[cs].copy_end = H2_PREFACE_LEN;
		}
	}
	if (pending && c->state == H2_UNKNOWN) {
		if (!h2_detect(c, dir, start, &hd, st, &open)) {
			if (pending && c->state == H2_NO)
				h2_demote(key);
			return;
		}
		detected = true;
	}
	/* HTTP/2 from here on (decided now, or by the other direction). */
	if (pending && !(c = h2_promote(key, c, dir, st)))
		return;
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
	/* Bytes between the last call and this one that were never seen (a
	 * lost event, sendfile, splice, io_uring): harmless inside a payload
	 * that is skipped anyway, else the frame boundaries are lost. */
	if (!w->d.desync && start > w->d.seen && (w->d.copy_end > w->d.seen || start > w->d.nf)) {
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
	/* The record's head first: its time is the bucket's clock too. */
	h2_fill_rec(&w->hdr, c, H2_REC_DATA, dir, true);
	if (h2_rate && !h2_tokens(c, w->hdr.time_ns)) {
		st->throttled++;
		st->throttled_bytes += end - w->pos;
		st->desync++;
		w->d.desync = 1;
		w->d.seen = end;
		c->d[dir] = w->d;
		return;
	}
	w->end = end;
	w->rec_len = sizeof(struct h2_rec);
	if (!tls)
		w->hdr.flags |= H2_F_SEQ; /* the socket's offsets come from TCP sequence numbers (h2_io) */

	if (h2_have_loop) {
		bpf_loop(H2_STEPS, h2_step, NULL, 0);
		if (w->nseg)
			bpf_loop(1, h2_flush_cb, NULL, 0);
	} else {
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
	if (h2_rate)
		c->tb_tokens -= w->copied;
	st->frames += w->frames;
	st->bytes_copied += w->copied;
	st->bytes_skipped += w->skipped;
	st->headers_cut += w->cut;
	st->bytes_cut += w->cut_bytes;
	st->records += w->records;
}

/*
 * Takes this CPU's staging buffer for a data call (its walk state cleared),
 * or counts the call busy: a program preempted mid-call holds it.
 */
static __always_inline bool h2_begin(struct h2_stats *st, __u64 **busy, struct h2_scratch **s)
{
	__u32 zero = 0;

	*busy = bpf_map_lookup_elem(&h2_busy, &zero);
	*s = bpf_map_lookup_elem(&h2_scratchbuf, &zero);
	if (!*busy || !*s)
		return false;
	if (__sync_lock_test_and_set(*busy, 1)) {
		st->busy++;
		return false;
	}
	__builtin_memset(&(*s)->w, 0, sizeof((*s)->w));
	return true;
}

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

	nr = BPF_CORE_READ(regs, orig_ax);
	a1 = BPF_CORE_READ(regs, si);
	a2 = BPF_CORE_READ(regs, dx);
	if (sys) {
		if (nr == NR_RECVFROM)
			flags = BPF_CORE_READ(regs, r10);
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
	__sync_lock_test_and_set(busy, 0);
	return 0;

unsupported:
	st->unsupported++;
	goto out;
}

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
	r = h2_fd_sock(BPF_CORE_READ(regs, di), &sk);
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

/* thread_info.status: a 32-bit (ia32) system call is running. */
#define TS_COMPAT 0x0002

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

	switch (regs->orig_ax) {
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
	 * as the syscalls:* tracepoints never fire for it on x86-64. */
	if (bpf_get_current_task_btf()->thread_info.status & TS_COMPAT)
		return 0;
	return h2_sys(regs, ret, dir);
}

/*
 * TLS, opt-in. The plaintext of a TLS session is one HTTP/2 byte stream per
 * session: offsets are running byte counts per direction, from the first
 * call seen (offset 0: the preface, or the server's SETTINGS, tells client
 * from server; otherwise mid-stream). A session is keyed by its object's
 * address in its process (struct h2_key). Its H2_REC_OPEN carries the TCP
 * socket under it when that is found (h2_tls_isn: its endpoints and
 * initial sequence numbers, H2_F_ISN): the ids both ends of a call compute.
 *
 * OpenSSL: SSL_write / SSL_read and SSL_write_ex / SSL_read_ex (uprobe on
 * entry for the buffer, uretprobe for the length: h2_ssl_write_ret and
 * h2_ssl_read_ret serve both forms, told apart by what the entry saved),
 * SSL_free ends the session. Uretprobes are never used on Go code.
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

	c = h2_find(&key, 0, st, &pending, &skip);
	if (skip)
		return;
	if (!c) {
		struct h2_conn n = {};

		if (bpf_map_lookup_elem(&h2_tls_closed, &key)) {
			__u8 b[H2_FRAME_HDR] = {};

			/* A call on a closed session: only a new session's first
			 * bytes (the preface, or a SETTINGS frame) open one. */
			if (ret < H2_FRAME_HDR || bpf_probe_read_user(b, sizeof(b), (void *)buf) ||
			    !h2_session_start(b)) {
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
	if (!h2_begin(st, &busy, &s))
		return;
	w = &s->w;
	w->ub = buf;
	start = c->d[dir].lastoff;
	end = start + ret;
	c->d[dir].lastoff = end;
	h2_call(c, &key, pending, 0, dir, start, end, ret, s, w, st, true);
	__sync_lock_test_and_set(busy, 0);
}

static __always_inline int h2_tls_enter(void *ssl, const void *buf, void *outp)
{
	struct h2_tls_args a = {.ssl = (__u64)ssl, .buf = (__u64)buf, .outp = (__u64)outp};
	__u64 id = bpf_get_current_pid_tgid();

	bpf_map_update_elem(&h2_tls_calls, &id, &a, BPF_ANY);
	return 0;
}

static __always_inline int h2_tls_exit(int dir, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct h2_stats *st = h2_st();
	struct h2_tls_args *a, args;

	a = bpf_map_lookup_elem(&h2_tls_calls, &id);
	if (!a)
		return 0;
	args = *a;
	bpf_map_delete_elem(&h2_tls_calls, &id);
	if (!st)
		return 0;
	if (args.outp) {
		/* SSL_write_ex / SSL_read_ex: 1 on success, the length stored at outp. */
		__u64 n = 0;

		if (ret != 1)
			return 0;
		if (bpf_probe_read_user(&n, sizeof(n), (void *)args.outp)) {
			st->read_fault++;
			return 0;
		}
		ret = n;
	}
	if (ret <= 0)
		return 0;
	st->tls_calls++;
	h2_tls_data(h2_tls_key(args.ssl, H2_K_OPENSSL), args.buf, dir, ret, st);
	return 0;
}

SEC("uprobe/SSL_write")
int BPF_KPROBE(h2_ssl_write, void *ssl, const void *buf, int num)
{
	return h2_tls_enter(ssl, buf, 0);
}

SEC("uretprobe/SSL_write")
int BPF_KRETPROBE(h2_ssl_write_ret, int ret)
{
	return h2_tls_exit(H2_EGRESS, ret);
}

SEC("uprobe/SSL_read")
int BPF_KPROBE(h2_ssl_read, void *ssl, void *buf, int num)
{
	return h2_tls_enter(ssl, buf, 0);
}

SEC("uretprobe/SSL_read")
int BPF_KRETPROBE(h2_ssl_read_ret, int ret)
{
	return h2_tls_exit(H2_INGRESS, ret);
}

/* OpenSSL 1.1.1+: int SSL_write_ex(SSL *, const void *, size_t, size_t *written). */
SEC("uprobe/SSL_write_ex")
int BPF_KPROBE(h2_ssl_write_ex, void *ssl, const void *buf, __u64 num, void *written)
{
	return h2_tls_enter(ssl, buf, written);
}

/* int SSL_read_ex(SSL *, void *, size_t, size_t *readbytes). */
SEC("uprobe/SSL_read_ex")
int BPF_KPROBE(h2_ssl_read_ex, void *ssl, void *buf, __u64 num, void *readbytes)
{
	return h2_tls_enter(ssl, buf, readbytes);
}

SEC("uprobe/SSL_free")
int BPF_KPROBE(h2_ssl_free, void *ssl)
{
	struct h2_key key = h2_tls_key((__u64)ssl, H2_K_OPENSSL);

	h2_close_conn(key, 2, true);
	bpf_map_delete_elem(&h2_ssl_isn, &key);
	return 0;
}

/*
 * Go crypto/tls (the loader finds the probe points by disassembly:
 * receiver/grpcreceiver/internal/gotls). Go's register ABI (amd64, Go
 * 1.17+): at entry the receiver is in RAX and the slice b in RBX (pointer)
 * and RCX (length); at a RET n is in RAX and the error's itab in RBX (0:
 * nil); R14 is always the goroutine (g). The entry probes sit after the
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
	struct h2_go_call_key k = {.g = ctx->r14, .tgid = bpf_get_current_pid_tgid() >> 32};

	return k;
}

SEC("uprobe/go_tls_write")
int h2_go_write(struct pt_regs *ctx)
{
	struct h2_stats *st = h2_st();
	long n = ctx->cx;

	if (!st || n <= 0)
		return 0;
	st->go_tls_calls++;
	h2_tls_data(h2_tls_key(ctx->ax, H2_K_GOTLS), ctx->bx, H2_EGRESS, n, st);
	return 0;
}

SEC("uprobe/go_tls_read")
int h2_go_read(struct pt_regs *ctx)
{
	struct h2_go_call_key k = h2_go_call_key(ctx);
	struct h2_go_call a = {.conn = ctx->ax, .buf = ctx->bx};
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
	long n = ctx->ax;
	__u64 stack[2];

	a = bpf_map_lookup_elem(&h2_go_calls, &k);
	if (!a)
		return 0;
	args = *a;
	bpf_map_delete_elem(&h2_go_calls, &k);
	if (!st)
		return 0;
	if (ctx->bx)
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
	h2_close_conn(h2_tls_key(ctx->ax, H2_K_GOTLS), 2, true);
	return 0;
}
