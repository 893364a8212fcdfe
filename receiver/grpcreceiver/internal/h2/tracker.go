// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxConns           = 4096
	DefaultMaxStreamsPerConn  = 1024
	DefaultMaxHeaderBlock     = 64 << 10
	DefaultIdleTimeout        = 5 * time.Minute
	DefaultMaxFrameSize       = 1<<24 - 1
	DefaultResyncMaxFrameSize = 1 << 20
	DefaultMaxHeaderTableSize = 64 << 10
	DefaultMaxFieldsPerBlock  = 256
	DefaultMemoryBudget       = 64 << 20
	// minProbationConns is the least MaxProbationConns defaults to.
	minProbationConns = 16
	// maxFailedSyncs: a connection not seen from its start whose chunks
	// never begin a plausible frame chain is taken as not HTTP/2 after
	// this many.
	maxFailedSyncs = 16
)

// Config bounds a Tracker. Zero values take the defaults.
type Config struct {
	// MaxConns bounds the connections tracked at once: a new one evicts the
	// least recently active (ConnsEvictedLimit).
	MaxConns int
	// MaxProbationConns bounds, apart, the connections on probation: those
	// that have not carried a header block of a call yet (a client preface
	// alone, or its first bytes, is cheap to send). A new connection is on
	// probation; one more evicts the least recently active of them
	// (ProbationEvictedLimit), never a connection that carried calls, so
	// that a flood of connections that only look like HTTP/2 cannot take
	// the HPACK state of long-lived channels. A connection leaves probation
	// (ConnsPromoted) with its first header block of a call, into the
	// MaxConns. Default: max(MaxConns/4, 16).
	MaxProbationConns int
	// MaxStreamsPerConn bounds the open streams per connection: the request
	// HEADERS of one more is counted (StreamsOverLimit) and not tracked.
	// The streams held are the peer's own, ended by their response, a
	// reset, the memory budget or StreamIdleTimeout; refusing the newest
	// keeps the calls already followed whole.
	MaxStreamsPerConn int
	// MemoryBudget bounds the memory the Tracker accounts for
	// (MemoryUsed: connections, streams and the strings of their calls,
	// HPACK tables, header-block and control buffers). Over it, the least
	// recently active connections are evicted (ConnsEvictedBudget), then
	// the streams of the active one (StreamsEvictedBudget).
	MemoryBudget int
	// MaxHeaderBlock bounds a header block (HEADERS + CONTINUATION payload
	// bytes). A larger one is counted, not decoded, and empties the HPACK
	// table of its direction. The kernel side should capture header-block
	// payloads up to at least this size.
	MaxHeaderBlock int
	// IdleTimeout: Expire ends connections with no chunk for this long, and
	// StreamIdleTimeout streams with no frame for that long.
	IdleTimeout       time.Duration
	StreamIdleTimeout time.Duration // default IdleTimeout
	// MaxFrameSize: a longer frame header in order means the framing is
	// lost. ResyncMaxFrameSize is the tighter bound of PlausibleStart.
	MaxFrameSize       uint32
	ResyncMaxFrameSize uint32
	// MaxHeaderTableSize caps the HPACK table kept per direction, whatever
	// the peer announces (SETTINGS_HEADER_TABLE_SIZE) and uses: beyond it
	// the newest entries are kept and a reference to an older one is an
	// unknown field (Stats.HPACKTableCapped counts the size updates above
	// it). It is also the table size accepted when the table is not known
	// from the connection's start.
	MaxHeaderTableSize uint32
	// MaxFieldsPerBlock bounds the fields decoded per header block; the
	// rest of a longer block is not decoded and its table becomes unknown
	// (Stats.HeaderBlocksTooManyFields).
	MaxFieldsPerBlock int
}

