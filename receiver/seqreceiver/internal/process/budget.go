// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import "unsafe"

// The budget. Every entry, from its insertion into the table until its span
// is built or dropped, is charged with
//
//	entryBytes + the bytes of its strings (name, paths, argv)
//	  + 16 per string slot of its argv and exec-event argv slices (their capacity)
//	  + the size of a span event per slot of its events slice (its capacity)
//
// entryBytes is the struct with its share of the table's map, heap and
// queues. The strings are charged at their length wherever they are held,
// even where two share an allocation (argv strings share one per exec; an
// interned name is shared by many entries): the account is an upper bound of
// what the strings keep alive. Model.bytes is the sum over the entries,
// kept as each changes (recharge); a test recounts it.
//
// What is not charged is bounded otherwise: the recycled entries (maxFree,
// their slices trimmed), the ghosts and tombstones (their counts), and the
// capacity Go's maps keep after a burst (MaxProcesses).
//
// Over Config.MaxMemory, relieve frees, in this order: the argv of exec span
// events, entry by entry from the entry that first kept some (the oldest
// events first); span events likewise; the finished spans waiting for
// AppendFinished, oldest first; then the oldest-started live processes,
// evicted and their spans dropped. Each is counted by reason.

const (
	strHdr     = int(unsafe.Sizeof(""))
	eventBytes = int(unsafe.Sizeof(spanEvent{}))
	// entryBytes: the struct, its map slot (key, value, tophash and
	// overhead), its heap slot and a queue entry in each queue.
	entryBytes = int(unsafe.Sizeof(proc{})) + 32 + 8 + 2*int(unsafe.Sizeof(stripEntry{}))
)

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func strBytes(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	return n
}

// size is what p is charged with now.
func (p *proc) size() int {
	return entryBytes + p.data + strHdr*(cap(p.args)+cap(p.arena)) + eventBytes*cap(p.events)
}

// recharge brings p's charge, and the model's total, up to date.
func (m *Model) recharge(p *proc) {
	s := p.size()
	m.bytes += s - p.bytes
	p.bytes = s
}

// MemoryBytes returns the bytes accounted now.
func (m *Model) MemoryBytes() int { return m.bytes }

// live is how many entries are charged: live and waiting.
func (m *Model) live() int { return len(m.heap) + len(m.finished) - m.fhead }

// argsCost is what the argv args costs in an exec event.
func argsCost(args []string) int { return strHdr*len(args) + strBytes(args) }

// addEventArgs keeps args as the argv of p's exec event i (the last), within
// MaxEventArgsBytes: the argv of p's oldest exec events is dropped to make
// room; an argv larger than the whole of it is not kept.
func (m *Model) addEventArgs(p *proc, i int, args []string, d int) {
	e := &p.events[i]
	if len(args) == 0 {
		return
	}
	c := strHdr*len(args) + d
	if c > m.cfg.MaxEventArgsBytes {
		e.argsDropped = true
		m.stats.EventArgsDropped++
		return
	}
	for strHdr*len(p.arena)+p.arenaData+c > m.cfg.MaxEventArgsBytes && m.dropOldestEventArgs(p) {
		m.stats.EventArgsDropped++
	}
	e.argLo = int32(len(p.arena))
	p.arena = append(p.arena, args...)
	e.argHi = int32(len(p.arena))
	p.arenaData += d
	p.data += d
	if p.flags&flagInArgsQ == 0 {
		p.flags |= flagInArgsQ
		m.argsQ.push(p, m.live())
	}
}

// dropOldestEventArgs drops the argv of p's oldest exec event that has one,
// and reports whether there was one. Events before p.argsFrom have none, and
// the arena holds the argv of the events from it in order: the dropped argv
// is the arena's start.
func (m *Model) dropOldestEventArgs(p *proc) bool {
	for i := int(p.argsFrom); i < len(p.events); i++ {
		e := &p.events[i]
		if e.argHi <= e.argLo {
			continue
		}
		hi := e.argHi
		d := strBytes(p.arena[:hi])
		p.arenaData -= d
		p.data -= d
		n := copy(p.arena, p.arena[hi:])
		clear(p.arena[n:])
		p.arena = p.arena[:n]
		e.argLo, e.argHi, e.argsDropped = 0, 0, true
		for j := i + 1; j < len(p.events); j++ {
			if f := &p.events[j]; f.argHi > f.argLo {
				f.argLo -= hi
				f.argHi -= hi
			}
		}
		p.argsFrom = int32(i + 1)
		return true
	}
	p.argsFrom = int32(len(p.events))
	return false
}

