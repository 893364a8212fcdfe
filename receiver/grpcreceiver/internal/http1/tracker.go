// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"container/list"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxConns       = 4096
	DefaultMaxPipelined   = 64
	DefaultMaxHeaderBytes = 16 << 10
	DefaultMaxFieldBytes  = 1024
	DefaultMemoryBudget   = 32 << 20
	DefaultIdleTimeout    = 5 * time.Minute
	// minProbationConns is the least MaxProbationConns defaults to.
	minProbationConns = 16
	// maxMethodLen bounds a method token: a longer one is not HTTP.
	maxMethodLen = 24
	// maxChunkLine bounds a chunk-size line (size and extensions).
	maxChunkLine = 1024
)

// Config bounds a Tracker. Zero values take the defaults.
type Config struct {
	// MaxConns bounds the connections off probation tracked at once: one
	// more evicts the least recently active (ConnsEvictedLimit).
	// Default 4096.
	MaxConns int
	// MaxProbationConns bounds, apart, the connections on probation: those
	// that have not carried a complete request head yet. One more evicts
	// the least recently active of them (ProbationEvictedLimit), never a
	// connection that carried requests. Default max(MaxConns/4, 16).
	MaxProbationConns int
	// MaxPipelined bounds the requests queued unanswered per connection: a
	// request beyond it is counted (RequestsOverLimit), not tracked, and
	// its response skipped. Default 64.
	MaxPipelined int
	// MaxHeaderBytes bounds a message head (start line and fields, or a
	// chunked body's trailers): a longer one loses the direction's sync
	// (SyncLost[LostHeadTooLarge]). The capture's first-bytes cap (16 KiB)
	// bounds what can be seen anyway. Default 16 KiB.
	MaxHeaderBytes int
	// MaxFieldBytes bounds each string kept of a request (request-target,
	// Host, User-Agent, Content-Type): longer ones are cut (FieldsCut).
	// Default 1 KiB.
	MaxFieldBytes int
	// MemoryBudget bounds the memory the Tracker accounts for (MemoryUsed):
	// over it the least recently active connections are evicted, those on
	// probation first. Default 32 MiB.
	MemoryBudget int
	// IdleTimeout: Expire ends connections with no chunk for this long.
	// Default 5 minutes.
	IdleTimeout time.Duration
}

