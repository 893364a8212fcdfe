// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

// The indexes of a connection's streams and of the Tracker's connections,
// so that no frame or chunk walks them all (the peer chooses how many
// there are): intrusive lists in order of activity (the budget's and
// Expire's least recently active), and heaps by stream id (GOAWAY's
// refused streams, the orphans a request makes unmatched) and by response
// end (the waiting streams a chunk of the request direction releases).
// Every operation is O(1) or O(log n).

// streamList is an intrusive list of streams, most recently active first;
// which picks the links (0: the connection's list, 1: the Tracker's).
type streamList struct {
	head, tail *stream
}

func (l *streamList) links(s *stream, which int) *[2]*stream { return &s.link[which] }

// pushFront makes s the most recently active (it must not be in l).
func (l *streamList) pushFront(s *stream, which int) {
	ln := l.links(s, which)
	ln[0], ln[1] = nil, l.head
	if l.head != nil {
		l.links(l.head, which)[0] = s
	}
	l.head = s
	if l.tail == nil {
		l.tail = s
	}
}

// remove takes s out of l (it must be in l).
func (l *streamList) remove(s *stream, which int) {
	ln := l.links(s, which)
	if ln[0] != nil {
		l.links(ln[0], which)[1] = ln[1]
	} else {
		l.head = ln[1]
	}
	if ln[1] != nil {
		l.links(ln[1], which)[0] = ln[0]
	} else {
		l.tail = ln[0]
	}
	ln[0], ln[1] = nil, nil
}

// moveFront makes s, in l, the most recently active.
func (l *streamList) moveFront(s *stream, which int) {
	if l.head == s {
		return
	}
	l.remove(s, which)
	l.pushFront(s, which)
}

// Heaps of a connection's streams.
const (
	heapLive    = iota // streams whose request was seen, by stream id, highest first
	heapOrphans        // orphans, by stream id, lowest first
	heapWaiting        // non-orphans whose response ended, by respEndNs, earliest first
	numHeaps
)

// streamHeap is an intrusive binary heap of streams; s.hidx[kind] is a
// stream's index in it plus one (0: not in it).
type streamHeap struct {
	kind uint8
	s    []*stream
}

func (h *streamHeap) less(a, b *stream) bool {
	switch h.kind {
	case heapLive:
		return a.sid > b.sid
	case heapOrphans:
		return a.sid < b.sid
	default:
		return a.respEndNs < b.respEndNs || (a.respEndNs == b.respEndNs && a.sid < b.sid)
	}
}

func (h *streamHeap) len() int { return len(h.s) }

func (h *streamHeap) top() *stream { return h.s[0] }

func (h *streamHeap) has(s *stream) bool { return s.hidx[h.kind] != 0 }

func (h *streamHeap) set(i int, s *stream) {
	h.s[i] = s
	s.hidx[h.kind] = int32(i + 1)
}

func (h *streamHeap) push(s *stream) {
	h.s = append(h.s, s)
	h.set(len(h.s)-1, s)
	h.up(len(h.s) - 1)
}

// remove takes s out of h (it must be in h).
func (h *streamHeap) remove(s *stream) {
	i := int(s.hidx[h.kind]) - 1
	n := len(h.s) - 1
	s.hidx[h.kind] = 0
	if i != n {
		h.set(i, h.s[n])
		h.s[n] = nil
		h.s = h.s[:n]
		if !h.down(i) {
			h.up(i)
		}
		return
	}
	h.s[n] = nil
	h.s = h.s[:n]
}

func (h *streamHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.s[i], h.s[p]) {
			return
		}
		a, b := h.s[i], h.s[p]
		h.set(i, b)
		h.set(p, a)
		i = p
	}
}

func (h *streamHeap) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(h.s) {
			break
		}
		m := l
		if r := l + 1; r < len(h.s) && h.less(h.s[r], h.s[l]) {
			m = r
		}
		if !h.less(h.s[m], h.s[i]) {
			break
		}
		a, b := h.s[i], h.s[m]
		h.set(i, b)
		h.set(m, a)
		i = m
	}
	return i > start
}

// shrink reallocates the heap's array when it holds far less than its
// capacity (slices do not shrink), so that the capacity accounted stays
// near what is held.
func (h *streamHeap) shrink() {
	if c := cap(h.s); c > shrinkMin && len(h.s) < c/4 {
		h.s = append(make([]*stream, 0, 2*len(h.s)), h.s...)
	}
}

// connList is an intrusive list of connections, most recently active
// first.
type connList struct {
	head, tail *conn
	n          int
}

// touch makes c, in l or in no list, the most recently active of l.
func (l *connList) touch(c *conn) {
	if l.head == c {
		return
	}
	if c.list == l {
		l.unlink(c)
	}
	c.list = l
	l.n++
	c.next = l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	if l.tail == nil {
		l.tail = c
	}
}

// unlink takes c out of l (it must be in l).
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
	c.prev, c.next, c.list = nil, nil, nil
	l.n--
}

// victim is l's least recently active connection other than cur (nil:
// none).
func (l *connList) victim(cur *conn) *conn {
	v := l.tail
	if v == cur && v != nil {
		v = v.prev
	}
	return v
}
