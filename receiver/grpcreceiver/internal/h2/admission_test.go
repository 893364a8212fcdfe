// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefaceFloodKeepsChannels: a long-lived channel whose method is
// indexed in its HPACK table, then thousands of connections that only send
// the client preface (or its first bytes): a later call on the channel
// still has its method, and the flood was bounded.
func TestPrefaceFloodKeepsChannels(t *testing.T) {
	var calls []Call
	tr := NewTracker(Config{}, func(c *Call) { calls = append(calls, *c) }, nil)
	c, s := newWire(true), newWire(false)
	var off [2]uint64
	now := uint64(1000)
	send := func(id ConnID, d Dir, b []byte) {
		now += 10
		tr.Chunk(&Chunk{Conn: id, Dir: d, Offset: off[d], Data: b, TimeNs: now})
		off[d] += uint64(len(b))
	}
	call := func(sid uint32) {
		send(1, Egress, c.headers(sid, true, 0, req("/pkg.Svc/Method")...).take())
		send(1, Ingress, s.headers(sid, true, 0, append(respHeaders, okTrailers...)...).take())
	}
	tr.ConnOpen(&ConnOpen{Conn: 1, TimeNs: now, Role: RoleClient})
	send(1, Egress, c.settings().take())
	send(1, Ingress, s.settings().take())
	call(1)
	for id := ConnID(100); id < 100+3*DefaultMaxConns; id++ {
		now += 10
		tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: now, Role: RoleClient})
		b := []byte(Preface)
		if id%2 == 0 {
			b = b[:4]
		}
		tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: b, TimeNs: now})
	}
	call(3)
	require.Len(t, calls, 2)
	assert.Equal(t, "/pkg.Svc/Method", calls[1].Path, "the channel's HPACK table survived the flood")
	assert.False(t, calls[1].Has(FlagMethodUnknown))
	assert.LessOrEqual(t, len(tr.conns), DefaultMaxConns+DefaultMaxConns/4)
	st := tr.Stats()
	assert.Zero(t, st.ConnsEvictedLimit+st.ConnsEvictedBudget)
	t.Logf("%+v", st)
}

// TestStreamMapsAccounted: connections that each opened and dropped a
// thousand streams hold their maps' memory (Go maps do not shrink): the
// tracker's heap stays within a small multiple of its budget.
func TestStreamMapsAccounted(t *testing.T) {
	const (
		budget  = 2 << 20
		conns   = 1000
		streams = 1000
	)
	c, s := newWire(true), newWire(false)
	reqs := c.settings().take()
	var rsts []byte
	for sid := uint32(1); sid < 2*streams; sid += 2 {
		reqs = append(reqs, c.headers(sid, false, 0, req("/a.B/C")...).take()...)
		rsts = append(rsts, s.rst(sid, errCancel).take()...)
	}
	before := heapNow()
	tr := NewTracker(Config{MemoryBudget: budget}, func(*Call) {}, nil)
	now := uint64(1000)
	for id := ConnID(1); id <= conns; id++ {
		now += 10
		tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: now, Role: RoleClient})
		tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: reqs, TimeNs: now + 1})
		tr.Chunk(&Chunk{Conn: id, Dir: Ingress, Data: append(s.settings().take(), rsts...), TimeNs: now + 2})
		require.LessOrEqual(t, tr.MemoryUsed(), budget)
	}
	with := heapNow()
	used := tr.MemoryUsed()
	st := tr.Stats()
	for id := range tr.conns {
		tr.ConnClose(&ConnClose{Conn: id})
	}
	tr.free = nil
	without := heapNow()
	t.Logf("tracker heap %d KiB, accounted %d KiB, %d connections live; all grown by %d KiB",
		(int64(with)-int64(without))>>10, used>>10, st.ConnsLive, (int64(with)-int64(before))>>10)
	assert.Less(t, int64(with)-int64(without), int64(2*budget))
	runtime.KeepAlive(tr)
}
