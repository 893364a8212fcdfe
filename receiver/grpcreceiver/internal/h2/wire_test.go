// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2/hpack"
)

// wire builds one direction of an HTTP/2 connection.
type wire struct {
	b   []byte
	enc *hpack.Encoder
	hb  bytes.Buffer
}

func newWire(preface bool) *wire {
	w := &wire{}
	w.enc = hpack.NewEncoder(&w.hb)
	if preface {
		w.b = append(w.b, Preface...)
	}
	return w
}

func (w *wire) frame(typ, flags uint8, sid uint32, payload []byte) *wire {
	w.b = AppendFrameHeader(w.b, FrameHeader{Length: uint32(len(payload)), Type: typ, Flags: flags, StreamID: sid})
	w.b = append(w.b, payload...)
	return w
}

// block HPACK-encodes name/value pairs.
func (w *wire) block(kv ...string) []byte {
	w.hb.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = w.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), w.hb.Bytes()...)
}

// headers writes a header block as HEADERS and CONTINUATION frames of at
// most maxFrame payload bytes (0: one frame).
func (w *wire) headers(sid uint32, endStream bool, maxFrame int, kv ...string) *wire {
	return w.headerBlock(sid, endStream, maxFrame, w.block(kv...))
}

func (w *wire) headerBlock(sid uint32, endStream bool, maxFrame int, blk []byte) *wire {
	if maxFrame <= 0 {
		maxFrame = len(blk) + 1
	}
	var fl uint8
	if endStream {
		fl = FlagEndStream
	}
	typ := FrameHeaders
	for first := true; first || len(blk) > 0; first = false {
		n := min(maxFrame, len(blk))
		f := fl
		if n == len(blk) {
			f |= FlagEndHeaders
		}
		w.frame(typ, f, sid, blk[:n])
		blk = blk[n:]
		typ, fl = FrameContinuation, 0
	}
	return w
}

func (w *wire) data(sid uint32, n int, end bool) *wire {
	var fl uint8
	if end {
		fl = FlagEndStream
	}
	return w.frame(FrameData, fl, sid, make([]byte, n))
}

func (w *wire) settings(kv ...uint32) *wire {
	var p []byte
	for i := 0; i+1 < len(kv); i += 2 {
		p = binary.BigEndian.AppendUint16(p, uint16(kv[i]))
		p = binary.BigEndian.AppendUint32(p, kv[i+1])
	}
	return w.frame(FrameSettings, 0, 0, p)
}

func (w *wire) rst(sid, code uint32) *wire {
	return w.frame(FrameRSTStream, 0, sid, binary.BigEndian.AppendUint32(nil, code))
}

func (w *wire) goaway(last, code uint32) *wire {
	p := binary.BigEndian.AppendUint32(nil, last)
	p = binary.BigEndian.AppendUint32(p, code)
	return w.frame(FrameGoAway, 0, 0, append(p, "debug"...))
}

// pings writes n PING frames: after a resynchronisation, frames to confirm it.
func (w *wire) pings(n int) *wire {
	for ; n > 0; n-- {
		w.frame(FramePing, 0, 0, make([]byte, 8))
	}
	return w
}

func (w *wire) take() []byte {
	b := w.b
	w.b = nil
	return b
}

// req is the request header list of a gRPC call of path.
func req(path string, extra ...string) []string {
	return append([]string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "svc:50051",
		"content-type", "application/grpc", "te", "trailers"}, extra...)
}

var (
	respHeaders = []string{":status", "200", "content-type", "application/grpc"}
	okTrailers  = []string{"grpc-status", "0"}
)

// conv feeds a connection's directions to a Tracker.
type conv struct {
	t     *testing.T
	tr    *Tracker
	calls []Call
	id    ConnID
	off   [2]uint64
	now   uint64
}

func newConv(t *testing.T, cfg Config, role Role) *conv {
	v := &conv{t: t, id: 7, now: 1_000}
	v.tr = NewTracker(cfg, func(c *Call) { v.calls = append(v.calls, *c) }, nil)
	v.tr.ConnOpen(&ConnOpen{Conn: v.id, TimeNs: v.now, Role: role, Proc: Proc{PID: 42}})
	return v
}

// send feeds b as one chunk of d.
func (v *conv) send(d Dir, b []byte) *conv {
	v.now += 1_000
	v.tr.Chunk(&Chunk{Conn: v.id, Dir: d, Offset: v.off[d], Data: b, TimeNs: v.now, Proc: Proc{PID: 42, TID: 43}})
	v.off[d] += uint64(len(b))
	return v
}

// skip advances d's offset by n bytes not captured.
func (v *conv) skip(d Dir, n int) *conv {
	v.off[d] += uint64(n)
	return v
}

func (v *conv) stats() Stats { return v.tr.Stats() }

func (v *conv) only() Call {
	v.t.Helper()
	require.Len(v.t, v.calls, 1)
	return v.calls[0]
}
