// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unaryOn feeds one whole unary call on a new connection id from its start.
func unaryOn(tr *Tracker, id ConnID, now uint64) {
	tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: now, Role: RoleClient})
	c, s := newWire(true), newWire(false)
	tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: c.settings().headers(1, true, 0, req("/a.B/C")...).take(), TimeNs: now + 1})
	tr.Chunk(&Chunk{Conn: id, Dir: Ingress, Data: s.settings().headers(1, true, 0, append(respHeaders, okTrailers...)...).take(), TimeNs: now + 2})
}

// TestNotBlinded: a full tracker of idle connections (not HTTP/2, or
// HTTP/2 and silent) still follows the calls of new connections.
func TestNotBlinded(t *testing.T) {
	for _, http2 := range []bool{false, true} {
		var calls int
		tr := NewTracker(Config{MaxConns: 16}, func(*Call) { calls++ }, nil)
		for id := ConnID(1); id <= 16; id++ {
			tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: 1, Role: RoleClient})
			if http2 {
				tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: newWire(true).settings().take(), TimeNs: 2})
			} else {
				tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), TimeNs: 2})
			}
		}
		for id := ConnID(100); id < 132; id++ {
			unaryOn(tr, id, uint64(id)*10)
		}
		assert.Equal(t, 32, calls, "http2 %v", http2)
		st := tr.Stats()
		if !http2 {
			assert.Equal(t, uint64(16), st.ConnsIgnoredNotHTTP2)
			// later chunks of the forgotten ones cost a lookup
			tr.Chunk(&Chunk{Conn: 1, Dir: Ingress, Data: []byte("HTTP/1.1 200 OK\r\n\r\n"), TimeNs: 3})
			assert.Equal(t, uint64(1), tr.Stats().ChunksNotHTTP2)
			assert.NotContains(t, tr.conns, ConnID(1))
		} else {
			assert.Equal(t, uint64(1), st.ProbationEvictedLimit, "one idle one, on probation: the others leave it")
			assert.Equal(t, uint64(16), st.ConnsEvictedLimit, "16 of the calls' own")
		}
		assert.LessOrEqual(t, len(tr.conns), 16+16)
	}
}

// TestNotHTTP2IDReused: a ConnOpen or ConnClose of an id found not HTTP/2
// forgets that: ids are reused.
func TestNotHTTP2IDReused(t *testing.T) {
	var calls int
	tr := NewTracker(Config{}, func(*Call) { calls++ }, nil)
	http1 := func(id ConnID) {
		tr.ConnOpen(&ConnOpen{Conn: id, Role: RoleClient})
		tr.Chunk(&Chunk{Conn: id, Dir: Egress, Data: []byte("GET / HTTP/1.1\r\n\r\n")})
	}
	http1(1)
	unaryOn(tr, 1, 10)
	http1(2)
	tr.ConnClose(&ConnClose{Conn: 2})
	c, s := newWire(false), newWire(false) // a chunk of a predating HTTP/2 connection
	tr.Chunk(&Chunk{Conn: 2, Dir: Egress, Data: c.pings(confirmFrames).headers(1, true, 0, req("/a.B/C")...).take()})
	tr.Chunk(&Chunk{Conn: 2, Dir: Ingress, Data: s.pings(confirmFrames).headers(1, true, 0, append(respHeaders, okTrailers...)...).take()})
	assert.Equal(t, 2, calls)
	assert.Zero(t, tr.Stats().ChunksNotHTTP2)
}

// hostile is a random workload of connections that open many streams with
// long header values, fill their HPACK tables and leave header blocks
// unfinished.
type hostile struct {
	t      *testing.T
	tr     *Tracker
	rng    *rand.Rand
	wires  map[ConnID]*[2]*wire
	off    map[ConnID]*[2]uint64
	sids   map[ConnID]uint32
	now    uint64
	budget int
}

func newHostile(t *testing.T, budget int) *hostile {
	h := &hostile{t: t, rng: rand.New(rand.NewPCG(1, 2)), budget: budget,
		wires: map[ConnID]*[2]*wire{}, off: map[ConnID]*[2]uint64{}, sids: map[ConnID]uint32{}}
	h.tr = NewTracker(Config{MemoryBudget: budget, MaxConns: 256}, func(*Call) {}, nil)
	return h
}

func (h *hostile) check() {
	h.t.Helper()
	if u := h.tr.MemoryUsed(); u > h.budget || u < 0 {
		h.t.Fatalf("memory used %d, budget %d", u, h.budget)
	}
}

func (h *hostile) send(id ConnID, d Dir, b []byte) {
	h.now += 1000
	h.tr.Chunk(&Chunk{Conn: id, Dir: d, Offset: h.off[id][d], Data: b, TimeNs: h.now})
	h.off[id][d] += uint64(len(b))
	h.check()
}

func (h *hostile) open(id ConnID) {
	h.now += 1000
	h.tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: h.now, Role: RoleClient})
	h.check()
	h.wires[id] = &[2]*wire{newWire(true), newWire(false)}
	h.off[id] = &[2]uint64{}
	h.sids[id] = 1
	h.send(id, Egress, h.wires[id][Egress].settings(settingHeaderTableSize, 1<<20).take())
	h.send(id, Ingress, h.wires[id][Ingress].settings().headerBlock(2, false, 0, floodBlock(64, 1<<20)).take())
}

