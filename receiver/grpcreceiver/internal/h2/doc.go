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
// A resynchronisation is tentative until confirmFrames frame headers have
// passed (the first included), and a header that fails the resync test or a
// chunk landing strictly inside a payload the kernel does not copy proves
// the resync wrong (ResyncsRejected). So a chunk that begins inside a frame
// and happens to parse as a frame header cannot swallow the frames after it.
// Until the confirmation, frames have no effect on streams or SETTINGS:
// the effects of DATA and RST_STREAM headers and of HEADERS blocks
// (HeaderBlocksUnverified: decoded into the HPACK table, which a rejection
// forgets with the framing) are held, at most confirmFrames of them, and
// applied in wire order when the last confirming frame (or its header
// block) ends (TentativeFramesApplied). So the calls whose request HEADERS
// came first after the capture started, or after a gap, are not lost.
//
// The two directions of a socket are not ordered with each other: a
// write's record may come after the record of the read of its answer. A
// response to a stream id above every request seen waits for its request
// (an orphan; dropped as StreamsUnmatched when a later request comes first
// or at close), and a call whose response ended before its request did
// waits for the request's END_STREAM, a reset, or a chunk of the request
// direction stamped after the response's end. The kernel side should stamp
// a write with the time it started and a read with the time it ended. A
// chunk of a connection after its ConnClose starts a new RoleUnknown one.
//
// # Sequence numbers
//
// A chunk may carry the TCP sequence number of its first byte
// (Chunk.SeqKnown: socket bytes, never TLS plaintext). Each direction keeps
// the (sequence number, offset) pair of its latest such chunk; offsets and
// sequence numbers differ by a constant modulo 2^32, so the number of any
// offset follows, across chunks without one and across the 32-bit wrap.
// A call gets the number of the first byte of its request's first HEADERS
// frame header (Call.ReqSeq) and of its response's (Call.RespSeq: the
// block with :status, or else the first response HEADERS seen; an adopted
// orphan keeps it). Both ends of a connection see the same numbers, NAT
// leaves them alone, and a connection that predates the capture has them
// too: they are what spanmap makes a call's ids of.
//
// # HPACK
//
// Each direction has one HPACK state, fed every header block in wire order
// (also of streams that are dropped). SETTINGS_HEADER_TABLE_SIZE sent one
// way bounds the table of the blocks that travel the other way. One decoder
// of our own (hpackDecoder) decodes in both modes. While the table is known
// from the connection's start it accepts size updates up to the peer's
// SETTINGS only. When it is not (a connection that predates capture, after
// a gap, a block too large, an HPACK error) the direction decodes from an
// empty table: every field it can resolve is right (entries inserted since
// are the newest ones of the real table, at the same indexes), a reference
// to an older entry is skipped, and a literal inserted under an unknown
// name keeps the indexes aligned. As the peer's table turns over, fields
// decode again (grpc-go re-inserts :path once its entry is evicted). A
// request whose :path did not decode is a call with FlagMethodUnknown
// (spanmap names it _OTHER), never a guessed method. When it names an entry
// inserted before the decoder started (the capture, or the direction's last
// loss of its table), the call gets a placeholder for that entry
// (Call.MethodPlaceholder, "_UNKNOWN_<n>"): n counts back from the start
// (the decoder counts its insertions, so dynamic index i names entry
// i-insertions+1), a number that stays the same while the peer keeps
// referencing the entry, whatever it inserts since: the calls of one method
// on one connection share it. Which unresolved field is the :path is
// taken from the order clients write: the first one after :method (grpc-go
// and Go's net/http2 write :path after :method with only static fields
// between), else the first. A method first written after the start is a
// literal and decodes.
//
// The same semantics make the table's cap safe: whatever size the peer
// announces (up to 4 GiB) and uses, the table kept is at most
// Config.MaxHeaderTableSize (Stats.HPACKTableCapped): it holds the peer's
// newest entries, and a reference past it is an unknown field. A block of
// more than MaxFieldsPerBlock fields is decoded no further and leaves the
// table unknown. We do not use x/net's hpack.Decoder: its table is a slice
// whose eviction copies every remaining entry (evictOldest does
// copy(t.ents, t.ents[n:])), so once a large table is full each tiny
// insertion costs O(table) (350 ms per 16 KiB block of insertions at a
// 1 MiB table), and it cannot be capped below what the peer uses. Ours is
// a ring of entries: insertion and eviction are O(1). Entries' strings are
// copies, never slices of the block buffer. Only x/net's Huffman decoder
// and the static table's contents are reused.
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
// Memory is bounded by one budget, Config.MemoryBudget: the Tracker keeps
// an exact account (MemoryUsed) of what it holds: a fixed cost per
// connection and per stream, the strings of each stream's Call, each HPACK
// table (its ring of entries and their strings) and each header-block and
// control buffer (capacity), updated at every allocation and release. At
// the end of every call that may grow it, the least recently active
// connections (an LRU list touched by every chunk) are evicted, their open
// calls emitted with FlagEvicted, until the account fits
// (ConnsEvictedBudget); the active connection's own streams go next, least
// recently active first (StreamsEvictedBudget). Within a call the account
// may pass the budget by what one chunk adds (at most MaxHeaderBlock and
// the tables' growth). The other bounds: MaxConns connections (a new one
// evicts the least recently active, ConnsEvictedLimit, so idle connections
// cannot blind the Tracker), MaxStreamsPerConn open streams each (one more
// is refused: StreamsOverLimit), MaxHeaderBlock bytes of header block per
// direction being assembled, one HPACK table of at most MaxHeaderTableSize
// per direction whatever the peer announces, and MaxFieldsPerBlock fields
// decoded per block. A connection found not HTTP/2 is forgotten at once:
// only its id stays, in a set of a few thousand, so that its later chunks
// cost a lookup (ChunksNotHTTP2). A DATA frame header costs a map lookup
// and no allocation.
package h2
