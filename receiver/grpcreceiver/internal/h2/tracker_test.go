// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// unary runs one unary call on a fresh client connection.
func unary(t *testing.T, cfg Config, reqMaxFrame int, extra ...string) *conv {
	v := newConv(t, cfg, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().take())
	v.send(Ingress, s.settings(4, 65535).frame(FrameSettings, FlagAck, 0, nil).take())
	v.send(Egress, c.headers(1, false, reqMaxFrame, req("/pkg.Svc/Do", extra...)...).data(1, 7, true).take())
	v.send(Ingress, s.headers(1, false, 0, respHeaders...).data(1, 9, false).take())
	v.send(Ingress, s.headers(1, true, 0, append(okTrailers, "grpc-message", "fine%21")...).take())
	return v
}

func TestUnaryClient(t *testing.T) {
	v := unary(t, Config{}, 0,
		"grpc-timeout", "1S", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	c := v.only()
	assert.Equal(t, SideClient, c.Side)
	assert.Equal(t, RoleClient, c.Role)
	assert.Equal(t, uint32(1), c.StreamID)
	assert.Equal(t, "POST", c.Method)
	assert.Equal(t, "/pkg.Svc/Do", c.Path)
	assert.Equal(t, "pkg.Svc", c.Service)
	assert.Equal(t, "Do", c.RPC)
	assert.Equal(t, "svc:50051", c.Authority)
	assert.Equal(t, ProtoGRPC, c.Protocol)
	assert.Equal(t, 0, c.GRPCStatus)
	assert.Equal(t, "fine!", c.GRPCMessage)
	assert.Equal(t, 200, c.HTTPStatus)
	assert.Equal(t, time.Second, c.Timeout)
	assert.True(t, c.TraceParent.Valid)
	assert.Equal(t, uint32(1), c.ReqDataFrames)
	assert.Equal(t, uint32(1), c.RespDataFrames)
	assert.Equal(t, uint64(7), c.ReqDataBytes)
	assert.Equal(t, uint64(9), c.RespDataBytes)
	assert.Positive(t, c.ReqHeaderBytes)
	assert.Positive(t, c.RespHeaderBytes)
	assert.True(t, c.Has(FlagRequestEnded|FlagResponseHeaders))
	assert.False(t, c.Has(FlagStreaming))
	assert.Equal(t, uint64(4_000), c.StartNs)
	assert.Equal(t, uint64(6_000), c.EndNs, "ends at the trailers")
	assert.Equal(t, uint32(42), c.Proc.PID)
	assert.Equal(t, uint32(43), c.Proc.TID)
	assert.True(t, c.ClientConnKnown)
	assert.Equal(t, v.id, c.ClientConn)
	st := v.stats()
	assert.Zero(t, st.GapsTotal())
	assert.Zero(t, st.HPACKErrors)
	assert.Equal(t, uint64(1), st.CallsEmitted)
	assert.Equal(t, uint64(3), st.HeaderBlocks)
}

func TestUnaryServerRole(t *testing.T) {
	v := newConv(t, Config{}, RoleServer)
	c, s := newWire(true), newWire(false)
	v.send(Egress, s.settings().take())
	v.send(Ingress, c.settings().headers(1, false, 0, req("/pkg.Svc/Do")...).data(1, 7, true).take())
	v.send(Egress, s.headers(1, false, 0, respHeaders...).data(1, 9, false).headers(1, true, 0, okTrailers...).take())
	got := v.only()
	assert.Equal(t, SideServer, got.Side)
	assert.Equal(t, "/pkg.Svc/Do", got.Path)
	assert.False(t, got.ClientConnKnown)
}

func TestContinuationPaddingPriority(t *testing.T) {
	big := string(make([]byte, 3000))
	v := unary(t, Config{}, 700, "x-big", big)
	assert.Equal(t, "/pkg.Svc/Do", v.only().Path)
	assert.Positive(t, v.only().ReqHeaderBytes)

	// HEADERS with PADDED and PRIORITY
	v = newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	c.settings()
	blk := c.block(req("/p.S/M")...)
	p := append([]byte{3}, 0, 0, 0, 1, 16) // pad length, priority
	p = append(p, blk...)
	p = append(p, 0, 0, 0)
	c.frame(FrameHeaders, FlagPadded|FlagPriority|FlagEndHeaders|FlagEndStream, 1, p)
	v.send(Egress, c.take())
	v.send(Ingress, s.settings().headers(1, true, 0, append(respHeaders, "grpc-status", "5")...).take())
	got := v.only()
	assert.Equal(t, "/p.S/M", got.Path)
	assert.Equal(t, 5, got.GRPCStatus)
	assert.Zero(t, got.RespDataFrames, "trailers-only")
	assert.Equal(t, 200, got.HTTPStatus)

	// padding longer than the payload: the framing is lost
	v = newConv(t, Config{}, RoleClient)
	c = newWire(true)
	c.settings().frame(FrameHeaders, FlagPadded|FlagEndHeaders, 1, []byte{9, 1, 2})
	v.send(Egress, c.take())
	assert.Equal(t, uint64(1), v.stats().Gaps[GapBadFrame])
	assert.Empty(t, v.calls)
}

func TestHeaderTableSizeDirection(t *testing.T) {
	run := func(advertise bool) (*conv, Stats) {
		v := newConv(t, Config{}, RoleClient)
		c, s := newWire(true), newWire(false)
		v.send(Egress, c.settings().take())
		if advertise { // the server's decoder allows 8192: the client's encoder may use it
			v.send(Ingress, s.settings(settingHeaderTableSize, 8192).take())
		} else {
			v.send(Ingress, s.settings().take())
		}
		c.enc.SetMaxDynamicTableSizeLimit(8192)
		c.enc.SetMaxDynamicTableSize(8192)
		v.send(Egress, c.headers(1, true, 0, req("/pkg.Svc/Do")...).take())
		v.send(Ingress, s.headers(1, true, 0, append(respHeaders, okTrailers...)...).take())
		return v, v.stats()
	}
	v, st := run(true)
	assert.Zero(t, st.HPACKErrors)
	assert.Equal(t, "/pkg.Svc/Do", v.only().Path)
	// without the SETTINGS the size update is refused: the test can fail
	v, st = run(false)
	assert.Equal(t, uint64(1), st.HPACKErrors)
	c := v.only()
	assert.True(t, c.Has(FlagMethodUnknown))
}

func TestResetAndDeadline(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().headers(1, false, 0, req("/a.B/Stream")...).data(1, 5, false).take())
	v.send(Ingress, s.settings().headers(1, false, 0, respHeaders...).data(1, 5, false).data(1, 5, false).take())
	v.send(Egress, c.rst(1, errCancel).take())
	got := v.only()
	assert.True(t, got.Has(FlagReset|FlagCancelled|FlagStreaming))
	assert.False(t, got.Has(FlagDeadline))
	assert.Equal(t, 1, got.GRPCStatus)
	assert.Equal(t, uint32(errCancel), got.ResetCode)
	assert.Equal(t, uint32(2), got.RespDataFrames)

	// a CANCEL from the client once its grpc-timeout has passed is its deadline
	v = newConv(t, Config{}, RoleClient)
	c, s = newWire(true), newWire(false)
	v.send(Egress, c.settings().headers(1, false, 0, req("/a.B/Slow", "grpc-timeout", "5u")...).take())
	v.send(Ingress, s.settings().take())
	v.send(Egress, c.rst(1, errCancel).take())
	got = v.only()
	assert.True(t, got.Has(FlagDeadline|FlagCancelled))
	assert.Equal(t, 4, got.GRPCStatus)

	// a refused stream
	v = newConv(t, Config{}, RoleClient)
	c, s = newWire(true), newWire(false)
	v.send(Egress, c.settings().headers(1, true, 0, req("/a.B/C")...).take())
	v.send(Ingress, s.settings().rst(1, errRefusedStream).take())
	assert.Equal(t, 14, v.only().GRPCStatus)
	got = v.only()
	assert.False(t, got.Has(FlagCancelled))
}

