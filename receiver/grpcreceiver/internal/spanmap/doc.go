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
// When the call's TCP sequence numbers are known (h2.Call.ReqSeqKnown:
// socket bytes, not TLS plaintext), its ids are made of what both ends see
// alike, on any host, under any collector, through any NAT: the sequence
// number of the first byte of the request's first HEADERS frame
// (Call.ReqSeq), that of the response's (Call.RespSeq, or a marker when no
// response HEADERS was seen) and the stream id. Nothing local goes in: no
// boot id, instance, socket id, address or port (NAT rewrites those, and
// the two ends are on different hosts). The client span's id and the trace
// id are sha256 of "seq.grpc.client.tcpseq" and those; the server span's
// id is sha256 of "seq.grpc.server.tcpseq" and those, its parent the
// client span, its trace the client's. So the client's collector and the
// server's compute one trace on their own, with nothing written into the
// traffic and nothing exchanged. A valid traceparent in the request still
// wins: the trace id is its, and the client span's parent its parent. A
// server span whose client is not observed by any collector names a
// parent that is never exported (as any span whose caller is not traced).
//
// Why not the handshake's ISNs, which name the connection: one end may
// not have seen the handshake (a collector started after the connection
// was opened, on one node only), and both ends must compute the ids from
// what they both always see: the numbers of bytes of the call itself.
// Both ends must also agree on whether the response's first HEADERS was
// seen: a call reset before any response leaves both without it, alike,
// but one that one end saw with its response HEADERS and the other
// without (a reset crossing the response, a connection closed before the
// client read it, a gap on one side) gets two traces.
//
// Odds of collision: the inputs carry 64 bits of sequence numbers, each
// half from another kernel's randomised ISN (RFC 6528) moved by the
// connection's progress, plus the stream id (counted here as nothing: most
// connections' ids are small). Within one connection two calls never
// share them (stream ids are not reused). Across a fleet, by the birthday
// bound, n calls give about n^2/2^65 pairs of calls with equal inputs (one
// trace, equal span ids): at 1e5 calls/s for a day (8.6e9 calls) about 2
// such pairs, for an hour 0.0035, at 1e4 calls/s for a day 0.02. Span ids
// are 64 bits of the hash, so they collide at that rate however they are
// made; only equal trace ids (equal inputs) merge two calls.
//
// A TLS session's plaintext has no TCP sequence numbers. When the capture
// found the TCP socket under it (h2.Call.ISN.Known), the ids are made of
// the connection's initial sequence numbers, the client's and the
// server's (h2.SockISN.ClientServer: each end derives both from its own
// socket), and the stream id, which a connection never reuses: sha256 of
// "seq.grpc.client.tlsisn" or "seq.grpc.server.tlsisn" and those, with
// the same parent and trace rules. Nothing local goes in either, so they
// join across hosts and NAT too. Collisions: two connections with equal
// ISN pairs (64 random bits), about m^2/2^65 pairs among m connections.
//
// When neither is known (a TLS session whose socket was not found), the
// ids are local: the client span's id is sha256 of "seq.grpc.client", the
// boot id, the Mapper's Instance, the client socket's ConnID, the client's 4-tuple and
// the stream id. The server side of a call made on this host knows all of
// them (h2 pairs the two sockets by their reversed 4-tuple:
// Call.ClientConn), so its span names the client span as its parent, in
// the client's trace, as soon as it ends, with nothing buffered. The trace
// id is the request's traceparent's when it has a valid one (the client
// span's parent is then the traceparent's parent), else derived from the
// same identity. A server span whose client is not on this host (or not
// tracked) is the child of the request's traceparent, or the root of a new
// trace. Server span ids are derived from the server socket's identity and
// the stream id.
//
// # Methods not known
//
// A call whose :path did not decode is rpc.method _OTHER (semconv), the
// span named grpc. When h2 could name the HPACK entry the :path refers to
// (an entry inserted before the capture started, on a connection already
// open), the span also gets seq.grpc.method_placeholder, "_UNKNOWN_<n>":
// the same for the calls of one method on one connection (with
// network.peer.* and process.pid), counted in Stats.SpansMethodPlaceholder.
package spanmap
