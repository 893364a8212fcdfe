// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFrameHeaderRoundTrip(t *testing.T) {
	for _, h := range []FrameHeader{
		{Length: 0, Type: FrameSettings},
		{Length: 1<<24 - 1, Type: FrameData, Flags: FlagEndStream | FlagPadded, StreamID: 1<<31 - 1},
		{Length: 5, Type: FramePriority, StreamID: 3, R: true},
		{Length: 70000, Type: 0xfa, Flags: 0xff, StreamID: 0x01020304},
	} {
		b := AppendFrameHeader(nil, h)
		assert.Len(t, b, FrameHeaderLen)
		assert.Equal(t, h, ParseFrameHeader(b))
	}
	assert.Equal(t, FrameHeader{Length: 0x010203, Type: 1, Flags: 4, StreamID: 5, R: true},
		ParseFrameHeader([]byte{1, 2, 3, 1, 4, 0x80, 0, 0, 5}))
}

func TestFrameHeaderValid(t *testing.T) {
	const max = 1 << 14
	for _, tc := range []struct {
		name    string
		h       FrameHeader
		unknown bool
		want    bool
	}{
		{"data", FrameHeader{Type: FrameData, Flags: FlagEndStream | FlagPadded, StreamID: 1, Length: 100}, false, true},
		{"data stream 0", FrameHeader{Type: FrameData, Length: 1}, false, false},
		{"data bad flag", FrameHeader{Type: FrameData, Flags: FlagEndHeaders, StreamID: 1}, false, false},
		{"too long", FrameHeader{Type: FrameData, StreamID: 1, Length: max + 1}, false, false},
		{"R bit", FrameHeader{Type: FrameData, StreamID: 1, R: true}, false, false},
		{"headers all flags", FrameHeader{Type: FrameHeaders, Flags: 0x2d, StreamID: 3, Length: 10}, false, true},
		{"headers stream 0", FrameHeader{Type: FrameHeaders, Flags: 4, Length: 10}, false, false},
		{"priority", FrameHeader{Type: FramePriority, StreamID: 3, Length: 5}, false, true},
		{"priority len", FrameHeader{Type: FramePriority, StreamID: 3, Length: 4}, false, false},
		{"rst", FrameHeader{Type: FrameRSTStream, StreamID: 3, Length: 4}, false, true},
		{"rst stream 0", FrameHeader{Type: FrameRSTStream, Length: 4}, false, false},
		{"settings", FrameHeader{Type: FrameSettings, Length: 18}, false, true},
		{"settings len", FrameHeader{Type: FrameSettings, Length: 7}, false, false},
		{"settings stream", FrameHeader{Type: FrameSettings, StreamID: 1}, false, false},
		{"settings ack", FrameHeader{Type: FrameSettings, Flags: FlagAck}, false, true},
		{"settings ack payload", FrameHeader{Type: FrameSettings, Flags: FlagAck, Length: 6}, false, false},
		{"push promise", FrameHeader{Type: FramePushPromise, Flags: FlagEndHeaders, StreamID: 1, Length: 8}, false, true},
		{"ping", FrameHeader{Type: FramePing, Flags: FlagAck, Length: 8}, false, true},
		{"ping len", FrameHeader{Type: FramePing, Length: 9}, false, false},
		{"goaway", FrameHeader{Type: FrameGoAway, Length: 8}, false, true},
		{"goaway short", FrameHeader{Type: FrameGoAway, Length: 7}, false, false},
		{"window update", FrameHeader{Type: FrameWindowUpdate, StreamID: 9, Length: 4}, false, true},
		{"continuation", FrameHeader{Type: FrameContinuation, Flags: FlagEndHeaders, StreamID: 9, Length: 4}, false, true},
		{"continuation padded", FrameHeader{Type: FrameContinuation, Flags: FlagPadded, StreamID: 9}, false, false},
		{"unknown type", FrameHeader{Type: 0x20, Flags: 0xff, StreamID: 9, Length: 4}, false, false},
		{"unknown type allowed", FrameHeader{Type: 0x20, Flags: 0xff, StreamID: 9, Length: 4}, true, true},
	} {
		assert.Equal(t, tc.want, tc.h.Valid(max, tc.unknown), tc.name)
	}
}