func TestGoAwayAndClose(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().take())
	for _, sid := range []uint32{1, 3, 5, 7} {
		v.send(Egress, c.headers(sid, true, 0, req("/a.B/C")...).take())
	}
	v.send(Ingress, s.settings().goaway(3, 0).take())
	require.Len(t, v.calls, 2)
	for _, got := range v.calls {
		assert.Greater(t, got.StreamID, uint32(3))
		assert.True(t, got.Has(FlagGoAway))
		assert.Equal(t, 14, got.GRPCStatus)
	}
	v.send(Ingress, s.headers(1, true, 0, append(respHeaders, okTrailers...)...).take())
	require.Len(t, v.calls, 3)
	assert.Equal(t, 0, v.calls[2].GRPCStatus)
	v.tr.ConnClose(&ConnClose{Conn: v.id, TimeNs: 99_000})
	require.Len(t, v.calls, 4)
	got := v.calls[3]
	assert.Equal(t, uint32(3), got.StreamID)
	assert.True(t, got.Has(FlagConnClosed))
	assert.Equal(t, 14, got.GRPCStatus)
	assert.Equal(t, uint64(99_000), got.EndNs)
	st := v.stats()
	assert.Equal(t, uint64(2), st.CallsGoAway)
	assert.Equal(t, uint64(1), st.CallsConnClosed)
	assert.Equal(t, uint64(1), st.GoAways)
	assert.Zero(t, st.ConnsLive)
}

