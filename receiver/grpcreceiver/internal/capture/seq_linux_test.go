// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// checkSeq checks the TCP sequence numbers (H2_F_SEQ) of a connection's two
// sockets, both captured from their start (TestCaptureGRPCGo: grpc-go on
// loopback, every hook the kernel has): each end numbers its bytes from its
// own socket (write_seq egress, copied_seq ingress), and the same byte must
// get the same number on both. Every socket chunk has its number, its
// offset plus one constant per direction (the direction's initial sequence
// number plus one), the same on both ends; and the first byte of each
// stream's request HEADERS has the same number in the client's egress and
// the server's ingress, of its response HEADERS in the server's egress and
// the client's ingress. req and resp: checkSession's walks, the client's
// then the server's.
func checkSeq(t *testing.T, rec *recorder, cl, sv h2.ConnOpen, req, resp [2]frameStats, calls, lostCalls int) {
	t.Helper()
	base := func(o h2.ConnOpen, dir h2.Dir) uint32 { return seqBase(t, rec.chunks[o.Conn][dir], o, dir) }
	assert.Equal(t, base(cl, h2.Egress), base(sv, h2.Ingress), "request direction: the ends' sequence numbers of offset 0")
	assert.Equal(t, base(sv, h2.Egress), base(cl, h2.Ingress), "response direction")

	seqAt := func(o h2.ConnOpen, dir h2.Dir, off uint64) uint32 {
		for _, x := range rec.chunks[o.Conn][dir] {
			if off >= x.Offset && off < x.Offset+uint64(len(x.Data)) {
				return x.Seq + uint32(off-x.Offset)
			}
		}
		t.Fatalf("%v dir %d: offset %d not captured", o.Role, dir, off)
		return 0
	}
	for _, side := range []struct {
		name     string
		from, to frameStats  // the writer's walk, the reader's
		wr, rd   h2.ConnOpen // their sockets
	}{
		{"request", req[0], req[1], cl, sv},
		{"response", resp[1], resp[0], sv, cl},
	} {
		n := 0
		for sid, off := range side.from.firstHeaders {
			rdOff, ok := side.to.firstHeaders[sid]
			if !ok {
				continue // a lost call's (counted)
			}
			n++
			require.Equal(t, seqAt(side.wr, h2.Egress, off), seqAt(side.rd, h2.Ingress, rdOff),
				"%s HEADERS of stream %d: at offset %d written, %d read", side.name, sid, off, rdOff)
		}
		t.Logf("%s: %d streams' HEADERS at the same sequence number on both ends", side.name, n)
		if lostCalls == 0 {
			assert.Equal(t, calls, n, side.name)
		} else {
			assert.Positive(t, n, side.name)
		}
	}
}

// seqBase checks that every chunk of a socket's direction has its TCP
// sequence number, its offset plus one constant, and returns the constant.
func seqBase(t *testing.T, ch []h2.Chunk, o h2.ConnOpen, dir h2.Dir) uint32 {
	t.Helper()
	require.NotEmpty(t, ch, "conn %d dir %d", o.Conn, dir)
	b := ch[0].Seq - uint32(ch[0].Offset)
	for _, x := range ch {
		require.True(t, x.SeqKnown, "conn %d dir %d: chunk at offset %d without its TCP sequence number", o.Conn, dir, x.Offset)
		require.Equal(t, b, x.Seq-uint32(x.Offset), "conn %d dir %d: chunk at offset %d (seq %d)", o.Conn, dir, x.Offset, x.Seq)
	}
	return b
}

// sameBytesAtSeq checks that the bytes one socket wrote (its egress chunks)
// and its peer read (ingress) are the same wherever both captured the same
// sequence number, and returns how many bytes both captured.
func sameBytesAtSeq(t *testing.T, wr, rd []h2.Chunk) int {
	t.Helper()
	read := map[uint32]byte{}
	for _, x := range rd {
		for i, b := range x.Data {
			read[x.Seq+uint32(i)] = b
		}
	}
	n := 0
	for _, x := range wr {
		for i, b := range x.Data {
			if r, ok := read[x.Seq+uint32(i)]; ok {
				require.Equal(t, b, r, "the byte at sequence number %d", x.Seq+uint32(i))
				n++
			}
		}
	}
	return n
}
