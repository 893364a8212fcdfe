// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package http1 turns the captured bytes of HTTP/1.x connections into
// calls (h2.Call, Protocol h2.ProtoHTTP1): one per request/response pair
// per end. It is the HTTP/1 half of the grpc receiver's pure-Go core,
// beside package h2, and takes the same inputs (h2.ConnOpen, h2.Chunk,
// h2.ConnClose, h2.Lost, Expire) from one goroutine. Only
// receiver/grpcreceiver and its internal packages may use it.
//
// # What the capture gives
//
// Of each system call on a connection the capture found speaking HTTP/1.x
// it copies the first bytes (up to a cap; Chunk.CallStart) and the last
// ones; what lies between is a hole. Each direction is parsed as RFC 9112
// says, incrementally, every byte looked at a bounded number of times
// whatever the chunking (a head sent one byte a call costs what it costs
// in one call): the start line and header fields (kept: method,
// request-target, Host, User-Agent, Content-Type, traceparent, the framing
// fields), then the body, skipped by its framing (Content-Length, chunked,
// none, close-delimited). A hole inside a body skipped by length costs
// nothing, and so does one in a close-delimited body. A hole in a chunked
// body's framing (a chunk-size line in it) does not lose the sync at once:
// the body's end, the last chunk ("\r\n0\r\n\r\n", as in the tail a
// call's last bytes give), is searched for in the bytes that follow
// (Stats.ChunkedSeeks, ChunkedEndsFound; the body's size is then that of
// the chunks seen). A hole anywhere else (a head, past the end of a body,
// between messages), or a call that starts a message before the chunked
// body's end was found, loses the direction's sync (Stats.SyncLost, by
// reason): it then waits for a chunk that starts a call with a plausible
// request line (the request direction) or "HTTP/1.x NNN" (the response
// direction) and never guesses across.
//
// # Pairing
//
// Requests queue per connection in order (Config.MaxPipelined; more are
// counted, not tracked, and their responses skipped); each final response
// answers the oldest unanswered request. Interim 1xx responses (but 101)
// are passed over. 101 Switching Protocols, and a 2xx to CONNECT, end the
// HTTP parsing of the connection: its call is emitted, later bytes are
// counted (Stats.BytesTunnelled) and ignored.
//
// A response is paired with a request only when its first byte was
// captured after the request's first byte (a server cannot answer before
// it reads), and a lost sync never pairs a response with a request it may
// not answer, as far as can be known:
//   - the request direction: the requests in the hole are unknown. The
//     request being received when the sync was lost stays queued when its
//     head was complete (FlagGap). The responses to the requests lost come
//     before the first byte of the next request seen when the client waits
//     for each response before its next request (keep-alive clients do):
//     they are skipped (Stats.ResponsesUnmatched). Pipelined requests lost
//     in a hole can still shift the pairing of the responses that follow:
//     their count is not known.
//   - the response direction: the oldest request queued, whose response
//     began in the hole or before, is emitted with FlagGap (with its status
//     when its response's head was seen, else none). One request queued
//     after it stays queued when no request was lost since, as its
//     response is then the next; several (pipelined), or requests lost or
//     not tracked among them, are all emitted with FlagGap and no status:
//     which of their responses the hole held is not known, and the
//     responses that follow and predate the next request seen are skipped.
//
// # Ends
//
// A close-delimited response ends at ConnClose; the requests still
// unanswered then are emitted with FlagConnClosed and no status (none is
// invented). Expire ends the connections idle for Config.IdleTimeout
// (FlagEvicted). A connection predating the capture (RoleUnknown) is
// picked up at the first call start of each direction; its request
// direction is the one whose calls start with request lines.
//
// # Memory
//
// Every byte the Tracker holds is accounted (MemoryUsed): connections,
// the partial lines of heads (at most Config.MaxHeaderBytes a head), the
// queued requests and their strings (each bounded by Config.MaxFieldBytes;
// cuts counted). Over Config.MemoryBudget the least recently active
// connections are evicted, those on probation first: a connection is on
// probation until its first complete request head (at most
// Config.MaxProbationConns of them), so a flood of junk connections never
// evicts one that carried requests. Then those that hold more than their
// fair share (the budget over MaxConns plus MaxProbationConns): the
// connections within it fit the budget together, so a few connections
// holding the most they may (MaxPipelined requests never answered, long
// fields), however active, evict one another, never one within its
// share.
package http1
