// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"net/netip"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Dir is the direction of a connection's bytes, seen from the observed
// process.
type Dir uint8

const (
	// Egress is the bytes the observed process wrote.
	Egress Dir = 0
	// Ingress is the bytes the observed process read.
	Ingress Dir = 1
)

// Role says how the observed socket was set up.
type Role uint8

const (
	// RoleUnknown: the connection predates the capture (offsets arbitrary).
	RoleUnknown Role = iota
	// RoleClient: the observed process called connect.
	RoleClient
	// RoleServer: the observed process accepted the connection.
	RoleServer
)

// ConnID is the kernel's identity of a socket: unique among live
// connections, possibly reused after ConnClose.
type ConnID uint64

// Endpoint is one end of a TCP connection.
type Endpoint struct {
	Addr netip.Addr
	Port uint16
}

// Proc is the thread that made a syscall.
type Proc struct {
	PID, TID uint32
	StartNs  uint64 // process start, boot-clock ns (task->group_leader->start_boottime)
}

// ConnOpen announces a connection.
type ConnOpen struct {
	Conn          ConnID
	TimeNs        uint64
	Proc          Proc
	Local, Remote Endpoint
	Role          Role
	// NetNS is the inode of the socket's network namespace (0: unknown, as
	// for TLS sessions). Equal addresses and ports in two namespaces (two
	// pods' loopback) are different connections: pairing keys include it.
	NetNS uint32
	// ISN is what the TCP socket under a TLS session says of the
	// connection's initial sequence numbers (Known when the capture found
	// that socket); zero for a socket's own connection, whose bytes carry
	// their sequence numbers (Chunk.Seq).
	ISN SockISN
	// HTTP1: the capture found the connection speaking HTTP/1.x (its
	// chunks go to the HTTP/1 tracker, not this package's).
	HTTP1 bool
	// TLS: a TLS session's plaintext (OpenSSL, Go crypto/tls), not a
	// socket's bytes.
	TLS bool
}

// SockISN is read from the TCP socket under a TLS session when the session
// is opened (bpf/h2/h2.h, struct h2_open): Snd is snd_una − bytes_acked, the
// local ISN (plus one on the end that accepted the connection: only the
// connecting end counts its SYN in bytes_acked), and Rcv is rcv_nxt −
// bytes_received, the peer's ISN plus one. Both ends of the connection
// derive the same pair (ClientServer), on any host, through NAT.
type SockISN struct {
	Snd, Rcv uint32
	Known    bool
}

// ClientServer returns the initial sequence numbers of the connection's
// client and server, seen from the end whose part in its calls is side.
// The end that sent a call's request HEADERS is taken for the end that
// connected (true of gRPC; an HTTP/2 client on an accepted socket would
// get another pair at each end: two traces).
func (k SockISN) ClientServer(side Side) (client, server uint32) {
	if side == SideClient {
		return k.Snd, k.Rcv - 1
	}
	return k.Rcv - 1, k.Snd - 1
}

// Chunk is captured bytes of one direction of a connection: bytes
// [Offset, Offset+len(Data)) of that direction's TCP byte stream. Offset 0 is
// the first byte of the connection in that direction when the Role is not
// RoleUnknown; for RoleUnknown offsets are arbitrary but consistent. Data is
// valid during the call only.
type Chunk struct {
	Conn   ConnID
	Dir    Dir
	Offset uint64
	Data   []byte
	TimeNs uint64
	Proc   Proc
	// Seq is the TCP sequence number of Data[0] when SeqKnown (a socket's
	// bytes; not a TLS session's plaintext). Both ends of a connection see
	// the same byte at the same number, and NAT leaves it alone: the ids of
	// a call's spans are made from it (spanmap).
	Seq      uint32
	SeqKnown bool
	// HTTP1: bytes of a connection the capture found speaking HTTP/1.x.
	// The capture copies, of each system call, the first bytes (from the
	// call's first byte: CallStart) and the last ones; what lies between
	// is a hole.
	HTTP1     bool
	CallStart bool
}

// ConnClose ends a connection.
type ConnClose struct {
	Conn   ConnID
	TimeNs uint64
	Total  [2]uint64 // bytes per Dir when known, 0 = unknown
}

// Lost reports capture records lost (a ring gap); which connection is unknown.
type Lost struct {
	Count uint64
}

// Side is the observed process's part in a call.
type Side uint8

const (
	// SideClient: the observed process sent the request HEADERS.
	SideClient Side = iota
	// SideServer: the observed process received the request HEADERS.
	SideServer
)

// Protocol says what kind of HTTP/2 request a call is.
type Protocol uint8

const (
	// ProtoUnknown: the request's content-type could not be decoded and the
	// response carried no grpc-status.
	ProtoUnknown Protocol = iota
	// ProtoGRPC: content-type application/grpc*, or a grpc-status came back.
	ProtoGRPC
	// ProtoHTTP: a plain HTTP/2 request (any other content-type).
	ProtoHTTP
	// ProtoHTTP1: an HTTP/1.x request (the HTTP/1 tracker's calls).
	ProtoHTTP1
)

