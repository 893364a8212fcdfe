// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spanmap

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// sockISN is what the two sockets of a connection whose client's ISN is ci
// and server's si say (h2.SockISN): the connecting end counts its SYN in
// bytes_acked, the accepting end does not, and neither counts the peer's
// SYN in bytes_received (as measured by the capture's TLS tests).
func sockISN(ci, si uint32) (client, server h2.SockISN) {
	return h2.SockISN{Snd: ci, Rcv: si + 1, Known: true}, h2.SockISN{Snd: si + 1, Rcv: ci + 1, Known: true}
}

// tlsFleetPair is one TLS call seen by both ends on two hosts through NAT:
// no sequence numbers of the call's bytes, only the sockets' ISNs.
func tlsFleetPair(ci, si uint32) (client, server h2.Call, cm, sm *Mapper) {
	client, server, cm, sm = fleetPair(0, 0)
	client.ReqSeqKnown, client.RespSeqKnown, server.ReqSeqKnown, server.RespSeqKnown = false, false, false, false
	client.ISN, server.ISN = sockISN(ci, si)
	return client, server, cm, sm
}

func TestSockISNClientServer(t *testing.T) {
	c, s := sockISN(0xffffffff, 7) // the client's ISN wraps
	cc, cs := c.ClientServer(h2.SideClient)
	sc, ss := s.ClientServer(h2.SideServer)
	assert.Equal(t, [2]uint32{0xffffffff, 7}, [2]uint32{cc, cs})
	assert.Equal(t, [2]uint32{0xffffffff, 7}, [2]uint32{sc, ss})
}

func TestISNIDsAcrossHostsAndNAT(t *testing.T) {
	c, s, cm, sm := tlsFleetPair(0x6cdc97b, 0x6b2ee9b1)
	cs, ss := span(t, cm, &c), span(t, sm, &s)
	assert.Equal(t, cs.TraceID(), ss.TraceID(), "one trace")
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID(), "the server span is the child of the client's")
	assert.True(t, cs.ParentSpanID().IsEmpty())
	assert.NotEqual(t, cs.SpanID(), ss.SpanID())

	// what the ids are made of: the two ISNs and the stream id
	for _, f := range []func(*h2.Call){
		func(c *h2.Call) { c.ISN.Snd++ },
		func(c *h2.Call) { c.ISN.Rcv++ },
		func(c *h2.Call) { c.StreamID += 2 },
	} {
		c2 := c
		f(&c2)
		assert.NotEqual(t, cs.SpanID(), span(t, cm, &c2).SpanID())
		assert.NotEqual(t, cs.TraceID(), span(t, cm, &c2).TraceID())
	}
	// not the plaintext ids: the sequence numbers of the call's bytes win
	p, _, _, _ := fleetPair(1, 2)
	p.ISN = c.ISN
	assert.NotEqual(t, cs.TraceID(), span(t, cm, &p).TraceID())

	// the socket not found: the local ids, no join across hosts
	c.ISN.Known, s.ISN.Known = false, false
	assert.NotEqual(t, span(t, cm, &c).TraceID(), span(t, sm, &s).TraceID())
}

func TestISNIDsTraceParentWins(t *testing.T) {
	tp := h2.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.True(t, tp.Valid)
	c, s, cm, sm := tlsFleetPair(1, 2)
	c.TraceParent, s.TraceParent = tp, tp
	cs, ss := span(t, cm, &c), span(t, sm, &s)
	assert.Equal(t, tp.TraceID, cs.TraceID())
	assert.Equal(t, tp.ParentID, cs.ParentSpanID())
	assert.Equal(t, tp.TraceID, ss.TraceID())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID())
}

// TestISNIDsNoCollision: the calls of unrelated TLS connections (random
// ISNs) never share a span id or a trace id, and neither do the calls of
// one connection (its stream ids).
func TestISNIDsNoCollision(t *testing.T) {
	const conns, streams = 20_000, 5
	r := rand.New(rand.NewPCG(3, 4))
	m := New(Config{})
	spans := make(map[pcommon.SpanID]struct{}, 2*conns*streams)
	traces := make(map[pcommon.TraceID]struct{}, conns*streams)
	for i := 0; i < conns; i++ {
		cl, sv := sockISN(r.Uint32(), r.Uint32())
		for k := uint32(0); k < streams; k++ {
			c := h2.Call{Side: h2.SideClient, StreamID: 1 + 2*k, ISN: cl}
			ids := m.SpanIDs(&c)
			c.Side, c.ISN = h2.SideServer, sv
			sids := m.SpanIDs(&c)
			require.Equal(t, ids.Span, sids.Parent)
			require.Equal(t, ids.Trace, sids.Trace)
			spans[ids.Span] = struct{}{}
			spans[sids.Span] = struct{}{}
			traces[ids.Trace] = struct{}{}
		}
	}
	assert.Len(t, spans, 2*conns*streams)
	assert.Len(t, traces, conns*streams)
}
