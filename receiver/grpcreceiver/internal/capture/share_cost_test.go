// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"encoding/binary"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// rstFrames is n RST_STREAM frames (13 bytes each) of streams never opened,
// from stream id sid on.
func rstFrames(n int, sid uint32) []byte {
	b := make([]byte, 0, 13*n)
	for i := range n {
		b = append(b, 0, 0, 4, 3, 0)
		b = binary.BigEndian.AppendUint32(b, sid+2*uint32(i))
		b = append(b, 0, 0, 0, 8) // CANCEL
	}
	return b
}

// headersFrame is a request HEADERS frame (END_STREAM|END_HEADERS) on
// stream sid, its block about n bytes of literal fields (new names, not
// indexed: no table work) of 100-byte values, then the stream's RST_STREAM.
func headersFrame(n int, sid uint32) []byte {
	var blk []byte
	for i := 0; len(blk)+112 <= n; i++ {
		blk = append(blk, 0x00, 8)
		blk = append(blk, []byte{'x', '-', 'h', 'd', 'r', byte('a' + i%26), byte('a' + i/26%26), 'z'}...)
		blk = append(blk, 100)
		for range 100 {
			blk = append(blk, 'v')
		}
	}
	b := []byte{byte(len(blk) >> 16), byte(len(blk) >> 8), byte(len(blk)), 1, 0x5}
	b = binary.BigEndian.AppendUint32(b, sid)
	return append(append(b, blk...), rstFrames(1, sid)...)
}

// BenchmarkShareCost is what the tracker (decoder and h2.Tracker, the
// collector's work per record past the ring) pays for the bytes the kernel
// copies: per frame of a stream of RST_STREAM frames of streams never
// opened, and per byte of 4 KiB request header blocks. Their ratio, less
// the 13 bytes of an RST_STREAM frame, is the per-frame cost that makes
// both cost the tracker about the same per token (Options.FrameCost):
//
//	go test -run '^$' -bench ShareCost ./receiver/grpcreceiver/internal/capture/
func BenchmarkShareCost(b *testing.B) {
	const recLen = 3900 // about what one kernel record holds of one call's frames
	run := func(b *testing.B, next func(off uint64, i int) []byte) {
		tr := h2.NewTracker(h2.Config{}, func(*h2.Call) {}, nil)
		d := NewDecoder(tr)
		tr.ConnOpen(&h2.ConnOpen{Conn: 7, TimeNs: 1000, Role: h2.RoleClient})
		pre := append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)
		if err := d.Record(dataRecord(0, h2.Chunk{Offset: 0, Data: pre})); err != nil {
			b.Fatal(err)
		}
		off := uint64(len(pre))
		var n int64
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			data := next(off, i)
			if err := d.Record(dataRecord(0, h2.Chunk{Offset: off, Data: data})); err != nil {
				b.Fatal(err)
			}
			off += uint64(len(data))
			n += int64(len(data))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/byte")
	}
	b.Run("rst_stream", func(b *testing.B) {
		run(b, func(_ uint64, i int) []byte { return rstFrames(recLen/13, uint32(1+2*(recLen/13)*(i%1000))) })
		b.ReportMetric(0, "ns/op")
	})
	b.Run("rst_stream_per_call", func(b *testing.B) {
		run(b, func(_ uint64, i int) []byte { return rstFrames(1, uint32(1+2*(i%(1<<29)))) })
	})
	b.Run("headers", func(b *testing.B) {
		run(b, func(_ uint64, i int) []byte { return headersFrame(recLen, uint32(1+2*(i%(1<<29)))) })
	})
}