func TestPlainHTTP(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().headers(1, true, 0, ":method", "GET", ":scheme", "https", ":path", "/index.html", ":authority", "x").take())
	v.send(Ingress, s.settings().headers(1, false, 0, ":status", "404", "content-type", "text/html").data(1, 10, false).data(1, 0, true).take())
	got := v.only()
	assert.Equal(t, ProtoUnknown, got.Protocol)
	assert.Equal(t, "GET", got.Method)
	assert.Equal(t, "/index.html", got.Path)
	assert.Empty(t, got.Service)
	assert.Equal(t, 404, got.HTTPStatus)
	assert.Equal(t, -1, got.GRPCStatus)
	assert.True(t, got.Has(FlagStreaming), "two DATA frames")
}

func TestHoles(t *testing.T) {
	// DATA payloads not captured: fine
	v := newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().headers(1, false, 0, req("/a.B/C")...).take())
	hdr := c.data(1, 1000, true).take()
	v.send(Egress, hdr[:9]).skip(Egress, 1000)
	v.send(Ingress, s.settings().headers(1, false, 0, respHeaders...).take())
	d := s.data(1, 70000, false).take()
	v.send(Ingress, d[:9]).skip(Ingress, 60000)
	v.send(Ingress, d[60009:60010]).skip(Ingress, 9999) // a piece of a payload: harmless
	v.send(Ingress, s.headers(1, true, 0, okTrailers...).take())
	got := v.only()
	assert.Equal(t, "/a.B/C", got.Path)
	assert.Equal(t, 0, got.GRPCStatus)
	assert.Equal(t, uint64(70000), got.RespDataBytes)
	st := v.stats()
	assert.Zero(t, st.GapsTotal())
	assert.Equal(t, uint64(69999), st.BytesHoles, "the last hole is not known yet")

	// a hole in a header block, then one over a frame header
	v = newConv(t, Config{}, RoleClient)
	c, s = newWire(true), newWire(false)
	v.send(Egress, c.settings().take())
	h := c.headers(1, true, 0, req("/a.B/C")...).take()
	v.send(Egress, h[:12]).skip(Egress, len(h)-12)
	assert.Zero(t, v.stats().GapsTotal(), "seen at the next chunk")
	// the next chunk begins at a frame: resynchronised, table unknown; the
	// first frames confirm the resync
	v.send(Egress, c.pings(confirmFrames).headers(3, true, 0, req("/a.B/C")...).take())
	assert.Equal(t, uint64(1), v.stats().Gaps[GapHeaderBlock])
	v.send(Ingress, s.settings().headers(3, true, 0, append(respHeaders, okTrailers...)...).take())
	got = v.only()
	assert.True(t, got.Has(FlagMethodUnknown), "the path is a dynamic-table reference")
	assert.Empty(t, got.Path)
	assert.Equal(t, "POST", got.Method, "static-table fields still decode")
	st = v.stats()
	assert.Equal(t, uint64(1), st.Resyncs)
	assert.Equal(t, uint64(1), st.MethodsUnknown)
	// a new path is a literal: decoded
	v.send(Egress, c.headers(5, true, 0, req("/a.B/New")...).take())
	v.send(Ingress, s.headers(5, true, 0, append(respHeaders, okTrailers...)...).take())
	require.Len(t, v.calls, 2)
	assert.Equal(t, "/a.B/New", v.calls[1].Path)

	// a stream open across a gap is flagged
	v.send(Ingress, s.headers(9, false, 0, respHeaders...).take()) // the response first: an orphan
	v.send(Egress, c.headers(9, true, 0, req("/a.B/New")...).take())
	v.send(Egress, c.headers(7, true, 0, req("/a.B/New")...).take()[:5]).skip(Egress, 100)
	v.send(Egress, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	st = v.stats()
	assert.Equal(t, uint64(1), st.Gaps[GapFrameHeader])
	assert.Equal(t, uint64(1), st.ChunksUnsynced)
	assert.Zero(t, st.StreamsUnmatched)
	v.send(Ingress, s.headers(9, true, 0, okTrailers...).take())
	require.Len(t, v.calls, 3)
	assert.True(t, v.calls[2].Has(FlagGap))
	assert.Equal(t, "/a.B/New", v.calls[2].Path)
}

