// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testcapture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func frame(typ uint8, sid uint32, payload string) []byte {
	b := h2.AppendFrameHeader(nil, h2.FrameHeader{Length: uint32(len(payload)), Type: typ, StreamID: sid})
	return append(b, payload...)
}

func TestStrip(t *testing.T) {
	var stream []byte
	stream = append(stream, h2.Preface...)
	stream = append(stream, frame(h2.FrameSettings, 0, "\x00\x01\x00\x00\x10\x00")...)
	stream = append(stream, frame(h2.FrameData, 1, "hello")...)
	stream = append(stream, frame(h2.FrameHeaders, 1, "abc")...)
	stream = append(stream, frame(h2.FramePing, 0, "12345678")...)
	stream = append(stream, frame(h2.FrameGoAway, 0, "\x00\x00\x00\x01\x00\x00\x00\x00debug")...)
	// two syscalls, the second starting inside the DATA header
	cut := len(h2.Preface) + 15 + 4
	events := []Event{
		{Open: &h2.ConnOpen{Conn: 1, Role: h2.RoleClient}},
		{Chunk: &h2.Chunk{Conn: 1, Dir: h2.Egress, Offset: 0, Data: stream[:cut]}},
		{Chunk: &h2.Chunk{Conn: 1, Dir: h2.Egress, Offset: uint64(cut), Data: stream[cut:]}},
		{Close: &h2.ConnClose{Conn: 1}},
	}
	out := Strip(events, 7)
	var got [][2]uint64
	for _, e := range out {
		if e.Chunk != nil {
			got = append(got, [2]uint64{e.Chunk.Offset, uint64(len(e.Chunk.Data))})
			assert.Equal(t, stream[e.Chunk.Offset:e.Chunk.Offset+uint64(len(e.Chunk.Data))], e.Chunk.Data)
		}
	}
	p := uint64(len(h2.Preface))
	assert.Equal(t, [][2]uint64{
		{0, p + 15 + 4},          // preface, SETTINGS, the DATA header's first bytes
		{p + 19, 5},              // the rest of the DATA header (its payload is not copied)
		{p + 29, 12 + 9},         // HEADERS and its payload, the PING header
		{p + 29 + 21 + 8, 9 + 7}, // GOAWAY, its payload cut at 7
	}, got)
	require.NotNil(t, out[0].Open)
	require.NotNil(t, out[len(out)-1].Close)
}
