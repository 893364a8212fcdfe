// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seqConv feeds a connection's directions with TCP sequence numbers: the
// byte at offset o of direction d is at isn[d] + 1 + o (offset 0 follows
// the SYN), modulo 2^32, whatever the offsets' base (base[d]).
type seqConv struct {
	*conv
	isn  [2]uint32
	base [2]uint64
}

func (v *seqConv) send(d Dir, b []byte, cuts ...int) {
	for len(b) > 0 {
		n := len(b)
		if len(cuts) > 0 {
			n, cuts = min(cuts[0], n), cuts[1:]
		}
		v.now += 1_000
		rel := v.off[d]
		v.tr.Chunk(&Chunk{Conn: v.id, Dir: d, Offset: v.base[d] + rel, Data: b[:n], TimeNs: v.now,
			Seq: v.isn[d] + 1 + uint32(rel), SeqKnown: true})
		v.off[d] += uint64(n)
		b = b[n:]
	}
}

// wireUnary is a client's and a server's bytes of streams 1 and 3, each a
// unary call.
func wireUnary() (c, s []byte, reqAt, respAt [2]int) {
	cw, sw := newWire(true), newWire(false)
	c = cw.settings().take()
	s = sw.settings().take()
	for i, sid := range []uint32{1, 3} {
		reqAt[i] = len(c)
		c = append(c, cw.headers(sid, false, 0, req("/pkg.Svc/Do")...).data(sid, 7, true).take()...)
		respAt[i] = len(s)
		s = append(s, sw.headers(sid, false, 0, respHeaders...).data(sid, 9, false).headers(sid, true, 0, okTrailers...).take()...)
	}
	return c, s, reqAt, respAt
}

func TestCallSeqs(t *testing.T) {
	c, s, reqAt, respAt := wireUnary()
	isn := [2]uint32{0xfffffff0, 1000} // the client's wraps around in its first call
	check := func(name string, v *seqConv, reqDir Dir) {
		t.Helper()
		calls, isn := v.calls, v.isn
		require.Len(t, calls, 2, name)
		for i, call := range calls {
			assert.True(t, call.ReqSeqKnown, name)
			assert.True(t, call.RespSeqKnown, name)
			assert.Equal(t, isn[reqDir]+1+uint32(reqAt[i]), call.ReqSeq, "%s: call %d", name, i)
			assert.Equal(t, isn[1-reqDir]+1+uint32(respAt[i]), call.RespSeq, "%s: call %d", name, i)
		}
	}

	// the client, from the start, chunks cut inside frame headers
	v := &seqConv{conv: newConv(t, Config{}, RoleClient), isn: isn}
	v.send(Egress, c, 20, 5, 3, 40, 2, 1, 7)
	v.send(Ingress, s, 4, 11, 30)
	check("client", v, Egress)
	assert.Less(t, v.calls[0].ReqSeq, isn[Egress], "wrapped")

	// the server sees the same bytes the other way round
	v = &seqConv{conv: newConv(t, Config{}, RoleServer), isn: [2]uint32{isn[1], isn[0]}}
	v.send(Ingress, c)
	v.send(Egress, s, 13)
	check("server", v, Ingress)
	assert.Equal(t, isn[Egress]+1+uint32(reqAt[0]), v.calls[0].ReqSeq)

	// a response recorded before its request (an orphan adopted)
	v = &seqConv{conv: newConv(t, Config{}, RoleClient), isn: isn}
	v.send(Egress, c[:reqAt[1]])
	v.send(Ingress, s)
	v.send(Egress, c[reqAt[1]:])
	check("orphan", v, Egress)
}

// TestCallSeqsPredating: a connection that predates the capture has
// arbitrary offsets, but its sequence numbers are the same as from the
// start: both trackers give the call the same numbers.
func TestCallSeqsPredating(t *testing.T) {
	c, s, reqAt, respAt := wireUnary()
	isn := [2]uint32{123456789, 0xffffff00}
	v := &seqConv{conv: newConv(t, Config{}, RoleClient), isn: isn}
	v.send(Egress, c)
	v.send(Ingress, s)
	require.Len(t, v.calls, 2)
	want := v.calls[1]

	// the capture starts at the second call, offsets of another base;
	// confirmFrames PINGs come first so that the call is decoded today
	cw, sw := newWire(false), newWire(false)
	pc, ps := cw.pings(confirmFrames).take(), sw.pings(confirmFrames).take()
	u := &seqConv{conv: newConv(t, Config{}, RoleUnknown), isn: isn, base: [2]uint64{1 << 40, 77}}
	u.off = [2]uint64{uint64(reqAt[1] - len(pc)), uint64(respAt[1] - len(ps))}
	u.send(Egress, append(pc, c[reqAt[1]:]...))
	u.send(Ingress, append(ps, s[respAt[1]:]...))
	require.Len(t, u.calls, 1)
	got := u.calls[0]
	assert.Equal(t, uint32(3), got.StreamID)
	assert.True(t, got.ReqSeqKnown && got.RespSeqKnown)
	assert.Equal(t, want.ReqSeq, got.ReqSeq)
	assert.Equal(t, want.RespSeq, got.RespSeq)
}

// TestCallSeqsUnknown: chunks without sequence numbers (TLS plaintext)
// leave them unknown.
func TestCallSeqsUnknown(t *testing.T) {
	v := unary(t, Config{}, 0)
	got := v.only()
	assert.False(t, got.ReqSeqKnown)
	assert.False(t, got.RespSeqKnown)
}