func TestOverlapAndStale(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	c, s := newWire(true), newWire(false)
	b := c.settings().headers(1, true, 0, req("/a.B/C")...).take()
	v.send(Egress, b[:40])
	v.off[Egress] = 30 // re-sent bytes 30..
	v.send(Egress, b[30:])
	v.off[Egress] = 10
	v.send(Egress, b[10:20]) // wholly old
	v.send(Ingress, s.settings().headers(1, true, 0, append(respHeaders, okTrailers...)...).take())
	assert.Equal(t, "/a.B/C", v.only().Path)
	st := v.stats()
	assert.Equal(t, uint64(1), st.ChunksStale)
	assert.Zero(t, st.GapsTotal())
	assert.Equal(t, uint64(len(b))+v.off[Ingress], st.BytesReassembled)
}

func TestNotHTTP2(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	v.send(Egress, []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"))
	v.send(Ingress, []byte("HTTP/1.1 200 OK\r\n\r\n"))
	st := v.stats()
	assert.Equal(t, uint64(1), st.ConnsIgnoredNotHTTP2)
	assert.Equal(t, uint64(1), st.ChunksIgnored)
	assert.Empty(t, v.calls)

	// a server that speaks first with something else than SETTINGS
	v = newConv(t, Config{}, RoleClient)
	v.send(Ingress, []byte("220 smtp.example ESMTP ready\r\n"))
	assert.Equal(t, uint64(1), v.stats().ConnsIgnoredNotHTTP2)

	// a connection predating capture: given up after some chunks
	v = newConv(t, Config{}, RoleUnknown)
	for i := 0; i < maxFailedSyncs; i++ {
		v.send(Egress, []byte("SELECT * FROM a_table_with_a_long_name;"))
	}
	st = v.stats()
	assert.Equal(t, uint64(1), st.ConnsIgnoredNotHTTP2)
	assert.Equal(t, uint64(maxFailedSyncs), st.ChunksUnsynced)
}

func TestHeaderBlockTooLarge(t *testing.T) {
	v := unary(t, Config{MaxHeaderBlock: 1024}, 500, "x-big", string(make([]byte, 2000)))
	got := v.only()
	assert.True(t, got.Has(FlagMethodUnknown))
	st := v.stats()
	assert.Equal(t, uint64(1), st.HeaderBlocksTooLarge)
	assert.Equal(t, uint64(1), st.MethodsUnknown)
	assert.Zero(t, st.GapsTotal())
}

func TestRoleUnknownJoin(t *testing.T) {
	v := newConv(t, Config{}, RoleUnknown)
	c, s := newWire(true), newWire(false)
	early := c.settings().headers(1, true, 0, req("/a.B/Early")...).take()
	v.skip(Egress, len(early)-3)
	v.send(Egress, early[len(early)-3:]) // the tail of a frame: not a boundary
	v.send(Egress, c.pings(confirmFrames).headers(3, true, 0, req("/a.B/Early")...).take())
	s.settings().headers(1, true, 0, append(respHeaders, okTrailers...)...)
	v.skip(Ingress, len(s.take()))
	v.send(Ingress, s.pings(confirmFrames).headers(3, true, 0, append(respHeaders, okTrailers...)...).take())
	got := v.only()
	assert.True(t, got.Has(FlagMethodUnknown))
	assert.Equal(t, SideClient, got.Side, ":method is static: the request direction is known")
	st := v.stats()
	assert.Equal(t, uint64(1), st.ChunksUnsynced)
	assert.Equal(t, uint64(2), st.Resyncs)
	assert.Equal(t, uint64(2), st.HPACKErrors, "the path and the response's content-type")
}

func TestExpireAndLimits(t *testing.T) {
	v := newConv(t, Config{MaxStreamsPerConn: 2, IdleTimeout: time.Second, StreamIdleTimeout: 500 * time.Millisecond}, RoleClient)
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings().take())
	v.send(Ingress, s.settings().take())
	for _, sid := range []uint32{1, 3, 5} {
		v.send(Egress, c.headers(sid, false, 0, req("/a.B/C")...).take())
	}
	assert.Equal(t, uint64(1), v.stats().StreamsOverLimit)
	t1 := v.now
	v.tr.Expire(t1 + 100)
	assert.Empty(t, v.calls)
	v.now += uint64(400 * time.Millisecond)
	v.send(Egress, c.data(3, 1, false).take())
	v.tr.Expire(t1 + uint64(600*time.Millisecond))
	require.Len(t, v.calls, 1)
	assert.Equal(t, uint32(1), v.calls[0].StreamID)
	assert.True(t, v.calls[0].Has(FlagEvicted))
	v.tr.Expire(v.now + uint64(2*time.Second))
	require.Len(t, v.calls, 2)
	st := v.stats()
	assert.Equal(t, uint64(1), st.StreamsEvicted)
	assert.Equal(t, uint64(1), st.ConnsEvicted)
	assert.Zero(t, st.ConnsLive)

	tr := NewTracker(Config{MaxConns: 1, MaxProbationConns: 1}, func(*Call) {}, nil)
	tr.ConnOpen(&ConnOpen{Conn: 1, Role: RoleClient})
	tr.ConnOpen(&ConnOpen{Conn: 2, Role: RoleClient})
	tr.Chunk(&Chunk{Conn: 3, Data: []byte("x")})
	tr.Chunk(&Chunk{Conn: 3, Dir: 2, Data: []byte("x")})
	tr.Lost(&Lost{Count: 5})
	st = tr.Stats()
	assert.Equal(t, uint64(2), st.ProbationEvictedLimit, "the least recently active on probation goes")
	assert.Zero(t, st.ConnsEvictedLimit)
	assert.Equal(t, uint64(1), st.ConnsLive)
	assert.Equal(t, uint64(1), st.ChunksIgnored)
	assert.Equal(t, uint64(5), st.Lost)
	// calls take connections off probation, into MaxConns
	unaryOn(tr, 10, 100)
	unaryOn(tr, 11, 200)
	st = tr.Stats()
	assert.Equal(t, uint64(2), st.ConnsPromoted)
	assert.Equal(t, uint64(1), st.ConnsEvictedLimit, "the least recently active off probation goes")
	assert.Equal(t, uint64(3), st.ProbationEvictedLimit)
	assert.Equal(t, uint64(1), st.ConnsLive)
	assert.Contains(t, tr.conns, ConnID(11))
}

