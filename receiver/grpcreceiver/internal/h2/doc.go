// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package h2 turns the captured bytes of TCP connections into HTTP/2 calls
// (gRPC or plain): reassembly of each direction's byte stream, HTTP/2 frame
// parsing, HPACK decoding and request/response pairing by stream. It is the
// pure-Go core of the grpc receiver: it needs no kernel and no root. The
// receiver's decoder of BPF records calls a Tracker (ConnOpen, Chunk,
// ConnClose, Lost, Expire) from one goroutine; spanmap turns the Calls into
// spans. Only receiver/grpcreceiver and its internal packages may use it.
//
// # What the capture must hold
//
// The BPF program copies of each syscall's bytes only what HTTP/2 needs:
// the client preface, every 9-byte frame header, and the payloads of
// HEADERS, CONTINUATION, PUSH_PROMISE and SETTINGS (whole), RST_STREAM
// (4 bytes) and GOAWAY (its first 8 bytes; the debug data may be cut). The
// byte stream a direction reassembles therefore has holes. A hole is
// harmless when it lies wholly inside a payload the parser does not need
// (DATA, PING, WINDOW_UPDATE, PRIORITY, unknown types, GOAWAY debug data).
// A hole anywhere else (a frame header, a header-block payload, the needed
// part of a control frame, the preface) is a gap, counted by reason
// (Stats.Gaps): the direction stops parsing until a later chunk begins a
// plausible chain of frame headers (PlausibleStart) and never guesses
// across. A header-block payload cut short by the kernel's size cap is
// such a gap, unless the block is larger than Config.MaxHeaderBlock anyway
// (then it is counted as too large and skipped, not a gap).
//
// Chunks of a direction are expected in offset order. Re-sent bytes
// (overlap) are ignored. A chunk that arrives after a later one is not
// reordered: the later one made a gap, and the late one is stale
// (Stats.ChunksStale). Lost records need no special handling: a lost chunk
// is a hole that no uncopied payload explains.
//
// # HPACK
//
// Each direction has one hpack.Decoder, fed every header block in wire
// order (also of streams that are dropped). SETTINGS_HEADER_TABLE_SIZE sent
// one way bounds the table of the blocks that travel the other way. When
// the table is not known (a connection that predates capture, after a gap,
// after a block too large or an HPACK error) the direction decodes with an
// empty table: every field it can resolve is right (entries inserted since
// are the newest ones of the real table, at the same indexes) and a
// reference to an older entry fails. The fields before the failure are kept;
// a request whose :path did not decode is a call with FlagMethodUnknown
// (spanmap names it _OTHER), never a guessed method.
//
// # Calls
//
// A call starts at the first request HEADERS (the direction carrying
// :method, or known from the role/preface) and ends at the response's
// END_STREAM (trailers, Trailers-Only, or DATA for plain HTTP), at a
// RST_STREAM from either end, at a GOAWAY whose last-stream-id is below it,
// when its connection closes (FlagConnClosed, status UNAVAILABLE), or when
// Expire finds it idle (FlagEvicted, emitted at its last activity). The
// Call handed to the emit function is valid during that call only.
//
// Memory is bounded: Config.MaxConns connections, MaxStreamsPerConn open
// streams each, MaxHeaderBlock bytes of header block per direction being
// assembled, and one HPACK table (at most MaxHeaderTableSize) per
// direction. A DATA frame header costs a map lookup and no allocation.
package h2
