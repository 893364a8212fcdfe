// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package capture loads the grpc receiver's BPF programs (bpf/h2/h2.bpf.c),
// attaches them to the socket or system call tracepoints and to
// sock:inet_sock_set_state, maps their sequencer ring and decodes its
// records into the HTTP/2 tracker's input (package h2). The decoder is pure
// Go; loading needs root.
package capture

//go:generate go tool bpf2go -tags linux -cc clang-14 -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type h2_stats h2 ../../../../bpf/h2/h2.bpf.c -- -I../../../../bpf -I../../../../bpf/headers

// The same source without BPF atomic fetch (RING_NO_FETCH): raw_sys, h2_state
// and the TLS probes writing to a ring buffer, for kernels before Linux 5.12
// (bpf/h2/h2.bpf.c says what differs).
//go:generate go tool bpf2go -tags linux -cc clang-14 -cflags "-O2 -g -Wall -Werror -DRING_NO_FETCH" -target amd64,arm64 -no-global-types h2nf ../../../../bpf/h2/h2.bpf.c -- -I../../../../bpf -I../../../../bpf/headers