func TestPeerLink(t *testing.T) {
	var calls []Call
	tr := NewTracker(Config{}, func(c *Call) { calls = append(calls, *c) }, OffsetClock(1e9))
	a := Endpoint{netip.MustParseAddr("127.0.0.1"), 40000}
	b := Endpoint{netip.MustParseAddr("127.0.0.1"), 50051}
	tr.ConnOpen(&ConnOpen{Conn: 11, Role: RoleClient, Local: a, Remote: b})
	tr.ConnOpen(&ConnOpen{Conn: 22, Role: RoleServer, Local: b, Remote: a})
	c, s := newWire(true), newWire(false)
	cb := c.settings().headers(1, true, 0, req("/a.B/C")...).take()
	sb := s.settings().headers(1, true, 0, append(respHeaders, okTrailers...)...).take()
	tr.Chunk(&Chunk{Conn: 11, Dir: Egress, Data: cb, TimeNs: 10})
	tr.Chunk(&Chunk{Conn: 22, Dir: Ingress, Data: cb, TimeNs: 11})
	tr.Chunk(&Chunk{Conn: 22, Dir: Egress, Data: sb, TimeNs: 12})
	tr.ConnClose(&ConnClose{Conn: 11}) // the client end goes first: the server keeps the link
	tr.Chunk(&Chunk{Conn: 11, Dir: Ingress, Data: sb, TimeNs: 13})
	require.Len(t, calls, 2, "the client's call ends with its connection; a chunk after close starts a new, unknown connection")
	assert.Equal(t, SideClient, calls[1].Side)
	assert.True(t, calls[1].Has(FlagConnClosed))
	assert.Equal(t, ConnID(11), calls[1].ClientConn)
	assert.Equal(t, ConnID(22), calls[1].PeerConn)
	assert.Equal(t, SideServer, calls[0].Side)
	assert.True(t, calls[0].PeerFound)
	assert.Equal(t, ConnID(11), calls[0].ClientConn)
	assert.True(t, calls[0].ClientConnKnown)
	assert.Equal(t, int64(1e9+11), int64(calls[0].Start))
}

