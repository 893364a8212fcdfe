/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The grpc receiver's capture records (bpf/h2/h2.bpf.c), written into its own
 * ring (bpf/ring/) and decoded again, byte for byte, in Go
 * (receiver/grpcreceiver/internal/capture). Change one, change the other:
 * the Go tests check the sizes below.
 *
 * Every record starts with struct h2_rec. Then, by kind:
 *   H2_REC_OPEN   struct h2_open: a TCP connection found to speak HTTP/2
 *                 (or HTTP/1.x: H2_F_HTTP1)
 *                 (emitted once, before its first H2_REC_DATA): its
 *                 endpoints, its role and the inode of its socket's network
 *                 namespace (two pods' loopback connections can have equal
 *                 addresses and ports); a TLS session's are those of the TCP
 *                 socket under it, when found (H2_F_ISN);
 *   H2_REC_DATA   nseg segments, each struct h2_seg then len bytes of one
 *                 direction's byte stream at stream offset off, the next
 *                 segment at the next multiple of 8; with H2_F_SEQ each
 *                 segment's seq is the TCP sequence number of its first
 *                 byte (a socket's bytes; never TLS plaintext, whose
 *                 offsets are not TCP's);
 *   H2_REC_CLOSE  struct h2_close: the connection reached TCP_CLOSE (TLS:
 *                 SSL_free, Go (*tls.Conn).Close).
 * What a DATA record holds (the contract with the HTTP/2 tracker): every
 * 9-byte frame header, the 24-byte client preface, the payloads of HEADERS,
 * CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM and GOAWAY frames cut at
 * h2_hdr_cap bytes (the cut counted). Nothing else, never DATA payloads: the
 * holes between segments are those payloads, or a gap.
 * An HTTP/1.x connection's DATA records (H2_F_HTTP1) hold, of each call, its
 * first bytes (h2_hdr_cap of them when the call starts with a request or
 * status line, else H1_BODY_CAP) and its last H1_TAIL bytes; a record whose
 * first segment starts at the call's first byte has H2_F_CALL_START.
 */
#ifndef H2_H
#define H2_H

enum h2_kind {
	H2_REC_OPEN = 1,
	H2_REC_DATA = 2,
	H2_REC_CLOSE = 3,
};

enum h2_dir {
	H2_EGRESS = 0,  /* bytes the observed process wrote */
	H2_INGRESS = 1, /* bytes it read */
};

enum h2_role {
	H2_ROLE_UNKNOWN = 0, /* established before the capture started */
	H2_ROLE_CLIENT = 1,  /* connect() */
	H2_ROLE_SERVER = 2,  /* accept() */
};

/* The head of every record: 40 bytes. */
struct h2_rec {
	__u64 conn;     /* connection id: unique among the connections the capture has seen */
	__u64 time_ns;  /* bpf_ktime_get_boot_ns() */
	__u64 start_ns; /* the current task's group leader start_boottime (0 in softirq) */
	__u32 pid;      /* tgid of the current task (0 in softirq) */
	__u32 tid;
	__u8 kind;      /* enum h2_kind */
	__u8 dir;       /* enum h2_dir (H2_REC_DATA) */
	__u16 nseg;     /* H2_REC_DATA: segments that follow */
	__u32 flags;    /* enum h2_rec_flags */
};

enum h2_rec_flags {
	H2_F_SOFTIRQ = 1 << 0, /* written outside a process context: pid, tid, start_ns are 0 */
	H2_F_SEQ = 1 << 1,     /* H2_REC_DATA: the segments' seq are TCP sequence numbers (else 0) */
	H2_F_ISN = 1 << 2,     /* H2_REC_OPEN of a TLS session: isn_snd, isn_rcv are its TCP socket's */
	H2_F_HTTP1 = 1 << 3,   /* H2_REC_OPEN, H2_REC_DATA: the connection speaks HTTP/1.x */
	H2_F_CALL_START = 1 << 4, /* H2_REC_DATA (HTTP/1.x): the first segment starts at its call's first byte */
};

struct h2_open {
	struct h2_rec h;
	__u64 est_ns;   /* when the connection was established (0: before the capture) */
	__u8 laddr[16]; /* IPv4 in the first 4 bytes, network order */
	__u8 raddr[16];
	__u16 lport;    /* host order */
	__u16 rport;
	__u8 family;    /* AF_INET (2) or AF_INET6 (10); 0: a TLS session whose socket was not found (endpoints unknown) */
	__u8 role;      /* enum h2_role */
	__u8 _pad[2];
	__u32 netns;    /* inode of the socket's network namespace (0: unknown, as family) */
	/* H2_F_ISN (TLS sessions whose TCP socket was found): what the socket
	 * says of the connection's initial sequence numbers, read when the
	 * session was opened: snd_una - bytes_acked (the local ISN, plus one on
	 * the end that accepted) and rcv_nxt - bytes_received (the peer's ISN
	 * plus one). Both ends of the connection compute the same pair, on any
	 * host, through NAT (spanmap: the TLS call ids). */
	__u32 isn_snd;
	__u32 isn_rcv;
	__u32 _pad2;    /* 104 bytes: a multiple of 8 */
};

struct h2_close {
	struct h2_rec h;
	__u64 total[2]; /* bytes per direction the calls seen moved, from offset 0 (0 when the connection predates the capture) */
};

struct h2_seg {
	__u64 off; /* stream offset of the first byte */
	__u32 len;
	__u32 seq; /* with H2_F_SEQ: the TCP sequence number of the first byte (else 0) */
};

/* h2_counters (map): one per-CPU struct h2_stats. */
struct h2_stats {
	__u64 sock_calls;     /* socket send/recv calls seen */
	__u64 not_tcp;        /* ... on sockets that are not TCP over IPv4/IPv6 */
	__u64 not_socket;     /* fallback path: read/write calls on fds that are not sockets */
	__u64 fd_unreadable;  /* fallback path: the fd table walk failed */
	__u64 unsupported;    /* calls on tracked connections not from the syscalls understood (sendmmsg, sendfile, splice, io_uring, kernel) */
	__u64 peek;           /* MSG_PEEK reads, skipped (they consume nothing) */
	__u64 conns_established; /* TCP connections established while attached */
	__u64 conns_predating;   /* TCP connections first seen mid-stream (established before, or evicted) */
	__u64 conns_h2;       /* connections found to speak HTTP/2 */
	__u64 conns_not_h2;   /* connections found not to */
	__u64 conns_closed;   /* HTTP/2 connections closed (H2_REC_CLOSE) */
	__u64 frames;         /* frame headers walked */
	__u64 bytes_copied;   /* bytes copied into records */
	__u64 bytes_skipped;  /* bytes of HTTP/2 connections not copied (DATA, PING, WINDOW_UPDATE payloads) */
	__u64 headers_cut;    /* frames whose payload was cut at h2_hdr_cap */
	__u64 bytes_cut;      /* bytes cut */
	__u64 desync;         /* times a direction lost its frame boundaries (bytes missed) */
	__u64 resync;         /* times it found them again at a plausible frame header */
	__u64 desync_bytes;   /* bytes skipped while out of sync */
	__u64 loop_bound;     /* calls whose frames were more than the walk's bound: the rest skipped, out of sync */
	__u64 read_fault;     /* user memory that could not be read: out of sync */
	__u64 busy;           /* calls skipped: this CPU's staging buffer was in use (preempted program) */
	__u64 records;        /* records committed */
	__u64 iov_cut;        /* iovec arrays longer than the walk's bound */
	__u64 tls_calls;      /* OpenSSL SSL_write / SSL_read (and _ex) calls that moved bytes (tls opt-in) */
	__u64 conns_tls;      /* TLS sessions (SSL objects, Go *tls.Conn) seen */
	__u64 go_tls_calls;   /* Go crypto/tls (*Conn).Write / Read calls that moved bytes (tls opt-in) */
	__u64 go_tls_errors;  /* Reads that returned an error (their bytes before it still walked) */
	__u64 tls_after_close; /* TLS calls on a closed session that were not a new session's start: skipped */
	/* Appended (the counters above keep their places). */
	__u64 not_h2_calls;   /* calls on connections known not HTTP/2 (h2_not_h2): skipped after one lookup */
	__u64 promote_failed; /* calls skipped moving their HTTP/2 connection into h2_conns: not inserted, or a stale pending entry (never expected) */
	__u64 throttled;      /* calls not walked: their connection had copied its share of the ring (h2_rate) */
	__u64 throttled_bytes; /* ... their bytes (a hole: the direction finds its frames again later) */
	__u64 tls_sock;       /* TLS sessions opened with their TCP socket found (H2_F_ISN) */
	__u64 tls_no_sock;    /* ... without: the socket not found (ids local to the host) */
	__u64 throttled_user; /* calls not walked: their user (uid) had spent its share of the ring (h2_user_rate) */
	__u64 throttled_user_bytes; /* ... their bytes */
	__u64 frame_tokens;   /* tokens the shares charged for frames walked and HTTP/1.x calls ((frames + calls) x h2_frame_cost), over the bytes copied */
	__u64 conns_confirmed; /* HTTP/2 connections admitted into h2_conns: a HEADERS frame seen (before: on probation in h2_pending) */
	__u64 conns_h1;       /* connections found to speak HTTP/1.x */
	__u64 h1_calls;       /* calls on HTTP/1.x connections walked */
	__u64 self_calls;     /* calls of the collector itself (h2_self_tgid), skipped: its own exports */
};

#endif