// CallFlags qualify a call.
type CallFlags uint32

const (
	// FlagMethodUnknown: the request's :path could not be decoded (HPACK
	// state unknown, header block dropped); Path is empty.
	FlagMethodUnknown CallFlags = 1 << iota
	// FlagCancelled: the stream was reset with CANCEL.
	FlagCancelled
	// FlagReset: the stream was reset (RST_STREAM); ResetCode says how.
	FlagReset
	// FlagGoAway: the stream was refused by a GOAWAY (id above its
	// last-stream-id).
	FlagGoAway
	// FlagConnClosed: the connection closed with the stream open.
	FlagConnClosed
	// FlagEvicted: the stream or its connection was idle for too long
	// (Tracker.Expire) or its connection was evicted; End is the last
	// activity.
	FlagEvicted
	// FlagStreaming: more than one DATA frame went one way.
	FlagStreaming
	// FlagGap: bytes of the connection were lost while the stream was open;
	// frames of it may be missing (counts, status).
	FlagGap
	// FlagRequestEnded: the request's END_STREAM was seen.
	FlagRequestEnded
	// FlagResponseHeaders: response headers (:status) were seen.
	FlagResponseHeaders
	// FlagDeadline: the stream was cancelled by the client after its
	// grpc-timeout had passed; GRPCStatus is DEADLINE_EXCEEDED.
	FlagDeadline
)

// TraceParent is a W3C traceparent header of a request.
type TraceParent struct {
	Valid    bool
	TraceID  pcommon.TraceID
	ParentID pcommon.SpanID
	Flags    uint8
}

// Call is one HTTP request and its response, as one end saw it (HTTP/2:
// this package's Tracker; HTTP/1.x: package http1's).
type Call struct {
	Conn          ConnID
	Role          Role
	Local, Remote Endpoint
	// NetNS is the connection's network namespace (ConnOpen.NetNS; 0:
	// unknown): addresses and ports are only unique within it.
	NetNS uint32
	// PeerConn is the socket of the other end when it is on this host and
	// tracked (found by the reversed 4-tuple in the same network
	// namespace); PeerFound says whether it is.
	PeerConn  ConnID
	PeerFound bool
	// ClientConn is the ConnID of the client's socket: Conn on the client
	// side, PeerConn on the server side (valid when ClientConnKnown).
	ClientConn      ConnID
	ClientConnKnown bool
	Side            Side
	Proc            Proc // the thread that wrote (client) or read (server) the request HEADERS
	StreamID        uint32
	// ReqSeq and RespSeq are the TCP sequence numbers of the first byte of
	// the request's first HEADERS frame and of the response's, when known
	// (...SeqKnown): what both ends of the call see alike, across hosts and
	// NAT.
	ReqSeq, RespSeq           uint32
	ReqSeqKnown, RespSeqKnown bool
	// ISN: the TLS session's socket numbers (ConnOpen.ISN), when known.
	ISN SockISN
	// TLS: the call went over a TLS session (ConnOpen.TLS).
	TLS bool

	StartNs, EndNs uint64            // boot clock: first request HEADERS, response END_STREAM
	Start, End     pcommon.Timestamp // the same, by the Tracker's clock

	Method    string // :method
	Path      string // :path
	Authority string // :authority
	// MethodPlaceholder, when the :path did not decode (FlagMethodUnknown)
	// because it names an HPACK entry inserted before the capture (or the
	// direction's last loss of its table) started, names that entry:
	// "_UNKNOWN_<n>", n its number counted back from that start (1 the
	// newest). It stays the same while the peer keeps referencing the
	// entry, whatever it inserts since, so the calls of one method on one
	// connection share it; other connections' numbers are their own.
	MethodPlaceholder string
	Service           string // from Path "/Service/Method" (empty when Path is not of that form)
	RPC               string // the method part of Path
	ContentType       string
	// UserAgent is the request's User-Agent (HTTP/1; empty when none).
	UserAgent string
	// Version is the request's HTTP version, "1.0" or "1.1" (HTTP/1;
	// empty for HTTP/2 calls).
	Version     string
	Protocol    Protocol
	GRPCStatus  int // grpc-status; -1 when none
	GRPCMessage string
	HTTPStatus  int           // :status of the response headers; 0 when none
	Timeout     time.Duration // grpc-timeout; 0 when none
	TraceParent TraceParent
	ResetCode   uint32 // RST_STREAM error code when FlagReset

	Flags           CallFlags
	ReqHeaderBytes  uint32 // HPACK-encoded header block bytes of the request (headers and trailers)
	RespHeaderBytes uint32
	ReqDataFrames   uint32
	RespDataFrames  uint32
	ReqDataBytes    uint64 // DATA frame lengths (padding included)
	RespDataBytes   uint64
}

