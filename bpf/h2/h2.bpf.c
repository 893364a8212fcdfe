//go:build ignore
/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The grpc receiver's capture: the HTTP/2 framing of every TCP connection on
 * the host, from tracepoints only (no kprobes, no uprobes, no change to the
 * applications), written into the receiver's own ring (ring/ring.h,
 * ring/producer.h) as the records of h2.h. TLS plaintext (opt-in, tls*.h)
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
 * task's saved user registers (x86-64 or arm64: h2/arch.h), after the call, when the bytes are
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
 *   h2_conns    HTTP/2 connections that carried a call: found HTTP/2 (the
 *               client preface, or a SETTINGS frame, at offset 0; a
 *               plausible frame header for a connection that predates the
 *               capture), walked on probation in h2_pending, and moved here
 *               after a call with a HEADERS frame (max_connections): a
 *               flood of connections that only look like HTTP/2 never
 *               evicts one;
 *   h2_not_h2   found not HTTP/2: the key only, nothing else kept.
 * A call looks in h2_conns first, then h2_not_h2 (a hit: skipped, that one
 * lookup more), then h2_pending. TLS sessions go the same way. An HTTP/2 direction walks its frames
 * with bpf_loop (Linux 5.17+; before, a bounded loop of global functions),
 * keeping the offset of the next frame header, the end of the payload to
 * copy and the first 4 bytes of a header split across calls; it copies every frame header, the payloads the tracker needs
 * (HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM, GOAWAY; cut at
 * h2_hdr_cap) and the client preface, never a DATA, PING or WINDOW_UPDATE
 * payload. Everything skipped, cut or lost is counted in h2_counters.
 *
 * One compilation unit: this file includes the headers beside it, each of one
 * concern, in this order (each uses only what those before it define):
 *   arch.h        what differs between x86-64 and arm64 (numbers, registers)
 *   config.h      limits, HTTP/2 constants, the loader's settings
 *   sock.h        what a TCP socket says (counters, ISNs; the fd walk)
 *   conn.h        a connection's state, key and maps, and its lookup
 *   scratch.h     counters and the per-CPU staging of records and walks
 *   state.h       connection life (sock:inet_sock_set_state), the close record
 *   frames.h      the frame walk (bpf_loop, or the bounded loop)
 *   tls_sock.h    the TCP socket under a TLS session (OpenSSL, Go)
 *   detect.h      HTTP/2 or not, and the open record
 *   ringshare.h   the shares of the ring per connection and per uid (token
 *                 buckets of bytes copied plus a cost per frame walked)
 *   call.h        one send or receive: detection, gaps, walk, counters
 *   hooks.h       the socket hooks (sock_*, sys_*, raw_sys)
 *   tls.h         what the TLS probes share
 *   tls_openssl.h the OpenSSL uprobes
 *   tls_go.h      the Go crypto/tls uprobes
 *
 * Built a second time with RING_NO_FETCH (the h2nf objects) for kernels
 * without BPF atomic fetch, exchange and compare-and-exchange (before Linux
 * 5.12; Debian 11's 5.10): the records go to a BPF ring buffer, numbered
 * by the reader (ring/producer.h, RING_RB); connection ids are numbered per
 * CPU; the busy flags and the HTTP/2 decision are plain stores, which a
 * program that is not preempted (tracepoints and uprobes run so there)
 * makes safe for a per-CPU flag, and leaves a two-CPU race in the decision
 * (detect.h). Only raw_sys, h2_state and the TLS probes: the sock_* and
 * sys_* programs need bpf_task_pt_regs (Linux 5.15), and the frame walk is
 * the bounded loop (no bpf_loop: 5.17).
 */
#include "vmlinux.h"
#include "bpf_helpers.h"
#include "bpf_tracing.h"
#include "bpf_core_read.h"
#include "ring/ring.h"
#ifdef RING_NO_FETCH
#define RING_RB /* ring/producer.h: the records go to a ring buffer */
#endif
#include "ring/producer.h"
#include "h2/h2.h"

char LICENSE[] SEC("license") = "GPL"; /* GPL-2.0-only, one of the two licenses above */

#include "h2/arch.h"
#include "h2/config.h"
#include "h2/sock.h"
#include "h2/conn.h"
#include "h2/scratch.h"
#include "h2/state.h"
#include "h2/frames.h"
#include "h2/tls_sock.h"
#include "h2/detect.h"
#include "h2/ringshare.h"
#include "h2/call.h"
#include "h2/hooks.h"
#include "h2/tls.h"
#include "h2/tls_openssl.h"
#include "h2/tls_go.h"
