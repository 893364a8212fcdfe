/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A connection's state (per direction: the next frame header, what to
 * copy, what was seen), its key, the three LRU maps that hold it and where
 * a call finds it (h2.bpf.c's overview).
 */
#ifndef H2_CONN_H
#define H2_CONN_H

/* The next connection id (starts at 1). */
__u64 h2_next_id = 0;

enum h2_state {
	H2_UNKNOWN = 0,
	H2_YES = 1,
	H2_NO = 2,   /* neither HTTP/2 nor HTTP/1.x */
	H1_YES = 3,  /* HTTP/1.x (h1.h) */
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
	__u8 h1_short;  /* HTTP/1.x: the last call was short (Go's servers read 1 byte first): the next may hold a head's rest */
	__u8 _pad[5];
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

/* HTTP/2 connections (H2_YES) that carried a call (a HEADERS frame). */
struct h2_conn_map h2_conns SEC(".maps");

/* HTTP/1.x connections (H1_YES) that carried a request line: a map of
 * their own, so that a flood of them (a request line is as cheap to send
 * as nothing) evicts its own kind only, never an HTTP/2 channel's state. */
struct h2_conn_map h1_conns SEC(".maps");

/* Connections not yet classified (H2_UNKNOWN), and HTTP/2 and HTTP/1.x
 * connections on probation (H2_YES, H1_YES; no HEADERS frame or request
 * line yet: walked from here): a flood of either evicts its own kind only,
 * never a connection in h2_conns. */
struct h2_conn_map h2_pending SEC(".maps");

/* Connections found neither HTTP/2 nor HTTP/1.x (H2_NO): the key only. One evicted is seen
 * again as a connection that predates the capture (h2_pending, mid-stream). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* replaced by the loader */
	__type(key, struct h2_key);
	__type(value, __u8);
} h2_not_h2 SEC(".maps");

#ifdef RING_NO_FETCH
/* No fetch-add: each CPU numbers its own connections, the CPU (plus one)
 * in the top 24 bits. An id is a key, never compared for order. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} h2_cpu_ids SEC(".maps");

static __always_inline __u64 h2_new_id(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&h2_cpu_ids, &zero);

	if (!n)
		return 0;
	*n += 1;
	return ((__u64)bpf_get_smp_processor_id() + 1) << 40 | (*n & ((1ULL << 40) - 1));
}
#else
static __always_inline __u64 h2_new_id(void)
{
	return __sync_fetch_and_add(&h2_next_id, 1) + 1;
}
#endif

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
	c = bpf_map_lookup_elem(&h1_conns, key);
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
	if (!c)
		c = bpf_map_lookup_elem(&h1_conns, key);
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
 * A connection on probation (state H2_YES in h2_pending) that carried a
 * call: moved into h2_conns (HTTP/1.x: h1_conns), after its call's walk. Both directions may get
 * here at once: the first inserts the whole state, each copies its own
 * direction's (its call changed it), the calls after find it in h2_conns.
 * Returns the state in h2_conns, NULL when it could not be moved (the next
 * call with a HEADERS frame tries again). A pending entry made for the key
 * while h2_conns already held it (an eviction or a close raced) is dropped:
 * its offsets are not the connection's.
 */
static __always_inline struct h2_conn *h2_promote(struct h2_key *key, struct h2_conn *c, int dir,
						  struct h2_stats *st)
{
	struct h2_conn *n;

	if (c->state == H1_YES) {
		bpf_map_update_elem(&h1_conns, key, c, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&h1_conns, key);
	} else {
		bpf_map_update_elem(&h2_conns, key, c, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&h2_conns, key);
	}
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

#endif /* H2_CONN_H */