// Has says whether all of f are set.
func (c *Call) Has(f CallFlags) bool { return c.Flags&f == f }

// GapReason says why a direction lost its framing.
type GapReason uint8

const (
	// GapFrameHeader: a hole covered (part of) a frame header.
	GapFrameHeader GapReason = iota
	// GapHeaderBlock: a hole in a HEADERS/CONTINUATION/PUSH_PROMISE payload.
	GapHeaderBlock
	// GapControl: a hole in the needed part of a SETTINGS, RST_STREAM or
	// GOAWAY payload.
	GapControl
	// GapPreface: a hole in the client preface.
	GapPreface
	// GapBadFrame: a frame header that cannot be (bad type/flags/stream, a
	// CONTINUATION out of place): the framing was already lost.
	GapBadFrame
	// GapBadPreface: the first bytes of a client direction seen from its
	// start were not the preface, after frames had been seen elsewhere.
	GapBadPreface
	numGapReasons
	gapTentative = numGapReasons // internal: a resync proved wrong, not a gap
)

var gapNames = [numGapReasons]string{"frame_header", "header_block", "control", "preface", "bad_frame", "bad_preface"}

func (r GapReason) String() string {
	if r < numGapReasons {
		return gapNames[r]
	}
	return "unknown"
}

// Stats are the Tracker's counters since NewTracker.
type Stats struct {
	ConnsTracked         uint64 // connections tracked (opened or first seen)
	ConnsLive            uint64 // tracked now (a gauge)
	ConnsWithoutOpen     uint64 // first seen by a chunk (ConnOpen lost or predating)
	ConnsIgnoredNotHTTP2 uint64 // found not HTTP/2 and forgotten
	ConnsEvicted         uint64 // idle (Expire)
	ConnsEvictedLimit    uint64 // the least recently active, for a new one at MaxConns
	ConnsEvictedBudget   uint64 // the least recently active, over MemoryBudget
	// ConnsPromoted: connections off probation (their first header block
	// of a call); ProbationEvictedLimit and ProbationEvictedBudget:
	// connections on probation evicted for a new one at
	// MaxProbationConns, and over MemoryBudget (before any other).
	ConnsPromoted          uint64
	ProbationEvictedLimit  uint64
	ProbationEvictedBudget uint64
	// StreamMapsShrunk: stream maps made again, smaller, once they held
	// less than a quarter of their peak.
	StreamMapsShrunk       uint64
	StreamsEvictedBudget   uint64 // the least recently active of the active connection, over MemoryBudget
	StreamsEvicted         uint64 // idle streams ended by Expire (emitted with FlagEvicted)
	StreamsOverLimit       uint64 // request HEADERS not tracked: MaxStreamsPerConn reached
	StreamsUnmatched       uint64 // response frames of a stream whose request was not seen
	Gaps                   [numGapReasons]uint64
	Resyncs                uint64 // framing found again after a gap or at a predating connection
	ResyncsRejected        uint64 // resynchronisations found wrong by the frames that followed
	TentativeFramesApplied uint64 // frames parsed while a resync was tentative whose effects were applied at its confirmation
	ChunksUnsynced         uint64 // chunks skipped while searching for a frame boundary
	ChunksStale            uint64 // chunks wholly before the stream position (re-sent, late)
	ChunksIgnored          uint64 // chunks of ignored connections or of no direction
	ChunksNotHTTP2         uint64 // of them, chunks of connections found not HTTP/2
	MemoryUsed             uint64 // accounted memory now (a gauge; Tracker.MemoryUsed)
	BytesReassembled       uint64 // captured bytes consumed in order
	BytesHoles             uint64 // bytes skipped in allowed holes (uncopied payloads)
	FramesParsed           uint64
	HeaderBlocks           uint64
	HeaderBlocksTooLarge   uint64
	HeaderBlocksUnverified uint64 // blocks right after a resynchronisation: their effect held until it is confirmed
	HPACKErrors            uint64 // header blocks not fully decodable (unknown dynamic entries, bad encoding)
	HPACKTableCapped       uint64 // size updates above MaxHeaderTableSize (the table kept is capped)
	// HeaderBlocksTooManyFields: blocks of more than MaxFieldsPerBlock
	// fields (the rest not decoded, the table then unknown).
	HeaderBlocksTooManyFields uint64
	MethodsUnknown            uint64 // calls whose :path could not be decoded
	MethodPlaceholders        uint64 // of them, calls given a MethodPlaceholder
	CallsEmitted              uint64
	CallsConnClosed           uint64
	CallsReset                uint64
	CallsGoAway               uint64
	GoAways                   uint64 // GOAWAY frames
	Resets                    uint64 // RST_STREAM frames
	Lost                      uint64 // records reported lost
}

// GapsTotal sums Gaps.
func (s Stats) GapsTotal() uint64 {
	var n uint64
	for _, g := range s.Gaps {
		n += g
	}
	return n
}
