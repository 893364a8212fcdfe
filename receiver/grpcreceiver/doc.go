// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package grpcreceiver is the `grpc` receiver: one span for every gRPC (and
// plain HTTP/2) call made or served on the host. BPF programs on socket or
// system call tracepoints copy each TCP connection's HTTP/2 frame headers
// and header blocks (never message bodies) into a sequencer ring
// (internal/capture); the HTTP/2 tracker (internal/h2) reassembles them,
// decodes HPACK and follows every stream; each finished call becomes a
// CLIENT or SERVER span. With tls enabled, uprobes also take the plaintext
// of OpenSSL (SSL_write, SSL_read and their _ex forms) and of Go's
// crypto/tls ((*tls.Conn).Write, and Read at its entry and every RET, found
// by internal/gotls; never uretprobes in Go code).
package grpcreceiver