func (c *Config) setDefaults() {
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxProbationConns <= 0 {
		c.MaxProbationConns = max(c.MaxConns/4, minProbationConns)
	}
	if c.MaxStreamsPerConn <= 0 {
		c.MaxStreamsPerConn = DefaultMaxStreamsPerConn
	}
	if c.MaxHeaderBlock <= 0 {
		c.MaxHeaderBlock = DefaultMaxHeaderBlock
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.StreamIdleTimeout <= 0 {
		c.StreamIdleTimeout = c.IdleTimeout
	}
	if c.MaxFrameSize == 0 || c.MaxFrameSize > DefaultMaxFrameSize {
		c.MaxFrameSize = DefaultMaxFrameSize
	}
	if c.ResyncMaxFrameSize == 0 || c.ResyncMaxFrameSize > c.MaxFrameSize {
		c.ResyncMaxFrameSize = min(DefaultResyncMaxFrameSize, c.MaxFrameSize)
	}
	if c.MaxHeaderTableSize == 0 {
		c.MaxHeaderTableSize = DefaultMaxHeaderTableSize
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = DefaultMemoryBudget
	}
	if c.MaxFieldsPerBlock <= 0 {
		c.MaxFieldsPerBlock = DefaultMaxFieldsPerBlock
	}
}

// Clock converts boot-clock nanoseconds to wall-clock timestamps.
type Clock func(bootNs uint64) pcommon.Timestamp

// OffsetClock is the Clock of wall = boot + offsetNs.
func OffsetClock(offsetNs int64) Clock {
	return func(b uint64) pcommon.Timestamp { return pcommon.Timestamp(int64(b) + offsetNs) }
}

// tuple is the key of same-host pairing: a connection's endpoints in its
// network namespace (0 pairs with 0 only).
type tuple struct {
	local, remote Endpoint
	netns         uint32
}

// conn is a tracked connection.
type conn struct {
	id            ConnID
	role          Role
	local, remote Endpoint
	netns         uint32
	isn           SockISN // a TLS session's socket numbers (ConnOpen.ISN)
	tls           bool    // a TLS session (ConnOpen.TLS)
	hasTuple      bool
	fromStart     bool
	openProc      Proc
	dirs          [2]direction
	reqDir        int8 // the Dir that carries requests; -1 unknown
	streams       map[uint32]*stream
	// peak is the most streams the map has held since it was made: what
	// its memory is (Go maps do not shrink); it is made again, smaller,
	// once it holds less than a quarter of that.
	peak int
	// slist orders the streams by activity (the budget's victims); heaps
	// find GOAWAY's refused streams, the orphans a request makes
	// unmatched and the waiting streams a chunk releases (index.go).
	slist       streamList
	heaps       [numHeaps]streamHeap
	idxMem      int    // accounted memory of the map and heaps (their last charge)
	gaps        uint32 // desyncs of either direction: a stream open across one is flagged FlagGap
	closing     bool   // its streams are being ended (closeConn, notHTTP2)
	list        *connList
	promoted    bool   // off probation: it carried a header block of a call
	maxReqSid   uint32 // the highest stream id of a request seen
	last        uint64 // boot ns of the latest chunk
	ignored     bool   // found not HTTP/2 (and forgotten)
	removed     bool   // no longer tracked
	mem         int    // accounted memory (see budget.go)
	dirMem      [2]int // of it, the directions' (their last charge)
	prev, next  *conn  // the LRU list: prev is more recently active
	failedSyncs uint32
	peer        *conn // the other end, on this host and tracked
	peerID      ConnID
	peerKnown   bool
}

func (c *conn) learnReqDir(d Dir) {
	if c.reqDir < 0 {
		c.reqDir = int8(d)
	}
}

// stream is an open call.
type stream struct {
	reqDir Dir
	last   uint64
	c      *conn
	sid    uint32
	gapAt  uint32 // c.gaps when it was opened
	// link: its place in its connection's slist and the Tracker's
	link [2][2]*stream
	hidx [numHeaps]int32 // its place in c's heaps, plus one (0: not in)
	// orphan: response frames came first. Records of the two directions
	// of a socket may be captured out of order (a write's record after the
	// peer's answer was read), so a response to a stream id above any
	// request seen waits for its request; it is dropped (StreamsUnmatched)
	// when a later request is seen first, or at close or expiry.
	// A stream whose response ended before its request did (an adopted
	// orphan, or records of the request direction late) waits for its
	// request's END_STREAM, a reset, a chunk of the request direction
	// stamped after the response's end, its connection's close or Expire.
	orphan    bool
	respEnded bool // the response ended, at respEndNs

	respEndNs uint64
	// respSeqStatus: call.RespSeq is that of a block with :status (the
	// response's first HEADERS for sure), not only the first seen.
	respSeqStatus bool
	mem           int // accounted memory (its last charge)
	call          Call
}

// Tracker turns the captured bytes of connections into calls. Its methods
// must be called from one goroutine at a time, in capture order.
type Tracker struct {
	cfg     Config
	emit    func(*Call)
	clock   Clock
	conns   map[ConnID]*conn
	byTuple map[tuple]*conn
	free    []*stream
	stats   Stats
	used    int // accounted memory
	// est and prob are the connections off and on probation, each most
	// recently active first; slist is every stream, the same way.
	est, prob connList
	slist     streamList
	notH2     idSet // connections found not HTTP/2, forgotten
}

// NewTracker returns a Tracker that hands each completed call to emit. The
// *Call is valid during the call to emit only. clock converts boot-clock
// times (nil: OffsetClock(0)).
func NewTracker(cfg Config, emit func(*Call), clock Clock) *Tracker {
	cfg.setDefaults()
	if clock == nil {
		clock = OffsetClock(0)
	}
	return &Tracker{
		cfg:     cfg,
		emit:    emit,
		clock:   clock,
		conns:   make(map[ConnID]*conn),
		byTuple: make(map[tuple]*conn),
	}
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
func (t *Tracker) ConnOpen(o *ConnOpen) {
	if old := t.conns[o.Conn]; old != nil {
		t.closeConn(old, o.TimeNs, FlagConnClosed)
	}
	t.notH2.remove(o.Conn)
	c := t.newConn(o.Conn, o.TimeNs)
	defer t.enforce(c)
	c.role, c.local, c.remote, c.openProc, c.netns, c.isn, c.tls = o.Role, o.Local, o.Remote, o.Proc, o.NetNS, o.ISN, o.TLS
	c.hasTuple = o.Local.Addr.IsValid() && o.Remote.Addr.IsValid() && o.Local != o.Remote
	c.fromStart = o.Role != RoleUnknown
	if c.fromStart {
		// the client preface travels client to server
		c.reqDir = int8(Egress)
		if o.Role == RoleServer {
			c.reqDir = int8(Ingress)
		}
		c.dirs[c.reqDir].reset(c, Dir(c.reqDir), true, true)
		c.dirs[1-c.reqDir].reset(c, Dir(1-c.reqDir), true, false)
	}
	if !c.hasTuple {
		return
	}
	k := tuple{c.local, c.remote, c.netns}
	if prev := t.byTuple[k]; prev != nil {
		t.unlinkTuple(prev)
	}
	t.byTuple[k] = c
	if p := t.byTuple[tuple{c.remote, c.local, c.netns}]; p != nil {
		c.peer, p.peer = p, c
		c.peerID, c.peerKnown = p.id, true
		p.peerID, p.peerKnown = c.id, true
	}
}

// newConn tracks a connection, on probation; at MaxProbationConns the
// least recently active one on probation is evicted first.
func (t *Tracker) newConn(id ConnID, now uint64) *conn {
	for t.prob.n >= t.cfg.MaxProbationConns && t.prob.tail != nil {
		t.stats.ProbationEvictedLimit++
		t.closeConn(t.prob.tail, 0, FlagEvicted)
	}
	c := &conn{id: id, reqDir: -1, last: now, streams: make(map[uint32]*stream)}
	for k := range c.heaps {
		c.heaps[k].kind = uint8(k)
	}
	c.dirs[0].reset(c, Egress, false, false)
	c.dirs[1].reset(c, Ingress, false, false)
	t.conns[id] = c
	t.prob.touch(c)
	t.charge(c, connMem)
	t.stats.ConnsTracked++
	return c
}

// promote takes c off probation: at MaxConns the least recently active
// connection off probation is evicted first.
func (t *Tracker) promote(c *conn) {
	if c.promoted || c.removed {
		return
	}
	for t.est.n >= t.cfg.MaxConns && t.est.tail != nil {
		t.stats.ConnsEvictedLimit++
		t.closeConn(t.est.tail, 0, FlagEvicted)
	}
	c.promoted = true
	t.prob.unlink(c)
	t.est.touch(c)
	t.stats.ConnsPromoted++
}

// Chunk feeds captured bytes. A chunk of an unknown connection starts
// tracking it as RoleUnknown (its ConnOpen was lost or predates capture).
func (t *Tracker) Chunk(ch *Chunk) {
	c := t.conns[ch.Conn]
	if c == nil && t.notH2.has(ch.Conn) {
		t.stats.ChunksNotHTTP2++
		t.stats.ChunksIgnored++
		return
	}
	if ch.Dir > Ingress {
		t.stats.ChunksIgnored++
		return
	}
	if c == nil {
		c = t.newConn(ch.Conn, ch.TimeNs)
		t.stats.ConnsWithoutOpen++
	}
	defer t.enforce(c)
	t.touch(c)
	c.last = max(c.last, ch.TimeNs)
	if c.heaps[heapWaiting].len() > 0 {
		t.flushWaiting(c, ch.Dir, ch.TimeNs)
	}
	c.dirs[ch.Dir].chunk(t, ch)
	if !c.ignored && c.failedSyncs >= maxFailedSyncs && !c.dirs[0].synced && !c.dirs[1].synced {
		t.notHTTP2(c)
	}
	t.chargeDirs(c)
}

// notHTTP2 forgets a connection found not HTTP/2: its slot and memory are
// freed, and its id is remembered (a bounded set) so that its later chunks
// cost a lookup (ChunksNotHTTP2) until a ConnOpen or ConnClose of the id.
func (t *Tracker) notHTTP2(c *conn) {
	if c.ignored {
		return
	}
	c.ignored = true
	t.stats.ConnsIgnoredNotHTTP2++
	c.closing = true
	for _, s := range c.streams {
		t.dropStream(c, s)
		t.recycle(c, s)
	}
	for i := range c.dirs {
		c.dirs[i] = direction{c: c, dir: Dir(i), st: psUnsynced}
	}
	t.removeConn(c)
	t.notH2.add(c.id)
}

// ConnClose ends a connection: its open streams are emitted with
// FlagConnClosed.
func (t *Tracker) ConnClose(cl *ConnClose) {
	t.notH2.remove(cl.Conn)
	if c := t.conns[cl.Conn]; c != nil {
		t.closeConn(c, cl.TimeNs, FlagConnClosed)
	}
}

// Lost counts lost capture records. Nothing else is needed: a lost chunk
// shows as a hole that no uncopied payload explains at the next chunk of
// its direction, which is then a gap.
func (t *Tracker) Lost(l *Lost) { t.stats.Lost += l.Count }

// Expire ends connections idle since nowNs-IdleTimeout and streams idle
// since nowNs-StreamIdleTimeout; their open streams are emitted with
// FlagEvicted, ended at their last activity.
//
// It walks the connections and streams from the least recently active
// and stops at the first one not idle: its cost is that of what it ends.
// (Capture order is nearly time order: one made active later but stamped
// earlier can outlive its timeout by that skew, until the next Expire.)
func (t *Tracker) Expire(nowNs uint64) {
	connIdle, streamIdle := uint64(t.cfg.IdleTimeout), uint64(t.cfg.StreamIdleTimeout)
	for _, l := range []*connList{&t.prob, &t.est} {
		for c := l.tail; c != nil && nowNs > c.last && nowNs-c.last >= connIdle; c = l.tail {
			t.stats.ConnsEvicted++
			t.closeConn(c, 0, FlagEvicted)
		}
	}
	for s := t.slist.tail; s != nil && nowNs > s.last && nowNs-s.last >= streamIdle; s = t.slist.tail {
		t.stats.StreamsEvicted++
		t.finish(s.c, s.sid, s, s.last, FlagEvicted)
	}
}

// closeConn ends c; endNs 0 ends each stream at its last activity.
func (t *Tracker) closeConn(c *conn, endNs uint64, f CallFlags) {
	c.closing = true
	for sid, s := range c.streams {
		e := endNs
		if e == 0 {
			e = s.last
		}
		if f == FlagConnClosed {
			t.stats.CallsConnClosed++
		}
		t.finish(c, sid, s, e, f)
	}
	t.removeConn(c)
}

// removeConn stops tracking c and releases its accounted memory.
func (t *Tracker) removeConn(c *conn) {
	if t.conns[c.id] == c {
		delete(t.conns, c.id)
	}
	t.unlinkTuple(c)
	if c.list != nil {
		c.list.unlink(c)
	}
	t.used -= c.mem
	c.mem, c.removed = 0, true
}

func (t *Tracker) unlinkTuple(c *conn) {
	if !c.hasTuple {
		return
	}
	c.hasTuple = false
	if k := (tuple{c.local, c.remote, c.netns}); t.byTuple[k] == c {
		delete(t.byTuple, k)
	}
	if c.peer != nil {
		c.peer.peer = nil
		c.peer = nil
	}
}

// onHeaders handles a complete HEADERS header block b of d.
func (t *Tracker) onHeaders(d *direction, b *hblock) {
	c, f, sid := d.c, &b.fields, b.blockStream
	switch {
	case f.has&hasMethod != 0:
		c.learnReqDir(d.dir)
	case f.has&hasStatus != 0:
		c.learnReqDir(1 - d.dir)
	}
	s := c.streams[sid]
	if s == nil {
		isReq := c.reqDir == int8(d.dir)
		if sid%2 == 0 || c.reqDir < 0 || (!isReq && sid <= c.maxReqSid) {
			t.stats.StreamsUnmatched++
			return
		}
		if len(c.streams) >= t.cfg.MaxStreamsPerConn {
			t.stats.StreamsOverLimit++
			return
		}
		s = t.newStream(c, Dir(c.reqDir), sid, b.blockTime)
		s.orphan = !isReq
		t.addStream(c, s)
	} else {
		t.touchStream(c, s)
	}
	t.promote(c)
	s.last = max(s.last, b.blockTime)
	defer t.chargeLive(c, sid, s)
	call := &s.call
	if d.dir == s.reqDir && s.orphan {
		t.adopt(c, d, s, b)
	} else if d.dir == s.reqDir && call.ReqHeaderBytes == 0 {
		t.request(c, d, s, b)
	}
	if d.dir == s.reqDir {
		call.ReqHeaderBytes += b.blockWire
		if b.blockFlags&FlagEndStream != 0 {
			call.Flags |= FlagRequestEnded
		}
		if s.respEnded && call.Flags&FlagRequestEnded != 0 { // an adopted orphan
			t.end(c, sid, s, s.respEndNs)
		}
		return
	}
	call.RespHeaderBytes += b.blockWire
	// the response's first HEADERS: the one with :status, or else the first
	// of its direction seen
	if b.blockSeqKnown && (!call.RespSeqKnown || (f.has&hasStatus != 0 && !s.respSeqStatus)) {
		call.RespSeq, call.RespSeqKnown = b.blockSeq, true
		s.respSeqStatus = f.has&hasStatus != 0
	}
	if f.has&hasStatus != 0 && call.Flags&FlagResponseHeaders == 0 {
		call.Flags |= FlagResponseHeaders
		call.HTTPStatus, _ = strconv.Atoi(f.status)
	}
	if f.has&hasContentType != 0 && call.Protocol == ProtoUnknown && isGRPCContentType(f.contentType) {
		call.Protocol = ProtoGRPC
	}
	if f.has&hasGRPCStatus != 0 {
		if v, err := strconv.Atoi(f.grpcStatus); err == nil && v >= 0 {
			call.GRPCStatus = v
		}
		if call.Protocol == ProtoUnknown {
			call.Protocol = ProtoGRPC
		}
	}
	if f.has&hasGRPCMessage != 0 {
		call.GRPCMessage = DecodeGRPCMessage(f.grpcMessage)
	}
	if b.blockFlags&FlagEndStream != 0 {
		t.end(c, sid, s, b.blockTime)
	}
}

// adopt makes an orphan the call of its request, seen now.
func (t *Tracker) adopt(c *conn, d *direction, s *stream, b *hblock) {
	s.orphan = false
	c.heaps[heapOrphans].remove(s)
	c.heaps[heapLive].push(s)
	if s.respEnded {
		c.heaps[heapWaiting].push(s)
	}
	t.chargeIndex(c)
	resp := s.call
	t.request(c, d, s, b)
	call := &s.call
	call.Flags |= resp.Flags
	call.HTTPStatus, call.GRPCStatus, call.GRPCMessage = resp.HTTPStatus, resp.GRPCStatus, resp.GRPCMessage
	call.ResetCode, call.RespHeaderBytes = resp.ResetCode, resp.RespHeaderBytes
	call.RespDataFrames, call.RespDataBytes = resp.RespDataFrames, resp.RespDataBytes
	call.RespSeq, call.RespSeqKnown = resp.RespSeq, resp.RespSeqKnown
	if resp.Protocol == ProtoGRPC {
		call.Protocol = ProtoGRPC
	}
}

// end ends a stream's response: the call is emitted now, or, when its
// request is not complete yet, when it is (see stream.respEnded).
func (t *Tracker) end(c *conn, sid uint32, s *stream, endNs uint64) {
	if !s.respEnded {
		s.respEnded, s.respEndNs = true, endNs
		if !s.orphan {
			c.heaps[heapWaiting].push(s)
			t.chargeIndex(c)
		}
	}
	if s.orphan || s.call.Flags&FlagRequestEnded == 0 {
		return
	}
	t.finish(c, sid, s, s.respEndNs, 0)
}

// flushWaiting emits the waiting streams whose request direction is dir
// and whose response ended before nowNs: every request byte written before
// the response ended has been seen.
// (The streams of a connection share its request direction.)
func (t *Tracker) flushWaiting(c *conn, dir Dir, nowNs uint64) {
	if c.reqDir != int8(dir) {
		return
	}
	for h := &c.heaps[heapWaiting]; h.len() > 0 && h.top().respEndNs < nowNs; {
		s := h.top()
		t.finish(c, s.sid, s, s.respEndNs, 0)
	}
}

func isGRPCContentType(ct string) bool {
	const p = "application/grpc"
	return len(ct) >= len(p) && ct[:len(p)] == p && (len(ct) == len(p) || ct[len(p)] == '+' || ct[len(p)] == ';')
}

// placeholderPrefix begins Call.MethodPlaceholder.
const placeholderPrefix = "_UNKNOWN_"

// request fills a call from its request headers (d's current block).
func (t *Tracker) request(c *conn, d *direction, s *stream, b *hblock) {
	sid, f := s.call.StreamID, &b.fields
	s.call = Call{
		Conn: c.id, Role: c.role, Local: c.local, Remote: c.remote, NetNS: c.netns, ISN: c.isn, TLS: c.tls,
		Proc: b.blockProc, StreamID: sid, StartNs: b.blockTime, GRPCStatus: -1,
		ReqSeq: b.blockSeq, ReqSeqKnown: b.blockSeqKnown,
	}
	call := &s.call
	if d.dir == Ingress {
		call.Side = SideServer
	}
	if call.Proc == (Proc{}) {
		call.Proc = c.openProc
	}
	if sid > c.maxReqSid {
		c.maxReqSid = sid
		if c.heaps[heapOrphans].len() > 0 {
			t.dropOrphans(c, sid)
		}
	}
	call.Method, call.Path, call.Authority, call.ContentType = f.method, f.path, f.authority, f.contentType
	if f.has&hasPath == 0 {
		call.Flags |= FlagMethodUnknown
		if n := f.pathEntry(); n > 0 {
			call.MethodPlaceholder = placeholderPrefix + strconv.FormatUint(uint64(n), 10)
			t.stats.MethodPlaceholders++
		}
	} else if svc, m, ok := SplitPath(f.path); ok {
		call.Service, call.RPC = svc, m
	}
	if f.has&hasContentType != 0 {
		call.Protocol = ProtoHTTP
		if isGRPCContentType(f.contentType) {
			call.Protocol = ProtoGRPC
		}
	}
	if f.has&hasGRPCTimeout != 0 {
		call.Timeout, _ = ParseGRPCTimeout(f.timeout)
	}
	if f.has&hasTraceParent != 0 {
		call.TraceParent = ParseTraceParent(f.traceparent)
	}
}

// dropOrphans forgets the orphans below sid: their requests would have
// come before sid's.
func (t *Tracker) dropOrphans(c *conn, sid uint32) {
	for h := &c.heaps[heapOrphans]; h.len() > 0 && h.top().sid < sid; {
		s := h.top()
		t.finish(c, s.sid, s, 0, 0)
	}
}

func (t *Tracker) newStream(c *conn, reqDir Dir, sid uint32, now uint64) *stream {
	var s *stream
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		s = new(stream)
	}
	s.reqDir, s.last, s.c, s.sid = reqDir, now, c, sid
	s.call = Call{StreamID: sid, GRPCStatus: -1}
	return s
}

// addStream makes s (new, its orphan flag set) c's stream s.sid.
func (t *Tracker) addStream(c *conn, s *stream) {
	c.streams[s.sid] = s
	c.peak = max(c.peak, len(c.streams))
	s.gapAt = c.gaps
	c.slist.pushFront(s, 0)
	t.slist.pushFront(s, 1)
	if s.orphan {
		c.heaps[heapOrphans].push(s)
	} else {
		c.heaps[heapLive].push(s)
	}
	t.chargeIndex(c)
}

// touchStream makes s, c's, the most recently active stream.
func (t *Tracker) touchStream(c *conn, s *stream) {
	c.slist.moveFront(s, 0)
	t.slist.moveFront(s, 1)
}

// dropStream takes s out of c's map, lists and heaps. Once the map holds
// less than a quarter of its peak it is made again (unless c is closing:
// its map is being walked), paid for by the streams ended since the peak.
func (t *Tracker) dropStream(c *conn, s *stream) {
	delete(c.streams, s.sid)
	c.slist.remove(s, 0)
	t.slist.remove(s, 1)
	for k := range c.heaps {
		if h := &c.heaps[k]; h.has(s) {
			h.remove(s)
			h.shrink()
		}
	}
	if !c.closing && c.peak > shrinkMin && len(c.streams) < c.peak/4 {
		m := make(map[uint32]*stream, len(c.streams))
		for id, v := range c.streams {
			m[id] = v
		}
		c.streams, c.peak = m, len(m)
		t.stats.StreamMapsShrunk++
	}
	t.chargeIndex(c)
}

// chargeLive charges s's memory if it is still c's stream sid.
func (t *Tracker) chargeLive(c *conn, sid uint32, s *stream) {
	if c.streams[sid] == s {
		t.chargeStream(c, s)
	}
}

// recycle releases s, a stream of c no longer in c.streams.
func (t *Tracker) recycle(c *conn, s *stream) {
	t.charge(c, -s.mem)
	*s = stream{}
	if len(t.free) < 1024 {
		t.free = append(t.free, s)
	}
}

// onData counts a DATA frame (its header only: the payload is not needed).
func (t *Tracker) onData(d *direction, fh *FrameHeader) {
	s := d.c.streams[fh.StreamID]
	if s == nil {
		return
	}
	s.last = max(s.last, d.fTime)
	call := &s.call
	if d.dir == s.reqDir {
		call.ReqDataFrames++
		call.ReqDataBytes += uint64(fh.Length)
		if fh.Flags&FlagEndStream != 0 {
			call.Flags |= FlagRequestEnded
			if s.respEnded && !s.orphan {
				t.end(d.c, fh.StreamID, s, s.respEndNs)
			}
		}
		return
	}
	call.RespDataFrames++
	call.RespDataBytes += uint64(fh.Length)
	if fh.Flags&FlagEndStream != 0 {
		t.end(d.c, fh.StreamID, s, d.fTime)
	}
}

// onReset ends a stream reset by either end.
func (t *Tracker) onReset(d *direction, sid uint32, code uint32) {
	s := d.c.streams[sid]
	if s == nil {
		return
	}
	call := &s.call
	call.Flags |= FlagReset
	call.ResetCode = code
	if code == errCancel {
		call.Flags |= FlagCancelled
	}
	if call.GRPCStatus < 0 {
		call.GRPCStatus = resetStatus(code)
		// a CANCEL once the grpc-timeout has passed is the deadline: the
		// client's, or the server's (grpc-go resets at its own timer)
		if code == errCancel && call.Timeout > 0 && d.fTime >= call.StartNs &&
			time.Duration(d.fTime-call.StartNs) >= call.Timeout-max(deadlineSlack, call.Timeout/20) {
			call.GRPCStatus = codeDeadlineExceeded
			call.Flags |= FlagDeadline
		}
	}
	t.stats.CallsReset++
	if s.orphan {
		t.end(d.c, sid, s, d.fTime)
	} else {
		t.finish(d.c, sid, s, d.fTime, 0)
	}
}

// deadlineSlack: how much before its grpc-timeout (at least; or 5% of it) a
// CANCEL still counts as the deadline (the timeout is measured from the
// header's encoding, the span from the syscall that carried it).
const deadlineSlack = 2 * time.Millisecond

// onGoAway fails the streams the GOAWAY's receiver started above lastID
// (the highest ids first).
func (t *Tracker) onGoAway(d *direction, lastID uint32) {
	c := d.c
	if c.reqDir < 0 || c.reqDir == int8(d.dir) {
		return
	}
	for h := &c.heaps[heapLive]; h.len() > 0 && h.top().sid > lastID; {
		s := h.top()
		call := &s.call
		call.Flags |= FlagGoAway
		if call.GRPCStatus < 0 {
			call.GRPCStatus = codeUnavailable
		}
		t.stats.CallsGoAway++
		t.finish(c, s.sid, s, d.fTime, 0)
	}
}

// finish emits a call and forgets its stream; an orphan is only counted.
func (t *Tracker) finish(c *conn, sid uint32, s *stream, endNs uint64, f CallFlags) {
	t.dropStream(c, s)
	if s.orphan {
		t.stats.StreamsUnmatched++
		t.recycle(c, s)
		return
	}
	call := &s.call
	if s.respEnded { // complete but for its request's end: not cut short
		endNs, f = s.respEndNs, 0
	}
	call.Flags |= f
	if s.gapAt != c.gaps {
		call.Flags |= FlagGap
	}
	if f == FlagConnClosed && call.GRPCStatus < 0 && call.Protocol != ProtoHTTP {
		call.GRPCStatus = codeUnavailable // what a gRPC client reports
	}
	call.EndNs = max(endNs, call.StartNs)
	call.Start, call.End = t.clock(call.StartNs), t.clock(call.EndNs)
	if call.ReqDataFrames > 1 || call.RespDataFrames > 1 {
		call.Flags |= FlagStreaming
	}
	if c.peerKnown {
		call.PeerConn, call.PeerFound = c.peerID, true
	}
	if call.Side == SideClient {
		call.ClientConn, call.ClientConnKnown = c.id, true
	} else if c.peerKnown {
		call.ClientConn, call.ClientConnKnown = c.peerID, true
	}
	if call.Flags&FlagMethodUnknown != 0 {
		t.stats.MethodsUnknown++
	}
	t.stats.CallsEmitted++
	t.emit(call)
	t.recycle(c, s)
}
