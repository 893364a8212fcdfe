// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzHPACKDecoder decodes arbitrary header blocks (each a 2-byte length
// and its bytes) with a small capped table: after every block the table
// holds at most its cap, its ring at most what the cap allows, and the
// block cost O(its fields + the entries it evicted).
func FuzzHPACKDecoder(f *testing.F) {
	f.Fuzz(func(t *testing.T, capKiB uint8, data []byte) {
		capSize := 256 + uint32(capKiB)*64
		const maxFields = 64
		d := newHPACKDecoder(1<<32-1, capSize, maxFields)
		for len(data) >= 2 {
			n := min(int(binary.LittleEndian.Uint16(data)), len(data)-2)
			blk := data[2 : 2+n]
			data = data[2+n:]
			before := d.n
			_, _ = d.decode(blk, func(string, string) {})
			checkHPACK(t, d, capSize)
			if d.ops > 2*maxFields+before {
				t.Fatalf("%d operations for a block of %d bytes (%d entries before)", d.ops, len(blk), before)
			}
		}
	})
}

func checkHPACK(t *testing.T, d *hpackDecoder, capSize uint32) {
	t.Helper()
	if d.size > d.maxSize || d.maxSize > capSize {
		t.Fatalf("table of %d bytes, size %d, cap %d", d.size, d.maxSize, capSize)
	}
	if d.n > int(capSize/32) || len(d.ring) > max(16, 2*int(capSize/32)) {
		t.Fatalf("%d entries in a ring of %d, cap %d", d.n, len(d.ring), capSize)
	}
	if d.strBytes > int(d.size) {
		t.Fatalf("%d bytes of strings in a table of %d", d.strBytes, d.size)
	}
}

// fuzzBudget bounds FuzzTrackerBudget's tracker.
var fuzzBudget = Config{MaxConns: 4, MemoryBudget: 48 << 10, MaxHeaderBlock: 4096, MaxHeaderTableSize: 4096, MaxStreamsPerConn: 16}

// FuzzTrackerBudget runs random sequences of ConnOpen, Chunk, ConnClose
// and Expire (see trackerOps) on a tracker of a small budget: after every
// call the accounted memory is within the budget and equals what the
// connections hold, at most MaxConns are tracked, and the stats agree.
func FuzzTrackerBudget(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var emitted uint64
		tr := NewTracker(fuzzBudget, func(c *Call) {
			emitted++
			if c.EndNs < c.StartNs {
				t.Fatalf("ends before it starts: %+v", c)
			}
		}, nil)
		trackerOps(tr, data, func() { checkTracker(t, tr, emitted) })
		for id := range tr.conns {
			tr.ConnClose(&ConnClose{Conn: id})
		}
		checkTracker(t, tr, emitted)
		if tr.MemoryUsed() != 0 {
			t.Fatalf("%d bytes accounted with no connection", tr.MemoryUsed())
		}
	})
}

// trackerOps decodes data into calls on tr, calling check after each. A
// byte k: connection 1+(k>>2)&7, and by k&3: ConnOpen (role (k>>5)%3),
// Chunk (then a byte: direction bit 0, a hole of bits 2-7 when bit 1;
// then a 2-byte length, then the bytes), ConnClose, Expire (k>>5 minutes
// later).
func trackerOps(tr *Tracker, data []byte, check func()) {
	offs := map[ConnID]*[2]uint64{}
	var now uint64
	for len(data) > 0 {
		k := data[0]
		data = data[1:]
		id := ConnID(1 + (k>>2)&7)
		now += uint64(time.Millisecond)
		if offs[id] == nil {
			offs[id] = &[2]uint64{}
		}
		switch k & 3 {
		case 0:
			*offs[id] = [2]uint64{}
			tr.ConnOpen(&ConnOpen{Conn: id, TimeNs: now, Role: Role((k >> 5) % 3)})
		case 1:
			if len(data) < 3 {
				return
			}
			fl, n := data[0], min(int(binary.LittleEndian.Uint16(data[1:])), len(data)-3)
			d := Dir(fl & 1)
			if fl&2 != 0 {
				offs[id][d] += uint64(fl >> 2)
			}
			tr.Chunk(&Chunk{Conn: id, Dir: d, Offset: offs[id][d], Data: data[3 : 3+n], TimeNs: now})
			offs[id][d] += uint64(n)
			data = data[3+n:]
		case 2:
			*offs[id] = [2]uint64{}
			tr.ConnClose(&ConnClose{Conn: id, TimeNs: now})
		case 3:
			now += uint64(k>>5) * uint64(time.Minute)
			tr.Expire(now)
		}
		check()
	}
}