// step does one random thing on connection id.
func (h *hostile) step(id ConnID) {
	w := h.wires[id]
	switch h.rng.IntN(4) {
	case 0: // a request that never ends, with long values
		sid := h.sids[id]
		h.sids[id] += 2
		long := strings.Repeat(strconv.Itoa(h.rng.IntN(10)), 200+h.rng.IntN(2000))
		h.send(id, Egress, w[Egress].headers(sid, false, 0, req("/"+long+"/M", "grpc-message", long)...).take())
	case 1: // tiny insertions into the client's table
		h.send(id, Ingress, w[Ingress].headerBlock(2, false, 0, floodBlock(1+h.rng.IntN(2000), 0)).take())
	case 2: // a header block left unfinished
		blk := w[Egress].block("x-pad", strings.Repeat("p", 4000+h.rng.IntN(8000)))
		w[Egress].frame(FrameHeaders, 0, h.sids[id], blk)
		h.sids[id] += 2
		h.send(id, Egress, w[Egress].take())
	case 3:
		if h.rng.IntN(8) == 0 {
			h.tr.ConnClose(&ConnClose{Conn: id, TimeNs: h.now})
			delete(h.wires, id)
		} else {
			h.tr.Expire(h.now)
		}
		h.check()
	}
}

// TestMemoryBudget: whatever hostile peers send, the accounted memory stays
// within the budget after every call, the real heap within a small multiple
// of it, and the accounting returns to zero once every connection is gone.
func TestMemoryBudget(t *testing.T) {
	const budget = 2 << 20
	before := heapNow()
	h := newHostile(t, budget)
	for i := 0; i < 6000; i++ {
		id := ConnID(1 + h.rng.IntN(128))
		if _, ok := h.wires[id]; !ok || h.rng.IntN(200) == 0 {
			h.open(id)
		}
		h.step(id)
	}
	with := heapNow()
	st := h.tr.Stats()
	used := h.tr.MemoryUsed()
	for id := range h.tr.conns {
		h.tr.ConnClose(&ConnClose{Conn: id})
	}
	h.tr.free = nil // the pool of stream structs (bounded, not accounted)
	without := heapNow()
	// the tracker's real heap: what closing every connection freed
	t.Logf("tracker heap %d KiB; accounted %d KiB; all grown by %d KiB; stats %+v",
		(int64(with)-int64(without))>>10, used>>10, (int64(with)-int64(before))>>10, st)
	assert.Less(t, int64(with)-int64(without), int64(2*budget))
	assert.Positive(t, st.ConnsEvictedBudget+st.ProbationEvictedBudget+st.StreamsEvictedBudget)
	assert.Equal(t, uint64(used), st.MemoryUsed)
	assert.Zero(t, h.tr.MemoryUsed())
	runtime.KeepAlive(h)
}

// TestMemoryBudgetStreams: one connection alone over the budget loses its
// least recently active streams first (emitted with FlagEvicted).
func TestMemoryBudgetStreams(t *testing.T) {
	const budget = 64 << 10
	v := newConv(t, Config{MemoryBudget: budget}, RoleClient)
	c := newWire(true)
	v.send(Egress, c.settings().take())
	long := strings.Repeat("y", 1000)
	for sid := uint32(1); sid < 400; sid += 2 {
		v.send(Egress, c.headers(sid, false, 0, req("/a.B/"+long)...).take())
		require.LessOrEqual(t, v.tr.MemoryUsed(), budget)
	}
	st := v.stats()
	assert.Positive(t, st.StreamsEvictedBudget)
	assert.Equal(t, uint64(1), st.ConnsLive, "the connection stays")
	require.Len(t, v.calls, int(st.StreamsEvictedBudget))
	assert.True(t, v.calls[0].Has(FlagEvicted))
	assert.Equal(t, uint32(1), v.calls[0].StreamID, "the least recently active first")
}

// TestMemoryAccounting: the accounted memory follows what is held, and is
// zero once the calls end.
func TestMemoryAccounting(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	base := v.tr.MemoryUsed()
	require.Equal(t, connMem, base)
	c := newWire(true)
	long := strings.Repeat("x", 5000)
	v.send(Egress, c.settings().headers(1, false, 0, req("/a.B/"+long)...).take())
	assert.GreaterOrEqual(t, v.tr.MemoryUsed(), base+streamMem+len(long))
	v.tr.ConnClose(&ConnClose{Conn: v.id})
	assert.Zero(t, v.tr.MemoryUsed())
	require.Len(t, v.calls, 1)
}

// TestAdoptedOrphansAccounted: responses seen before their requests
// (orphans whose response ended) are adopted when the requests come; the
// heaps they join grow, and the account follows them at every step.
func TestAdoptedOrphansAccounted(t *testing.T) {
	v := newConv(t, Config{}, RoleClient)
	cw, sw := newWire(true), newWire(false)
	v.send(Ingress, sw.settings().take())
	const n = 40
	for i := range n {
		sid := uint32(2*i + 1)
		v.send(Ingress, sw.headers(sid, false, 0, respHeaders...).headers(sid, true, 0, okTrailers...).take())
		checkTracker(t, v.tr, uint64(len(v.calls)))
	}
	v.send(Egress, cw.settings().take())
	for i := range n {
		sid := uint32(2*i + 1)
		v.send(Egress, cw.headers(sid, false, 0, req("/a.B/C")...).take())
		checkTracker(t, v.tr, uint64(len(v.calls)))
	}
	for i := range n {
		v.send(Egress, cw.data(uint32(2*i+1), 5, true).take())
		checkTracker(t, v.tr, uint64(len(v.calls)))
	}
	require.Len(t, v.calls, n)
}
