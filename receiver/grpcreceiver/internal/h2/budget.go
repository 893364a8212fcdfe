// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import "unsafe"

// Accounted memory (Config.MemoryBudget): fixed costs of the structures
// and the bytes they hold, kept exactly at every allocation and release.
const (
	// connMem is a connection: its struct, its streams map's header and
	// its entries in the Tracker's maps.
	connMem = int(unsafe.Sizeof(conn{})) + 128
	// streamMem is a stream: its struct and its entry in its map; the
	// strings of its Call are added.
	streamMem = int(unsafe.Sizeof(stream{}))
	// mapSlotMem is what a stream map takes per entry of its peak (Go's
	// maps: 8-slot groups of 16-byte slots and a control word, at most 7/8
	// full, grown by doubling; they never shrink).
	mapSlotMem = 40
	// shrinkMin: a stream map or heap is made again, smaller, once it holds
	// less than a quarter of its peak, if that peak was above this.
	shrinkMin = 64
	// notHTTP2Remembered is how many connections found not HTTP/2 are
	// remembered (about 200 KiB at most, not counted in the budget).
	notHTTP2Remembered = 4096
)

// mem is the memory of a direction's buffers and HPACK table.
func (d *direction) mem() int {
	n := cap(d.block) + cap(d.ctl) + d.hp.mem() + cap(d.pending)*pendingFrameMem
	for i := range d.pending {
		n += d.pending[i].block.fields.mem()
	}
	return n
}

// mem is the memory of the strings f holds.
func (f *headerFields) mem() int {
	return len(f.method) + len(f.path) + len(f.authority) + len(f.contentType) + len(f.status) +
		len(f.grpcStatus) + len(f.grpcMessage) + len(f.timeout) + len(f.traceparent)
}

// callMem is the memory of the strings a Call holds (Service and RPC are
// parts of Path).
func callMem(c *Call) int {
	return len(c.Method) + len(c.Path) + len(c.MethodPlaceholder) + len(c.Authority) + len(c.ContentType) + len(c.GRPCMessage) +
		len(c.UserAgent) + len(c.Version)
}

// charge adds delta bytes to c's accounted memory (and the total); a
// connection no longer tracked is not counted.
func (t *Tracker) charge(c *conn, delta int) {
	if c.removed {
		return
	}
	c.mem += delta
	t.used += delta
}

// chargeDirs brings the accounted memory of c's directions up to date.
func (t *Tracker) chargeDirs(c *conn) {
	for i := range c.dirs {
		n := c.dirs[i].mem()
		t.charge(c, n-c.dirMem[i])
		c.dirMem[i] = n
	}
}

// indexMem is the memory of c's stream map (by its peak) and heaps (by
// their capacity).
func (c *conn) indexMem() int {
	n := c.peak * mapSlotMem
	for i := range c.heaps {
		n += cap(c.heaps[i].s) * 8
	}
	return n
}

// chargeIndex brings the accounted memory of c's stream map and heaps up
// to date.
func (t *Tracker) chargeIndex(c *conn) {
	n := c.indexMem()
	t.charge(c, n-c.idxMem)
	c.idxMem = n
}

// chargeStream brings the accounted memory of s up to date.
func (t *Tracker) chargeStream(c *conn, s *stream) {
	n := streamMem + callMem(&s.call)
	t.charge(c, n-s.mem)
	s.mem = n
}

// MemoryUsed is the memory the Tracker accounts for (connections,
// streams, HPACK tables, buffers): at most Config.MemoryBudget between
// calls.
func (t *Tracker) MemoryUsed() int { return t.used }

// enforce evicts the least recently active state until the accounted
// memory fits the budget: whole connections other than cur, those on
// probation first (ProbationEvictedBudget), then the others
// (ConnsEvictedBudget), least recently active first, then cur's streams,
// least recently active first (StreamsEvictedBudget), then cur. Each step
// is O(1) but for what it ends. It runs at the end of every call that may
// grow the memory, never while a connection is being parsed.
func (t *Tracker) enforce(cur *conn) {
	for t.used > t.cfg.MemoryBudget {
		if v := t.prob.victim(cur); v != nil {
			t.stats.ProbationEvictedBudget++
			t.closeConn(v, 0, FlagEvicted)
			continue
		}
		if v := t.est.victim(cur); v != nil {
			t.stats.ConnsEvictedBudget++
			t.closeConn(v, 0, FlagEvicted)
			continue
		}
		if cur.removed {
			return
		}
		if s := cur.slist.tail; s != nil {
			t.stats.StreamsEvictedBudget++
			t.finish(cur, s.sid, s, s.last, FlagEvicted)
			continue
		}
		if cur.promoted {
			t.stats.ConnsEvictedBudget++
		} else {
			t.stats.ProbationEvictedBudget++
		}
		t.closeConn(cur, 0, FlagEvicted)
	}
}

// touch makes c the most recently active connection of its pool.
func (t *Tracker) touch(c *conn) {
	if c.list != nil {
		c.list.touch(c)
	}
}

// idSet is a bounded set of connection ids; the oldest added goes first.
type idSet struct {
	seq  map[ConnID]uint64
	ring []idSeq
	pos  int
	n    uint64
}

type idSeq struct {
	id  ConnID
	seq uint64
}

func (s *idSet) has(id ConnID) bool {
	_, ok := s.seq[id]
	return ok
}

func (s *idSet) add(id ConnID) {
	if s.seq == nil {
		s.seq = make(map[ConnID]uint64)
		s.ring = make([]idSeq, notHTTP2Remembered)
	}
	if old := s.ring[s.pos]; old.seq != 0 && s.seq[old.id] == old.seq {
		delete(s.seq, old.id)
	}
	s.n++
	s.ring[s.pos] = idSeq{id, s.n}
	s.seq[id] = s.n
	s.pos = (s.pos + 1) % len(s.ring)
}

func (s *idSet) remove(id ConnID) { delete(s.seq, id) }
