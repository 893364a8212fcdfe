// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unaryChunks is n unary gRPC calls on one connection as the kernel would
// capture them at the client: per direction, the chunks of the copied runs
// (frame headers and header-block payloads) and the offsets they begin at;
// DATA payloads are holes.
type capture struct {
	dir  Dir
	off  uint64
	data []byte
}

func unaryChunks(n int) []capture {
	c, s := newWire(true), newWire(false)
	var out []capture
	var off [2]uint64
	emit := func(d Dir, b []byte, hole int) {
		out = append(out, capture{d, off[d], b})
		off[d] += uint64(len(b) + hole)
	}
	emit(Egress, c.settings(4, 65535).take(), 0)
	emit(Ingress, s.settings(1, 4096).frame(FrameSettings, FlagAck, 0, nil).take(), 0)
	emit(Egress, c.frame(FrameSettings, FlagAck, 0, nil).take(), 0)
	for i := 0; i < n; i++ {
		sid := uint32(2*i + 1)
		hb := c.headers(sid, false, 0, req("/grpc.testing.TestService/UnaryCall", "grpc-timeout", strconv.Itoa(i%50+1)+"S")...).take()
		d := c.data(sid, 20, true).take()
		emit(Egress, append(hb, d[:9]...), 20)
		rh := s.headers(sid, false, 0, respHeaders...).take()
		d = s.data(sid, 30, false).take()
		emit(Ingress, append(rh, d[:9]...), 30)
		emit(Ingress, s.headers(sid, true, 0, okTrailers...).take(), 0)
	}
	return out
}

func feedCaptures(tr *Tracker, id ConnID, caps []capture, t0 uint64) {
	ch := Chunk{Conn: id, Proc: Proc{PID: 1}}
	for i := range caps {
		if len(caps[i].data) == 0 {
			continue
		}
		ch.Dir, ch.Offset, ch.Data, ch.TimeNs = caps[i].dir, caps[i].off, caps[i].data, t0+uint64(i)
		tr.Chunk(&ch)
	}
}

func TestUnaryChunks(t *testing.T) {
	var calls int
	tr := NewTracker(Config{}, func(c *Call) {
		calls++
		assert.Equal(t, "/grpc.testing.TestService/UnaryCall", c.Path)
		assert.Equal(t, 0, c.GRPCStatus)
		assert.Equal(t, uint32(1), c.ReqDataFrames)
	}, nil)
	tr.ConnOpen(&ConnOpen{Conn: 1, Role: RoleClient})
	feedCaptures(tr, 1, unaryChunks(100), 1)
	assert.Equal(t, 100, calls)
	st := tr.Stats()
	assert.Zero(t, st.GapsTotal())
	assert.Zero(t, st.HPACKErrors)
	assert.Positive(t, st.BytesHoles)
}

// TestDataFrameAllocatesNothing: a DATA frame header of an open stream
// costs no allocation.
func TestDataFrameAllocatesNothing(t *testing.T) {
	tr := NewTracker(Config{}, func(*Call) {}, nil)
	tr.ConnOpen(&ConnOpen{Conn: 1, Role: RoleClient})
	c, s := newWire(true), newWire(false)
	tr.Chunk(&Chunk{Conn: 1, Dir: Egress, Data: c.settings().headers(1, false, 0, req("/a.B/C")...).take()})
	resp := s.settings().headers(1, false, 0, respHeaders...).take()
	tr.Chunk(&Chunk{Conn: 1, Dir: Ingress, Data: resp})
	ch := Chunk{Conn: 1, Dir: Ingress, Data: s.data(1, 1000, false).take()[:9]}
	next := uint64(len(resp))
	allocs := testing.AllocsPerRun(1000, func() {
		ch.Offset = next
		tr.Chunk(&ch)
		next += 9 + 1000
	})
	assert.Zero(t, allocs)
	st := tr.Stats()
	assert.Zero(t, st.GapsTotal())
	require.Equal(t, uint64(1000*1000), st.BytesHoles, "1001 runs; the last hole is not known yet")
}

func BenchmarkTrackerUnary(b *testing.B) {
	const perConn = 1000
	caps := unaryChunks(perConn)
	var calls int
	tr := NewTracker(Config{}, func(*Call) { calls++ }, nil)
	b.ReportAllocs()
	b.ResetTimer()
	var id ConnID
	for done := 0; done < b.N; done += perConn {
		id++
		tr.ConnOpen(&ConnOpen{Conn: id, Role: RoleClient})
		n := min(perConn, b.N-done)
		feedCaptures(tr, id, caps[:3+3*n], 1) // 3 chunks of settings, 3 a call
		tr.ConnClose(&ConnClose{Conn: id})
	}
	b.StopTimer()
	if calls != b.N {
		b.Fatalf("%d calls for %d", calls, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// FuzzFrames feeds arbitrary bytes, cut into chunks with holes, to the
// connection of each role: nothing may panic, and the bounds hold.
func FuzzFrames(f *testing.F) {
	c, s := newWire(true), newWire(false)
	f.Add(byte(1), append(c.settings().headers(1, true, 0, req("/a.B/C")...).take(),
		s.settings().headers(1, true, 0, append(respHeaders, okTrailers...)...).rst(3, 8).goaway(1, 0).take()...))
	f.Add(byte(0), []byte(Preface))
	f.Add(byte(2), []byte{0, 0, 4, 8, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 1, 5, 0, 0, 0, 1})
	f.Fuzz(fuzzFrames)
}

func fuzzFrames(t *testing.T, ctl byte, data []byte) {
	{
		tr := NewTracker(Config{MaxStreamsPerConn: 8, MaxHeaderBlock: 512}, func(c *Call) {
			if c.EndNs < c.StartNs {
				t.Fatalf("ends before it starts: %+v", c)
			}
		}, nil)
		tr.ConnOpen(&ConnOpen{Conn: 1, Role: Role(ctl % 3)})
		var off [2]uint64
		for i := 0; len(data) > 0; i++ {
			k := data[0]
			data = data[1:]
			d := Dir(k & 1)
			off[d] += uint64(k>>1) & 3 * uint64(k>>3) // a hole, sometimes
			n := min(len(data), int(k>>2)+1)
			tr.Chunk(&Chunk{Conn: 1, Dir: d, Offset: off[d], Data: data[:n], TimeNs: uint64(i)})
			off[d] += uint64(n)
			data = data[n:]
			if i%16 == 15 {
				tr.Lost(&Lost{Count: 1})
				tr.Expire(uint64(i))
			}
		}
		if c := tr.conns[1]; c != nil {
			if len(c.streams) > 8 {
				t.Fatalf("%d streams", len(c.streams))
			}
			for i := range c.dirs {
				if len(c.dirs[i].block) > 512 {
					t.Fatalf("block of %d bytes", len(c.dirs[i].block))
				}
			}
		}
		tr.ConnClose(&ConnClose{Conn: 1})
		if st := tr.Stats(); st.ConnsLive != 0 {
			t.Fatal("connection left")
		}
	}
}