// TestPeerLinkNetNS: equal 4-tuples in two network namespaces (two pods'
// loopback) are not the two ends of one connection.
func TestPeerLinkNetNS(t *testing.T) {
	a := Endpoint{netip.MustParseAddr("127.0.0.1"), 40000}
	b := Endpoint{netip.MustParseAddr("127.0.0.1"), 50051}
	for _, ns := range [][2]uint32{{7, 8}, {7, 7}} {
		var calls []Call
		tr := NewTracker(Config{}, func(c *Call) { calls = append(calls, *c) }, nil)
		tr.ConnOpen(&ConnOpen{Conn: 11, Role: RoleClient, Local: a, Remote: b, NetNS: ns[0]})
		tr.ConnOpen(&ConnOpen{Conn: 22, Role: RoleServer, Local: b, Remote: a, NetNS: ns[1]})
		cb := newWire(true).settings().headers(1, false, 0, req("/a.B/C")...).take()
		tr.Chunk(&Chunk{Conn: 22, Dir: Ingress, Data: cb, TimeNs: 11})
		tr.ConnClose(&ConnClose{Conn: 22})
		require.Len(t, calls, 1)
		same := ns[0] == ns[1]
		assert.Equal(t, same, calls[0].PeerFound, "netns %v", ns)
		assert.Equal(t, same, calls[0].ClientConnKnown, "netns %v", ns)
		assert.Equal(t, ns[1], calls[0].NetNS)
	}
}

// TestCallISN: a TLS session's socket numbers (ConnOpen.ISN) reach its
// calls, the ids' input (spanmap); a session without them gives none.
func TestCallISN(t *testing.T) {
	for _, isn := range []SockISN{{Snd: 0x6cdc97b, Rcv: 0x6b2ee9b2, Known: true}, {}} {
		var calls []Call
		tr := NewTracker(Config{}, func(c *Call) { calls = append(calls, *c) }, nil)
		tr.ConnOpen(&ConnOpen{Conn: 22, Role: RoleServer, ISN: isn})
		cb := newWire(true).settings().headers(1, false, 0, req("/a.B/C")...).take()
		tr.Chunk(&Chunk{Conn: 22, Dir: Ingress, Data: cb, TimeNs: 11})
		tr.ConnClose(&ConnClose{Conn: 22})
		require.Len(t, calls, 1)
		assert.Equal(t, isn, calls[0].ISN)
	}
}

func TestResyncConfirmation(t *testing.T) {
	// a chunk that begins inside a frame header can look like a frame (here
	// a DATA of 66560 bytes): the next chunk, which the kernel sends at a
	// frame boundary, lands inside that payload and proves it wrong
	v := newConv(t, Config{}, RoleUnknown)
	c := newWire(false)
	hb := c.headers(1, false, 0, req("/a.B/C")...).take()
	d := c.data(1, 5, false).take()
	v.skip(Egress, 3)
	v.send(Egress, append(hb[3:], d[:9]...)).skip(Egress, 5)
	v.send(Egress, c.pings(confirmFrames).headers(3, true, 0, req("/a.B/D")...).take())
	st := v.stats()
	assert.Equal(t, uint64(2), st.Resyncs)
	assert.Equal(t, uint64(1), st.ResyncsRejected)
	assert.Zero(t, st.GapsTotal())
	v.tr.ConnClose(&ConnClose{Conn: v.id})
	got := v.only()
	assert.Equal(t, "/a.B/D", got.Path)
	assert.Equal(t, uint32(3), got.StreamID)

	// unconfirmed frames have no effect: a HEADERS right after a resync is
	// held, and forgotten when the resync is never confirmed
	v = newConv(t, Config{}, RoleUnknown)
	v.send(Egress, newWire(false).headers(5, true, 0, req("/a.B/C")...).take())
	st = v.stats()
	assert.Equal(t, uint64(1), st.HeaderBlocksUnverified)
	assert.Equal(t, uint8(confirmFrames-1), v.tr.conns[v.id].dirs[Egress].tentative)
	v.tr.ConnClose(&ConnClose{Conn: v.id})
	assert.Empty(t, v.calls)
}
