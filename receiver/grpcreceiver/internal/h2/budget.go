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
	streamMem = int(unsafe.Sizeof(stream{})) + 32
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
	return len(c.Method) + len(c.Path) + len(c.MethodPlaceholder) + len(c.Authority) + len(c.ContentType) + len(c.GRPCMessage)
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
// memory fits the budget: whole connections other than cur, least recently
// active first, then cur's streams, least recently active first, then cur.
// It runs at the end of every call that may grow the memory, never while a
// connection is being parsed.
func (t *Tracker) enforce(cur *conn) {
	for t.used > t.cfg.MemoryBudget {
		v := t.lruTail
		if v == nil {
			return
		}
		if v != cur || len(cur.streams) == 0 {
			t.stats.ConnsEvictedBudget++
			t.closeConn(v, 0, FlagEvicted)
			continue
		}
		sid, s := oldestStream(cur)
		t.stats.StreamsEvictedBudget++
		t.finish(cur, sid, s, s.last, FlagEvicted)
	}
}

// oldestStream is c's least recently active stream (c has one).
func oldestStream(c *conn) (uint32, *stream) {
	var sid uint32
	var old *stream
	for id, s := range c.streams {
		if old == nil || s.last < old.last || (s.last == old.last && id < sid) {
			sid, old = id, s
		}
	}
	return sid, old
}

// touch makes c the most recently active connection.
func (t *Tracker) touch(c *conn) {
	if t.lruHead == c {
		return
	}
	t.lruUnlink(c)
	c.next = t.lruHead
	if t.lruHead != nil {
		t.lruHead.prev = c
	}
	t.lruHead = c
	if t.lruTail == nil {
		t.lruTail = c
	}
}

// lruUnlink takes c out of the LRU list (if it is in it).
func (t *Tracker) lruUnlink(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if t.lruHead == c {
		t.lruHead = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else if t.lruTail == c {
		t.lruTail = c.prev
	}
	c.prev, c.next = nil, nil
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