func TestPlausibleStart(t *testing.T) {
	w := newWire(false)
	w.settings(4, 65535).headers(1, false, 0, req("/a.B/C")...).data(1, 5, true)
	chain := w.take()
	assert.True(t, PlausibleStart(chain, 1<<20))
	assert.True(t, PlausibleStart(chain[:9], 1<<20), "a lone header")
	assert.True(t, PlausibleStart(chain[:20], 1<<20), "cut inside a payload")
	assert.False(t, PlausibleStart(chain[:8], 1<<20), "too short")
	assert.False(t, PlausibleStart(chain[1:], 1<<20), "not at a boundary")
	assert.False(t, PlausibleStart([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 1<<20))
	cont := AppendFrameHeader(nil, FrameHeader{Type: FrameContinuation, Flags: FlagEndHeaders, StreamID: 1})
	assert.False(t, PlausibleStart(cont, 1<<20), "a CONTINUATION cannot start")
	// a valid first header followed by a bad one within the chunk
	bad := append(AppendFrameHeader(nil, FrameHeader{Type: FramePing, Length: 8}), make([]byte, 8)...)
	bad = append(bad, 0, 0, 0, 0x33, 0, 0, 0, 0, 0)
	assert.False(t, PlausibleStart(bad, 1<<20))
	assert.True(t, PlausibleStart(bad[:17], 1<<20))
}

func TestHelpers(t *testing.T) {
	s, m, ok := SplitPath("/grpc.health.v1.Health/Check")
	assert.True(t, ok)
	assert.Equal(t, "grpc.health.v1.Health", s)
	assert.Equal(t, "Check", m)
	for _, p := range []string{"", "/", "//x", "/a/", "/a/b/c", "a/b", "/ab"} {
		_, _, ok := SplitPath(p)
		assert.False(t, ok, p)
	}
	d, ok := ParseGRPCTimeout("100m")
	assert.True(t, ok)
	assert.Equal(t, int64(100e6), d.Nanoseconds())
	d, ok = ParseGRPCTimeout("2H")
	assert.True(t, ok)
	assert.Equal(t, int64(7200e9), d.Nanoseconds())
	for _, s := range []string{"", "5", "123456789S", "1x", "+1S", "-1S"} {
		_, ok := ParseGRPCTimeout(s)
		assert.False(t, ok, s)
	}
	tp := ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	assert.True(t, tp.Valid)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", tp.TraceID.String())
	assert.Equal(t, "00f067aa0ba902b7", tp.ParentID.String())
	assert.Equal(t, uint8(1), tp.Flags)
	assert.True(t, ParseTraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").Valid)
	for _, s := range []string{
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
	} {
		assert.False(t, ParseTraceParent(s).Valid, s)
	}
	assert.Equal(t, "bad request: ß!", DecodeGRPCMessage("bad request: %C3%9F%21"))
	assert.Equal(t, "50% %zz", DecodeGRPCMessage("50% %zz"))
	assert.Equal(t, 14, resetStatus(errRefusedStream))
	assert.Equal(t, 1, resetStatus(errCancel))
	assert.Equal(t, 13, resetStatus(0))
	assert.True(t, isGRPCContentType("application/grpc"))
	assert.True(t, isGRPCContentType("application/grpc+proto"))
	assert.False(t, isGRPCContentType("application/grpcx"))
	assert.False(t, isGRPCContentType("application/json"))
	assert.Equal(t, "header_block", GapHeaderBlock.String())
	assert.Equal(t, "unknown", GapReason(99).String())
}
