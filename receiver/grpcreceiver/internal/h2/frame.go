// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import "encoding/binary"

// Frame types (RFC 9113 section 6).
const (
	FrameData         uint8 = 0x0
	FrameHeaders      uint8 = 0x1
	FramePriority     uint8 = 0x2
	FrameRSTStream    uint8 = 0x3
	FrameSettings     uint8 = 0x4
	FramePushPromise  uint8 = 0x5
	FramePing         uint8 = 0x6
	FrameGoAway       uint8 = 0x7
	FrameWindowUpdate uint8 = 0x8
	FrameContinuation uint8 = 0x9
)

// Frame flags.
const (
	FlagEndStream  uint8 = 0x1 // DATA, HEADERS
	FlagAck        uint8 = 0x1 // SETTINGS, PING
	FlagEndHeaders uint8 = 0x4 // HEADERS, PUSH_PROMISE, CONTINUATION
	FlagPadded     uint8 = 0x8 // DATA, HEADERS, PUSH_PROMISE
	FlagPriority   uint8 = 0x20
)

// Preface is the client connection preface.
const Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// FrameHeaderLen is the size of a frame header.
const FrameHeaderLen = 9

// Settings identifiers used here.
const settingHeaderTableSize = 0x1

// FrameHeader is a parsed 9-byte frame header.
type FrameHeader struct {
	Length   uint32 // 24 bits
	Type     uint8
	Flags    uint8
	StreamID uint32 // 31 bits
	R        bool   // the reserved bit
}

// ParseFrameHeader parses b[:9]; b must hold at least 9 bytes.
func ParseFrameHeader(b []byte) FrameHeader {
	_ = b[8]
	sid := binary.BigEndian.Uint32(b[5:9])
	return FrameHeader{
		Length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		Type:     b[3],
		Flags:    b[4],
		StreamID: sid & 0x7fffffff,
		R:        sid&0x80000000 != 0,
	}
}

// AppendFrameHeader appends the wire form of h.
func AppendFrameHeader(b []byte, h FrameHeader) []byte {
	sid := h.StreamID & 0x7fffffff
	if h.R {
		sid |= 0x80000000
	}
	return append(b, byte(h.Length>>16), byte(h.Length>>8), byte(h.Length), h.Type, h.Flags,
		byte(sid>>24), byte(sid>>16), byte(sid>>8), byte(sid))
}

// definedFlags are the flags each known frame type defines.
var definedFlags = [...]uint8{
	FrameData:         FlagEndStream | FlagPadded,
	FrameHeaders:      FlagEndStream | FlagEndHeaders | FlagPadded | FlagPriority,
	FramePriority:     0,
	FrameRSTStream:    0,
	FrameSettings:     FlagAck,
	FramePushPromise:  FlagEndHeaders | FlagPadded,
	FramePing:         FlagAck,
	FrameGoAway:       0,
	FrameWindowUpdate: 0,
	FrameContinuation: FlagEndHeaders,
}

// Valid says whether h can be a frame of a well-behaved peer: a known type
// (or an unknown one when allowUnknown), only defined flags, the R bit
// clear, the stream id present exactly where the type needs one, and the
// fixed lengths of the fixed-size frames. It is the test a frame header must
// pass both in order (a failure means the framing was lost) and when
// searching for a frame boundary (with allowUnknown false).
func (h FrameHeader) Valid(maxLen uint32, allowUnknown bool) bool {
	if h.R || h.Length > maxLen {
		return false
	}
	if int(h.Type) >= len(definedFlags) {
		return allowUnknown
	}
	if h.Flags&^definedFlags[h.Type] != 0 {
		return false
	}
	switch h.Type {
	case FrameData, FrameHeaders, FrameContinuation, FramePushPromise:
		return h.StreamID != 0
	case FramePriority:
		return h.StreamID != 0 && h.Length == 5
	case FrameRSTStream:
		return h.StreamID != 0 && h.Length == 4
	case FrameSettings:
		return h.StreamID == 0 && h.Length%6 == 0 && (h.Flags&FlagAck == 0 || h.Length == 0)
	case FramePing:
		return h.StreamID == 0 && h.Length == 8
	case FrameGoAway:
		return h.StreamID == 0 && h.Length >= 8
	case FrameWindowUpdate:
		return h.Length == 4
	}
	return true
}

// needed is how many payload bytes, from the start, the parser must see of
// a frame of this header: 0 for DATA, PING, WINDOW_UPDATE, PRIORITY and
// unknown types (a hole there is harmless), the error code of RST_STREAM,
// last-stream-id and error code of GOAWAY (not its debug data), all of
// SETTINGS and of the header-block frames.
func needed(h FrameHeader) uint32 {
	switch h.Type {
	case FrameHeaders, FrameContinuation, FramePushPromise, FrameSettings:
		return h.Length
	case FrameRSTStream:
		return 4
	case FrameGoAway:
		return 8
	}
	return 0
}

// PlausibleStart says whether b, captured bytes that begin a chunk, begins a
// chain of frame headers: the first header is valid, is not a CONTINUATION
// (its HEADERS would be missing), and every further header that lies wholly
// inside b (at the end of the previous frame's payload) is valid too. It is
// the resynchronisation test: a chunk of a direction whose framing is lost
// is taken as a frame boundary only when it passes.
func PlausibleStart(b []byte, maxLen uint32) bool {
	if len(b) < FrameHeaderLen {
		return false
	}
	first := true
	for len(b) >= FrameHeaderLen {
		h := ParseFrameHeader(b)
		if !h.Valid(maxLen, false) || (first && h.Type == FrameContinuation) {
			return false
		}
		first = false
		n := FrameHeaderLen + uint64(h.Length)
		if uint64(len(b)) < n {
			break
		}
		b = b[n:]
	}
	return true
}
