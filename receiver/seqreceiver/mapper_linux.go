// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// Building a log record costs tens of times what reading its ring slot does
// (pdata allocates every attribute), so a read of many records spreads that
// work over the spare cores: the reader goroutine decodes each record and
// applies it to the process model in ticket order (the model is not safe for
// concurrent use), fills chunks of mapChunk records, and hands each full
// chunk to a worker goroutine that builds its log records into a slice of its
// own; the chunks are appended to the batch in ticket order when the read
// ends. A read of fewer than mapChunk records, or a machine with one core,
// maps on the reader goroutine alone.

// mapChunk is how many records a worker maps at a time.
const mapChunk = 128

// mapWorkers is how many goroutines besides the reader map records: one per
// spare core, at most 7.
func mapWorkers() int { return min(max(runtime.GOMAXPROCS(0)-1, 0), 7) }

// pending is a record read, decoded and applied to the process model, or a
// gap in the tickets, waiting for its log record.
type pending struct {
	ev      event.Event
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	slots   int
	gap     bool   // a seq.lost record: lost tickets from ev.Ticket on
	lost    uint64 // the gap's tickets
	reason  string // the gap's reason
}

func (p *pending) setLost(first, count uint64, reason string) {
	p.ev.Ticket, p.gap, p.lost, p.reason = first, true, count, reason
}

// chunk is up to mapChunk consecutive pending records and, once mapped,
// their log records.
type chunk struct {
	items     [mapChunk]pending
	n         int
	recs      plog.LogRecordSlice
	delivered [event.NumTypes]int64
}

// mapper maps what one read reads. Its methods other than the workers'
// belong to the reader goroutine; the workers live for one read.
type mapper struct {
	pdatamap.Mapper
	workers int // goroutines besides the reader; 0: the reader maps all

	observed time.Time
	cur      *chunk   // being filled
	full     []*chunk // this read's earlier chunks, in ticket order
	free     []*chunk
	scratch  pdatamap.Scratch    // the reader's
	spare    []*pdatamap.Scratch // one per worker
	jobs     chan *chunk         // full chunks for the workers; nil while none runs
	wg       sync.WaitGroup
}

// begin starts a read whose records were observed at observed.
func (m *mapper) begin(observed time.Time) {
	m.observed = observed
	m.cur = m.get()
}

// next returns the next pending record to fill, in ticket order.
func (m *mapper) next() *pending {
	if m.cur.n == mapChunk {
		m.dispatch()
	}
	p := &m.cur.items[m.cur.n]
	m.cur.n++
	p.gap, p.slots = false, 0
	return p
}

// drop forgets the record next returned last.
func (m *mapper) drop() { m.cur.n-- }

// dispatch hands the full current chunk to a worker, or maps it at once when
// every worker is busy, and starts a new one.
func (m *mapper) dispatch() {
	c := m.cur
	m.full = append(m.full, c)
	m.cur = m.get()
	if m.workers == 0 {
		m.mapChunk(c, &m.scratch)
		return
	}
	if m.jobs == nil {
		m.jobs = make(chan *chunk, 2*m.workers)
		for len(m.spare) < m.workers {
			m.spare = append(m.spare, new(pdatamap.Scratch))
		}
		for i := range m.workers {
			s := m.spare[i]
			m.wg.Go(func() {
				for c := range m.jobs {
					m.mapChunk(c, s)
				}
			})
		}
	}
	select {
	case m.jobs <- c:
	default:
		m.mapChunk(c, &m.scratch) // the workers are behind: help
	}
}

// end maps what is left, waits for the workers, and appends every chunk's
// log records to dst in ticket order, adding the delivered records by type
// to delivered.
func (m *mapper) end(dst plog.LogRecordSlice, delivered *[event.NumTypes]int64) {
	c := m.cur
	m.cur = nil
	if c.n > 0 {
		m.mapChunk(c, &m.scratch)
		m.full = append(m.full, c)
	} else {
		m.free = append(m.free, c)
	}
	if m.jobs != nil {
		close(m.jobs)
		for c := range m.jobs { // those no worker has taken yet
			m.mapChunk(c, &m.scratch)
		}
		m.wg.Wait()
		m.jobs = nil
	}
	for i, c := range m.full {
		c.recs.MoveAndAppendTo(dst)
		for t, n := range c.delivered {
			delivered[t] += n
		}
		c.n, c.delivered = 0, [event.NumTypes]int64{}
		m.free = append(m.free, c)
		m.full[i] = nil
	}
	m.full = m.full[:0]
}

func (m *mapper) get() *chunk {
	if n := len(m.free); n > 0 {
		c := m.free[n-1]
		m.free = m.free[:n-1]
		return c
	}
	return &chunk{recs: plog.NewLogRecordSlice()}
}

// mapChunk builds the log records of c, with s.
func (m *mapper) mapChunk(c *chunk, s *pdatamap.Scratch) {
	recs := c.recs
	recs.EnsureCapacity(c.n)
	for i := range c.n {
		p := &c.items[i]
		if p.gap {
			m.AppendLost(recs, p.ev.Ticket, p.lost, p.reason, m.observed)
			continue
		}
		if !m.AppendEventSlots(recs, &p.ev, m.observed, s, p.slots) {
			continue
		}
		c.delivered[p.ev.Type]++
		lr := recs.At(recs.Len() - 1)
		lr.SetTraceID(p.traceID)
		lr.SetSpanID(p.spanID)
	}
}
