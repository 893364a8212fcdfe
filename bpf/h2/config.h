/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The capture's limits and HTTP/2 constants, and the settings the loader
 * writes (receiver/grpcreceiver/internal/capture/load_linux.go).
 */
#ifndef H2_CONFIG_H
#define H2_CONFIG_H

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

/* HTTP/1.x (h1.h): of each call on an HTTP/1 connection, the first bytes
 * are copied (h2_hdr_cap of them when the call starts a message, a request
 * or status line, or follows a short call; H1_BODY_CAP when it does not:
 * the start of a chunk-size line) and the last H1_TAIL (a chunked body's last chunk); what lies
 * between is skipped. */
#define H1_BODY_CAP 256
#define H1_TAIL 64
/* A call after one shorter than this is copied as a message's start (Go's
 * servers read a request's first byte alone, then the rest). */
#define H1_SHORT 16

/* Set by the loader. */
volatile const __u32 h2_hdr_cap = 16384; /* most payload bytes copied per frame */
volatile const __u32 h2_max_iov = 1024;  /* most iovecs walked per call */
volatile const __u32 h2_have_loop = 1;   /* 0: the kernel has no bpf_loop (Linux 5.17); see h2_step_bounded */
/* Each connection's share of the ring: tokens per second and at most at
 * once (h2_tokens); 0: no limit. A call costs the bytes it copied plus
 * h2_frame_cost per frame header it walked (ringshare.h). */
volatile const __u64 h2_rate = 0;
volatile const __u64 h2_burst = 0;
volatile const __u64 h2_frame_cost = 0;
/* Each user's share (uid, all its connections together; h2_users): tokens
 * per second and at most at once; 0: no limit. */
volatile const __u64 h2_user_rate = 0;
volatile const __u64 h2_user_burst = 0;
/* 1: the TLS probes are attached: a socket call made inside an OpenSSL call
 * names the socket under its SSL object (h2_ssl_isn). */
volatile const __u32 h2_tls_on = 0;
/* Which protocols are captured: 0 turns HTTP/2 or HTTP/1.x off (its
 * connections are then taken for neither, h2_not_h2). */
volatile const __u32 h2_http2_on = 1;
volatile const __u32 h2_http1_on = 1;
/* The collector's own process (its tgid; 0: none): its calls are skipped,
 * so that its exports (OTLP over HTTP/1.1 or HTTP/2) never become spans
 * that it exports again. When the collector runs in a pid namespace of its
 * own (a container without the host's pids), h2_self_tgid is its tgid
 * there, and h2_self_pidns_dev and _ino name that namespace (its
 * /proc/self/ns/pid); 0: the initial namespace, h2_self_tgid is global. */
volatile const __u32 h2_self_tgid = 0;
volatile const __u64 h2_self_pidns_dev = 0;
volatile const __u64 h2_self_pidns_ino = 0;

/* Never read: put the record structs into BTF (the Go layout test reads them). */
const struct h2_open *const h2_open_btf = 0;
const struct h2_close *const h2_close_btf = 0;
const struct h2_seg *const h2_seg_btf = 0;
const enum h2_rec_flags *const h2_rec_flags_btf = 0;

#endif /* H2_CONFIG_H */
