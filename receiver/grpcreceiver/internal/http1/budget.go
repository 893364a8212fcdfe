// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"container/list"
	"unsafe"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Accounted memory (Config.MemoryBudget): fixed costs of the structures
// and the bytes they hold, kept exactly at every allocation and release.
const (
	// connMem is a connection: its struct, its element of its pool and
	// its entry in the Tracker's map.
	connMem = int(unsafe.Sizeof(conn{})) + int(unsafe.Sizeof(list.Element{})) + 48
	// exchMem is a request tracked (queued or its head being parsed); the
	// strings of its Call are added.
	exchMem = int(unsafe.Sizeof(exchange{}))
	// ptrMem is a slot of a connection's queue.
	ptrMem = int(unsafe.Sizeof((*exchange)(nil)))
)

// strMem is the memory of the strings a Call holds (Version is one of two
// constants).
func strMem(c *h2.Call) int {
	return len(c.Method) + len(c.Path) + len(c.Authority) + len(c.UserAgent) + len(c.ContentType)
}

// mem is the memory of d's line buffer and the request whose head it is
// parsing.
func (d *direction) mem() int {
	n := cap(d.line)
	if d.pend != nil {
		n += exchMem + strMem(&d.pend.call)
	}
	return n
}

// charge adds delta bytes to c's accounted memory (and the total); a
// connection no longer tracked is not counted.
func (t *Tracker) charge(c *conn, delta int) {
	if c.removed {
		return
	}
	c.mem += delta
	t.used += delta
	t.weigh(c)
}

// weigh moves c, off probation, to t.heavy when it holds more than its
// fair share, back to t.est when it no longer does (most recently active
// there: it has just been active).
func (t *Tracker) weigh(c *conn) {
	if !c.promoted || c.removed || c.heavy == (c.mem > t.fair) {
		return
	}
	t.pool(c).remove(c)
	c.heavy = !c.heavy
	t.pool(c).add(c)
}

// chargeConn brings the accounted memory of c's buffers (its directions'
// and its queue's slots) up to date; the queued requests are charged when
// queued.
func (t *Tracker) chargeConn(c *conn) {
	n := c.dirs[0].mem() + c.dirs[1].mem() + cap(c.queue)*ptrMem
	t.charge(c, n-c.bufMem)
	c.bufMem = n
}

// MemoryUsed is the memory the Tracker accounts for: at most
// Config.MemoryBudget between calls.
func (t *Tracker) MemoryUsed() int { return t.used }

// enforce evicts connections until the accounted memory fits the budget:
// those on probation first but cur (ProbationEvictedBudget), then those
// over their fair share (cur among them last), then the others
// (ConnsEvictedBudget), then cur, each pool's least recently active
// first. A connection within its share is never evicted for the memory
// that heavy ones hold. Each step is O(1) but for what it ends.
func (t *Tracker) enforce(cur *conn) {
	for t.used > t.cfg.MemoryBudget {
		v := t.prob.victim(cur)
		if v == nil {
			v = t.heavy.victim(cur)
		}
		if v == nil && cur.heavy && !cur.removed {
			v = cur
		}
		if v == nil {
			v = t.est.victim(cur)
		}
		if v == nil {
			if cur.removed {
				return
			}
			v = cur
		}
		if v.promoted {
			t.stats.ConnsEvictedBudget++
		} else {
			t.stats.ProbationEvictedBudget++
		}
		t.closeConn(v, 0, h2.FlagEvicted)
	}
}

// pool is a list of connections (*conn), most recently active first.
type pool struct{ list.List }

// pool is the pool c is in.
func (t *Tracker) pool(c *conn) *pool {
	switch {
	case !c.promoted:
		return &t.prob
	case c.heavy:
		return &t.heavy
	}
	return &t.est
}

func (p *pool) add(c *conn) { c.elem = p.PushFront(c) }

func (p *pool) remove(c *conn) {
	if c.elem != nil {
		p.Remove(c.elem)
		c.elem = nil
	}
}

// oldest is the least recently active connection of p (nil: none).
func (p *pool) oldest() *conn {
	if e := p.Back(); e != nil {
		return e.Value.(*conn)
	}
	return nil
}

// victim is the least recently active connection of p but cur.
func (p *pool) victim(cur *conn) *conn {
	e := p.Back()
	if e != nil && e.Value.(*conn) == cur {
		e = e.Prev()
	}
	if e == nil {
		return nil
	}
	return e.Value.(*conn)
}
