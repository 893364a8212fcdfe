// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package spanmap turns the calls of package h2 into spans (semantic
// conventions v1.43.0, the version the rest of this repository uses): one
// CLIENT or SERVER span per call and observer, named by rpc.method, with
// the gRPC status rules of that version, ids that join the two ends of a
// call made on this host into one trace without touching its headers, and
// a link to the process span of the process that made the call (ids of
// internal/procid). Only the grpc receiver may use it.
//
// # Ids
//
// The client span's id is derived, not random: sha256 of "seq.grpc.client",
// the boot id, the client socket's ConnID, the client's 4-tuple and the
// stream id. The server side of a call made on this host knows all of them
// (h2 pairs the two sockets by their reversed 4-tuple: Call.ClientConn), so
// its span names the client span as its parent, in the client's trace, as
// soon as it ends, with nothing buffered. The trace id is the request's
// traceparent's when it has a valid one (the client span's parent is then
// the traceparent's parent), else derived from the same identity. A server
// span whose client is not on this host (or not tracked) is the child of
// the request's traceparent, or the root of a new trace. Server span ids are
// derived from the server socket's identity and the stream id.
package spanmap
