// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package testcapture is a test aid for the grpc receiver: it taps real
// net.Conns (a gRPC client's and server's) and records every Write and Read
// as an h2.Chunk with the offsets the kernel would see for those syscalls,
// and it emulates the BPF program's capture (Strip): of each syscall's
// bytes only the client preface, every frame header and the payloads of
// HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM and GOAWAY
// frames are kept, as separate chunks of the contiguous kept runs.
//
// Only tests may use it (receiver/grpcreceiver and its internal packages).
package testcapture
