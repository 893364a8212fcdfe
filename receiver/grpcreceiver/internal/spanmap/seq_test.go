// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spanmap

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// fleetPair is one call seen by its client and its server on two hosts,
// under two collectors, through NAT: the client dialled a service address
// (DNAT) and the server sees the node's address (SNAT). Only the sequence
// numbers and the stream id are common.
func fleetPair(reqSeq, respSeq uint32) (client, server h2.Call, cm, sm *Mapper) {
	client, server = pair()
	client.ReqSeq, client.RespSeq, client.ReqSeqKnown, client.RespSeqKnown = reqSeq, respSeq, true, true
	client.Remote = h2.Endpoint{Addr: netip.MustParseAddr("10.96.0.10"), Port: 50051}
	client.PeerFound, client.PeerConn = false, 0
	server.ReqSeq, server.RespSeq, server.ReqSeqKnown, server.RespSeqKnown = reqSeq, respSeq, true, true
	server.Conn, server.ClientConn, server.ClientConnKnown, server.PeerFound = 4242, 0, false, false
	server.Local = h2.Endpoint{Addr: netip.MustParseAddr("10.1.2.3"), Port: 8443}
	server.Remote = h2.Endpoint{Addr: netip.MustParseAddr("10.0.5.5"), Port: 61234}
	cm = New(Config{BootID: boot, Instance: [16]byte{1}})
	sm = New(Config{BootID: "9d7e0000-aaaa-4bbb-8ccc-ddddeeeeffff", Instance: [16]byte{2}})
	return client, server, cm, sm
}

func TestSeqIDsAcrossHostsAndNAT(t *testing.T) {
	c, s, cm, sm := fleetPair(0xdeadbeef, 17)
	cs, ss := span(t, cm, &c), span(t, sm, &s)
	assert.Equal(t, cs.TraceID(), ss.TraceID(), "one trace")
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID(), "the server span is the child of the client's")
	assert.True(t, cs.ParentSpanID().IsEmpty())
	assert.NotEqual(t, cs.SpanID(), ss.SpanID())

	// what the ids are made of: the numbers and the stream id, nothing local
	for _, f := range []func(*h2.Call){
		func(c *h2.Call) { c.ReqSeq++ },
		func(c *h2.Call) { c.RespSeq++ },
		func(c *h2.Call) { c.RespSeqKnown = false },
		func(c *h2.Call) { c.StreamID += 2 },
	} {
		c2 := c
		f(&c2)
		assert.NotEqual(t, cs.SpanID(), span(t, cm, &c2).SpanID())
		assert.NotEqual(t, cs.TraceID(), span(t, cm, &c2).TraceID())
	}

	// no response headers seen by either end: still one trace
	c.RespSeqKnown, s.RespSeqKnown = false, false
	cs, ss = span(t, cm, &c), span(t, sm, &s)
	assert.Equal(t, cs.TraceID(), ss.TraceID())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID())
}

func TestSeqIDsTraceParentWins(t *testing.T) {
	tp := h2.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.True(t, tp.Valid)
	c, s, cm, sm := fleetPair(1, 2)
	c.TraceParent, s.TraceParent = tp, tp
	cs, ss := span(t, cm, &c), span(t, sm, &s)
	assert.Equal(t, tp.TraceID, cs.TraceID())
	assert.Equal(t, tp.ParentID, cs.ParentSpanID())
	assert.Equal(t, tp.TraceID, ss.TraceID())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID())
}

// TestSeqIDsNoCollision: unrelated calls (random numbers, as the kernels'
// randomised ISNs give) never share a span id or a trace id.
func TestSeqIDsNoCollision(t *testing.T) {
	const n = 100_000
	r := rand.New(rand.NewPCG(1, 2))
	m := New(Config{})
	spans := make(map[pcommon.SpanID]struct{}, 2*n)
	traces := make(map[pcommon.TraceID]struct{}, n)
	for i := 0; i < n; i++ {
		c := h2.Call{Side: h2.SideClient, StreamID: 1 + 2*uint32(r.IntN(8)),
			ReqSeq: r.Uint32(), RespSeq: r.Uint32(), ReqSeqKnown: true, RespSeqKnown: r.IntN(8) != 0}
		ids := m.SpanIDs(&c)
		c.Side = h2.SideServer
		sids := m.SpanIDs(&c)
		require.Equal(t, ids.Span, sids.Parent)
		spans[ids.Span] = struct{}{}
		spans[sids.Span] = struct{}{}
		traces[ids.Trace] = struct{}{}
	}
	assert.Len(t, spans, 2*n)
	assert.Len(t, traces, n)
}

// TestMethodPlaceholder: a method named by an HPACK entry from before the
// capture stays _OTHER (semconv) and gets the entry's placeholder, counted.
func TestMethodPlaceholder(t *testing.T) {
	m := New(Config{BootID: boot})
	c, _ := pair()
	c.Flags |= h2.FlagMethodUnknown
	c.Path, c.Service, c.RPC, c.MethodPlaceholder = "", "", "", "_UNKNOWN_7"
	cs := span(t, m, &c)
	assert.Equal(t, "grpc", cs.Name())
	v, _ := cs.Attributes().Get("rpc.method")
	assert.Equal(t, Other, v.Str())
	v, ok := cs.Attributes().Get(AttrMethodPlaceholder)
	require.True(t, ok)
	assert.Equal(t, "_UNKNOWN_7", v.Str())
	assert.Equal(t, uint64(1), m.Stats().SpansMethodPlaceholder)

	c.MethodPlaceholder = ""
	_, ok = span(t, m, &c).Attributes().Get(AttrMethodPlaceholder)
	assert.False(t, ok)
	assert.Equal(t, uint64(1), m.Stats().SpansMethodPlaceholder)
}
