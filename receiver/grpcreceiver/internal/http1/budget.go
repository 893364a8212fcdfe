// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"unsafe"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Accounted memory (Config.MemoryBudget): fixed costs of the structures
// and the bytes they hold, kept exactly at every allocation and release.
const (
	// connMem is a connection: its struct and its entry in the Tracker's
	// map.
	connMem = int(unsafe.Sizeof(conn{})) + 48
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
}

// chargeConn brings the accounted memory of c's directions and queue
// slots up to date (the queued requests are charged when queued).
func (t *Tracker) chargeConn(c *conn) {
	for i := range c.dirs {
		n := c.dirs[i].mem()
		t.charge(c, n-c.dirMem[i])
		c.dirMem[i] = n
	}
	n := cap(c.queue) * ptrMem
	t.charge(c, n-c.qMem)
	c.qMem = n
}

// MemoryUsed is the memory the Tracker accounts for: at most
// Config.MemoryBudget between calls.
func (t *Tracker) MemoryUsed() int { return t.used }

// enforce evicts the least recently active connections other than cur
// until the accounted memory fits the budget, those on probation first
// (ProbationEvictedBudget), then the others (ConnsEvictedBudget), then
// cur. Each step is O(1) but for what it ends.
func (t *Tracker) enforce(cur *conn) {
	for t.used > t.cfg.MemoryBudget {
		v := t.prob.victim(cur)
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

// connList is an intrusive list of connections, most recently active
// first.
type connList struct {
	head, tail *conn
	n          int
}

// touch makes c the head of l (adding it when in no list).
func (l *connList) touch(c *conn) {
	if l.head == c {
		return
	}
	if c.list == l {
		l.unlink(c)
	}
	c.list, c.prev, c.next = l, nil, l.head
	if l.head != nil {
		l.head.prev = c
	} else {
		l.tail = c
	}
	l.head = c
	l.n++
}

// unlink takes c out of l.
func (l *connList) unlink(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.list, c.prev, c.next = nil, nil, nil
	l.n--
}

// victim is the least recently active connection of l but cur.
func (l *connList) victim(cur *conn) *conn {
	if v := l.tail; v != cur {
		return v
	}
	return cur.prev
}