// checkTracker checks the bounds and the account after a call: the
// accounted memory is within the budget and equals what the connections
// hold, their stream maps by their peak (which stays within four times
// what they hold: the map's real size) and their heaps by capacity; the
// indexes (lists, heaps) hold exactly the streams.
func checkTracker(t *testing.T, tr *Tracker, emitted uint64) {
	t.Helper()
	st := tr.Stats()
	if tr.MemoryUsed() > tr.cfg.MemoryBudget || tr.est.n > tr.cfg.MaxConns || tr.prob.n > tr.cfg.MaxProbationConns ||
		tr.est.n+tr.prob.n != len(tr.conns) {
		t.Fatalf("%d bytes (budget %d), %d connections (%d, %d on probation)", tr.MemoryUsed(), tr.cfg.MemoryBudget, len(tr.conns), tr.est.n, tr.prob.n)
	}
	sum, streams := 0, 0
	for _, c := range tr.conns {
		want := connMem + c.dirs[0].mem() + c.dirs[1].mem() + c.peak*mapSlotMem
		for _, h := range c.heaps {
			want += 8 * cap(h.s)
			if cap(h.s) > shrinkMin && len(h.s) < cap(h.s)/4 {
				t.Fatalf("connection %d: a heap of %d in %d", c.id, len(h.s), cap(h.s))
			}
		}
		for _, s := range c.streams {
			want += streamMem + callMem(&s.call)
			if s.c != c || c.streams[s.sid] != s {
				t.Fatalf("connection %d: stream %d misplaced", c.id, s.sid)
			}
		}
		if len(c.streams) > c.peak || (c.peak > shrinkMin && len(c.streams) < c.peak/4) {
			t.Fatalf("connection %d: %d streams, map peak %d", c.id, len(c.streams), c.peak)
		}
		n := 0
		for s := c.slist.head; s != nil; s = s.link[0][1] {
			n++
		}
		orph := 0
		for _, s := range c.streams {
			if s.orphan {
				orph++
			}
		}
		if n != len(c.streams) || c.heaps[heapOrphans].len() != orph || c.heaps[heapLive].len() != len(c.streams)-orph {
			t.Fatalf("connection %d: %d streams (%d orphans), %d listed, heaps %d %d", c.id, len(c.streams), orph, n, c.heaps[heapLive].len(), c.heaps[heapOrphans].len())
		}
		streams += len(c.streams)
		for i := range c.dirs {
			if len(c.dirs[i].pending) > confirmFrames {
				t.Fatalf("connection %d: %d frames held", c.id, len(c.dirs[i].pending))
			}
		}
		if c.mem != want || c.removed || len(c.streams) > tr.cfg.MaxStreamsPerConn {
			t.Fatalf("connection %d: accounted %d, holds %d; %d streams", c.id, c.mem, want, len(c.streams))
		}
		sum += c.mem
	}
	if sum != tr.MemoryUsed() || st.MemoryUsed != uint64(sum) || st.ConnsLive != uint64(len(tr.conns)) || st.CallsEmitted != emitted {
		t.Fatalf("account %d, connections hold %d; stats %+v; %d emitted", tr.MemoryUsed(), sum, st, emitted)
	}
	n := 0
	for s := tr.slist.head; s != nil; s = s.link[1][1] {
		n++
	}
	if n != streams {
		t.Fatalf("%d streams in the Tracker's list, %d tracked", n, streams)
	}
}