func (c *Config) setDefaults() {
	orDefault(&c.MaxConns, DefaultMaxConns)
	orDefault(&c.MaxProbationConns, max(c.MaxConns/4, minProbationConns))
	orDefault(&c.MaxPipelined, DefaultMaxPipelined)
	orDefault(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	orDefault(&c.MaxFieldBytes, DefaultMaxFieldBytes)
	orDefault(&c.MemoryBudget, DefaultMemoryBudget)
	orDefault(&c.IdleTimeout, DefaultIdleTimeout)
}

// orDefault sets *v to def when it is not positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// exchange is a request tracked on its connection, and its response.
type exchange struct {
	call h2.Call
	// head: the request is HEAD (its response has no body); connect: it
	// is CONNECT (a 2xx response makes the connection a tunnel).
	head, connect bool
	// skipAfter counts the requests after this one not tracked
	// (MaxPipelined): their responses are skipped.
	skipAfter uint32
	// closeDelimited: its response's body ends with the connection.
	closeDelimited bool
	reqLost        uint32 // conn.reqLost when it was queued
	mem            int    // accounted memory (its last charge)
}

// conn is a tracked connection.
type conn struct {
	id            h2.ConnID
	role          h2.Role
	local, remote h2.Endpoint
	netns         uint32
	isn           h2.SockISN
	tls           bool // a TLS session (h2.ConnOpen.TLS): url.scheme https
	openProc      h2.Proc
	reqDir        int8 // the Dir that carries requests; -1 unknown
	dirs          [2]direction
	queue         []*exchange // requests unanswered, oldest first
	// respSkip counts the responses to skip before the next that pairs
	// (requests not tracked, MaxPipelined).
	respSkip uint32
	// reqLost counts the losses of sync of the request direction.
	reqLost  uint32
	tunnel   bool // HTTP parsing ended (101, CONNECT 2xx)
	promoted bool // off probation: it carried a complete request head
	// heavy: off probation, it holds more than its fair share of the
	// budget (Tracker.fair): evicted for memory before the others.
	heavy   bool
	removed bool
	last    uint64 // boot ns of the latest chunk
	mem     int    // accounted memory (budget.go)
	// bufMem: of it, the directions' buffers and the queue's slots (their
	// last charge).
	bufMem int
	// elem is its place in its pool (Tracker.est, heavy or prob): most
	// recently active first.
	elem *list.Element
}

// Tracker turns the captured bytes of HTTP/1.x connections into calls.
// Its methods must be called from one goroutine at a time, in capture
// order.
type Tracker struct {
	cfg   Config
	emit  func(*h2.Call)
	clock h2.Clock
	conns map[h2.ConnID]*conn
	// est, heavy: off probation, holding at most or more than fair bytes;
	// prob: on probation.
	est, heavy, prob pool
	// fair is a connection's share of the budget: MemoryBudget over the
	// connections there may be. The connections within it together fit
	// the budget, so that evicting the heavy ones (and those on
	// probation) always makes room.
	fair  int
	stats Stats
	used  int
}

// NewTracker returns a Tracker that hands each completed call to emit. The
// *h2.Call is valid during the call to emit only. clock converts boot-clock
// times (nil: h2.OffsetClock(0)).
func NewTracker(cfg Config, emit func(*h2.Call), clock h2.Clock) *Tracker {
	cfg.setDefaults()
	if clock == nil {
		clock = h2.OffsetClock(0)
	}
	t := &Tracker{cfg: cfg, emit: emit, clock: clock, conns: make(map[h2.ConnID]*conn),
		fair: cfg.MemoryBudget / (cfg.MaxConns + cfg.MaxProbationConns)}
	t.est.Init()
	t.heavy.Init()
	t.prob.Init()
	return t
}

// Stats returns the counters.
func (t *Tracker) Stats() Stats {
	s := t.stats
	s.ConnsLive = uint64(len(t.conns))
	s.MemoryUsed = uint64(t.used)
	return s
}

// ConnOpen starts tracking a connection. A live connection of the same id
// is closed first (its close was lost).
func (t *Tracker) ConnOpen(o *h2.ConnOpen) {
	if old := t.conns[o.Conn]; old != nil {
		t.closeConn(old, o.TimeNs, h2.FlagConnClosed)
	}
	c := t.newConn(o.Conn, o.TimeNs)
	defer t.enforce(c)
	c.role, c.local, c.remote, c.openProc, c.netns, c.isn, c.tls = o.Role, o.Local, o.Remote, o.Proc, o.NetNS, o.ISN, o.TLS
	if o.Role == h2.RoleUnknown {
		return
	}
	c.reqDir = int8(h2.Egress)
	if o.Role == h2.RoleServer {
		c.reqDir = int8(h2.Ingress)
	}
	for i := range c.dirs {
		c.dirs[i].startAt(0)
	}
	c.dirs[c.reqDir].isReq = true
}

// newConn tracks a connection, on probation; at MaxProbationConns the
// least recently active one on probation is evicted first.
func (t *Tracker) newConn(id h2.ConnID, now uint64) *conn {
	t.makeRoom(&t.prob, t.cfg.MaxProbationConns, &t.stats.ProbationEvictedLimit)
	c := &conn{id: id, reqDir: -1, last: now}
	t.conns[id] = c
	t.prob.add(c)
	t.charge(c, connMem)
	t.stats.ConnsTracked++
	return c
}

// promote takes c off probation: at MaxConns the least recently active
// connection off probation is evicted first (a heavy one when there is).
func (t *Tracker) promote(c *conn) {
	if c.promoted || c.removed {
		return
	}
	t.makeRoom(&t.est, t.cfg.MaxConns, &t.stats.ConnsEvictedLimit)
	t.prob.remove(c)
	c.promoted = true
	t.est.add(c)
	t.weigh(c)
	t.stats.ConnsPromoted++
}

// makeRoom evicts the least recently active connections of p (of
// t.heavy first when p is t.est: both hold the connections off
// probation) while they are limit or more, counting them in evicted.
func (t *Tracker) makeRoom(p *pool, limit int, evicted *uint64) {
	for {
		n, v := p.Len(), p.oldest()
		if p == &t.est {
			n += t.heavy.Len()
			if h := t.heavy.oldest(); h != nil {
				v = h
			}
		}
		if n < limit {
			return
		}
		*evicted++
		t.closeConn(v, 0, h2.FlagEvicted)
	}
}

// Chunk feeds captured bytes. A chunk of an unknown connection starts
// tracking it as RoleUnknown (its ConnOpen was lost or predates capture).
func (t *Tracker) Chunk(ch *h2.Chunk) {
	if ch.Dir > h2.Ingress {
		t.stats.ChunksIgnored++
		return
	}
	c := t.conns[ch.Conn]
	if c == nil {
		c = t.newConn(ch.Conn, ch.TimeNs)
		t.stats.ConnsWithoutOpen++
	}
	defer t.enforce(c)
	t.pool(c).MoveToFront(c.elem)
	c.last = max(c.last, ch.TimeNs)
	if c.tunnel {
		t.stats.ChunksIgnored++
		t.stats.BytesTunnelled += uint64(len(ch.Data))
		return
	}
	t.feed(c, ch)
	t.chargeConn(c)
}

// ConnClose ends a connection: a close-delimited response ends there, the
// requests unanswered are emitted with FlagConnClosed.
func (t *Tracker) ConnClose(cl *h2.ConnClose) {
	if c := t.conns[cl.Conn]; c != nil {
		t.closeConn(c, cl.TimeNs, h2.FlagConnClosed)
	}
}

// Lost counts lost capture records: a lost chunk shows as a hole at the
// next chunk of its direction.
func (t *Tracker) Lost(l *h2.Lost) { t.stats.Lost += l.Count }

// Expire ends the connections idle since nowNs-IdleTimeout; their
// unanswered requests are emitted with FlagEvicted, ended at the last
// activity. It walks the connections from the least recently active and
// stops at the first one not idle.
func (t *Tracker) Expire(nowNs uint64) {
	idle := uint64(t.cfg.IdleTimeout)
	for _, p := range []*pool{&t.prob, &t.heavy, &t.est} {
		for c := p.oldest(); c != nil && nowNs > c.last && nowNs-c.last >= idle; c = p.oldest() {
			t.stats.ConnsEvicted++
			t.closeConn(c, 0, h2.FlagEvicted)
		}
	}
}

// closeConn ends c at endNs (0: its last activity). A close-delimited
// response in progress ends normally at FlagConnClosed.
func (t *Tracker) closeConn(c *conn, endNs uint64, f h2.CallFlags) {
	if endNs == 0 {
		endNs = c.last
	}
	if f == h2.FlagConnClosed && c.reqDir >= 0 && len(c.queue) > 0 && c.queue[0].closeDelimited {
		t.finish(c, c.dirs[1-c.reqDir].lastNs, 0)
	}
	for len(c.queue) > 0 {
		if f == h2.FlagConnClosed {
			t.stats.CallsConnClosed++
		} else {
			t.stats.CallsEvicted++
		}
		t.finish(c, endNs, f)
	}
	if t.conns[c.id] == c {
		delete(t.conns, c.id)
	}
	t.pool(c).remove(c)
	t.used -= c.mem
	c.mem, c.removed = 0, true
}

// finish emits the oldest queued request's call, ended at endNs with
// flags f, and dequeues it.
func (t *Tracker) finish(c *conn, endNs uint64, f h2.CallFlags) {
	e := c.queue[0]
	n := copy(c.queue, c.queue[1:])
	c.queue[n] = nil
	c.queue = c.queue[:n]
	if n == 0 && cap(c.queue) > 8 {
		c.queue = nil
	}
	c.respSkip += e.skipAfter
	for i := range c.dirs {
		if c.dirs[i].msg == e {
			c.dirs[i].msg = nil
		}
	}
	t.charge(c, -e.mem)
	call := &e.call
	call.Flags |= f
	call.EndNs = max(endNs, call.StartNs)
	call.Start, call.End = t.clock(call.StartNs), t.clock(call.EndNs)
	if call.Side == h2.SideClient {
		call.ClientConn, call.ClientConnKnown = c.id, true
	}
	if call.Flags&h2.FlagGap != 0 {
		t.stats.CallsGap++
	}
	t.stats.CallsEmitted++
	t.emit(call)
}