// stripEventArgs drops the argv of every exec event of p, and its arena.
func (m *Model) stripEventArgs(p *proc) {
	for i := int(p.argsFrom); i < len(p.events); i++ {
		if e := &p.events[i]; e.argHi > e.argLo {
			e.argLo, e.argHi, e.argsDropped = 0, 0, true
			m.stats.EventArgsDroppedMem++
		}
	}
	p.argsFrom = int32(len(p.events))
	p.data -= p.arenaData
	p.arenaData = 0
	clear(p.arena)
	p.arena = nil
	m.recharge(p)
}

// stripEvents drops every span event of p (counted in the span's dropped
// events count).
func (m *Model) stripEvents(p *proc) {
	if len(p.events) == 0 {
		return
	}
	m.stripEventArgs(p)
	for i := range p.events {
		p.data -= len(p.events[i].path)
	}
	n := len(p.events)
	p.droppedEvents += uint32(n)
	m.stats.DroppedEventsMem += uint64(n)
	clear(p.events)
	p.events = nil
	p.argsFrom = 0
	m.recharge(p)
}

// relieve frees what the budget says, in its order, until the account is
// within Config.MaxMemory (see the top of this file). It is called between
// events, when no entry is in use.
func (m *Model) relieve() {
	for m.bytes > m.cfg.MaxMemory {
		if p := m.argsQ.pop(flagInArgsQ); p != nil {
			m.stripEventArgs(p)
			continue
		}
		if p := m.eventsQ.pop(flagInEventsQ); p != nil {
			m.stripEvents(p)
			continue
		}
		if m.fhead < len(m.finished) {
			p := m.finished[m.fhead]
			m.finished[m.fhead] = nil
			m.fhead++
			m.stats.DroppedSpansMem++
			m.recycle(p)
			continue
		}
		if len(m.heap) == 0 {
			return
		}
		m.stats.EvictedMem++
		m.evict() // queued in finished: the next turn drops it
	}
	m.compactFinished()
}

// compactFinished moves the waiting spans to the start of m.finished once
// the consumed part is the larger.
func (m *Model) compactFinished() {
	if m.fhead == 0 {
		return
	}
	n := copy(m.finished, m.finished[m.fhead:])
	clear(m.finished[n:])
	m.finished = m.finished[:n]
	m.fhead = 0
}

// stripEntry is an entry of a stripQ: stale once the entry is recycled.
type stripEntry struct {
	p   *proc
	gen uint32
}

// stripQ is a FIFO of entries, each at most once while its flag is set.
// Entries recycled meanwhile stay until popped or compacted: push compacts
// when they outnumber the charged entries, so the queue holds at most about
// twice the charged entries (counted in entryBytes).
type stripQ struct {
	q    []stripEntry
	head int
}

func (s *stripQ) push(p *proc, charged int) {
	if len(s.q)-s.head > 2*charged+64 {
		s.compact()
	}
	s.q = append(s.q, stripEntry{p, p.gen})
}

// pop returns the oldest entry still current, its flag cleared; nil if none.
func (s *stripQ) pop(flag uint16) *proc {
	for s.head < len(s.q) {
		e := s.q[s.head]
		s.q[s.head] = stripEntry{}
		s.head++
		if s.head == len(s.q) {
			s.q, s.head = s.q[:0], 0
		}
		if e.p.gen == e.gen && e.p.flags&flag != 0 {
			e.p.flags &^= flag
			return e.p
		}
	}
	return nil
}

// compact drops the stale entries.
func (s *stripQ) compact() {
	n := 0
	for _, e := range s.q[s.head:] {
		if e.p.gen == e.gen {
			s.q[n] = e
			n++
		}
	}
	clear(s.q[n:])
	s.q, s.head = s.q[:n], 0
}

// Config returns the Model's configuration, its defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// Pending returns how many finished spans wait for AppendFinished.
func (m *Model) Pending() int { return len(m.finished) - m.fhead }
