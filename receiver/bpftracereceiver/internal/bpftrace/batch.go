// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

const (
	// recordOverhead is what a log record costs besides its body (the
	// record, its attributes and timestamps), and pointOverhead what a
	// data point costs, in the budget.
	recordOverhead = 256
	pointOverhead  = 256
)

const (
	flushInterval = 100 * time.Millisecond
	flushRecords  = 1000
	// maxBuffered: a producer waits for a flush beyond this many buffered
	// records (a slow consumer slows the pipe readers down, and bpftrace
	// then reports lost events, instead of the buffer growing unbounded).
	maxBuffered = 10 * flushRecords
)

// batcher collects log records and metrics from all scripts and hands them
// to the Output from one goroutine: every flushInterval, or as soon as
// flushRecords log records or data points wait.
//
// It keeps the receiver's budget of bytes (Config.MaxBufferedBytes):
// what is batched and what the Output is still consuming, the records the
// readers are reading and the partial lines they assemble are charged to
// it. A producer waits while the budget is spent and something batched or
// in flight will give bytes back (the pipe readers then stop reading, and
// bpftrace reports lost events); readers, which must not wait on
// themselves, cut what does not fit (tryCharge).
type batcher struct {
	out      Output
	interval time.Duration
	maxBytes int64

	mu      sync.Mutex
	flushed *sync.Cond // signalled after each swap
	logs    plog.Logs
	lrs     plog.LogRecordSlice
	nLogs   int
	metrics pmetric.Metrics
	ms      pmetric.MetricSlice
	nPoints int

	used       int64 // bytes charged: batched, in flight, being read
	batchBytes int64 // of the current batch
	inflight   int64 // of the batch being consumed
	peak       int64

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newBatcher(out Output, interval time.Duration, maxBytes int64) *batcher {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBufferedBytes
	}
	b := &batcher{
		out:      out,
		interval: interval,
		maxBytes: maxBytes,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.flushed = sync.NewCond(&b.mu)
	b.resetLogs()
	b.resetMetrics()
	return b
}

func (b *batcher) resetLogs() {
	b.logs = plog.NewLogs()
	sl := b.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	sl.Scope().SetName(ScopeName)
	b.lrs = sl.LogRecords()
	b.nLogs = 0
}

func (b *batcher) resetMetrics() {
	b.metrics = pmetric.NewMetrics()
	sm := b.metrics.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(ScopeName)
	b.ms = sm.Metrics()
	b.nPoints = 0
}

func (b *batcher) start() { go b.loop() }

// spent reports whether a producer must wait (b.mu held): the budget is
// spent and a flush will give bytes back.
func (b *batcher) spent() bool {
	return b.used >= b.maxBytes && b.batchBytes+b.inflight > 0
}

// charge adds n bytes of the current batch (b.mu held).
func (b *batcher) charge(n int64) {
	b.used += n
	b.batchBytes += n
	b.peak = max(b.peak, b.used)
}

// waitRoom waits, before a reader reads a record, until room for n bytes
// is left in the budget or nothing batched or in flight will give any
// back (or Shutdown).
func (b *batcher) waitRoom(n int64) {
	b.mu.Lock()
	for b.used+n > b.maxBytes && b.batchBytes+b.inflight > 0 && !b.stopping() {
		b.flushed.Wait()
	}
	b.mu.Unlock()
}

// tryCharge charges n bytes that a reader holds, if they fit.
func (b *batcher) tryCharge(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.maxBytes {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

// adjust charges (n > 0) or credits (n < 0) bytes a reader holds, whether
// they fit or not (a partial line, bounded by Config.MaxLineBytes).
func (b *batcher) adjust(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.peak = max(b.peak, b.used)
	if n < 0 {
		b.flushed.Broadcast()
	}
	b.mu.Unlock()
}

// bytes returns the bytes charged now, and the most charged at once.
func (b *batcher) bytes() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// addLogs lets fn append log records; fn returns how many it appended.
// Their bodies and overhead are charged to the budget.
func (b *batcher) addLogs(fn func(plog.LogRecordSlice) int) {
	b.mu.Lock()
	for (b.nLogs >= maxBuffered || b.spent()) && !b.stopping() {
		b.flushed.Wait()
	}
	from := b.lrs.Len()
	b.nLogs += fn(b.lrs)
	var size int64
	for i := from; i < b.lrs.Len(); i++ {
		size += recordOverhead + int64(len(b.lrs.At(i).Body().Str()))
	}
	b.charge(size)
	full := b.nLogs >= flushRecords
	b.mu.Unlock()
	if full {
		b.kickFlush()
	}
}

// addMetrics lets fn append metrics; fn returns how many data points.
func (b *batcher) addMetrics(fn func(pmetric.MetricSlice) int) {
	b.mu.Lock()
	for (b.nPoints >= maxBuffered || b.spent()) && !b.stopping() {
		b.flushed.Wait()
	}
	n := fn(b.ms)
	b.nPoints += n
	b.charge(int64(n) * pointOverhead)
	full := b.nPoints >= flushRecords
	b.mu.Unlock()
	if full {
		b.kickFlush()
	}
}

func (b *batcher) stopping() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

func (b *batcher) kickFlush() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	t := time.NewTicker(b.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.kick:
		case <-b.stop:
			b.flush()
			return
		}
		b.flush()
	}
}

// flush hands what is buffered to the Output (from the loop goroutine only).
func (b *batcher) flush() {
	b.mu.Lock()
	var logs plog.Logs
	var metrics pmetric.Metrics
	haveLogs, haveMetrics := b.lrs.Len() > 0, b.ms.Len() > 0
	if haveLogs {
		logs = b.logs
		b.resetLogs()
	}
	if haveMetrics {
		metrics = b.metrics
		b.resetMetrics()
	}
	flight := b.batchBytes
	b.inflight, b.batchBytes = flight, 0
	b.flushed.Broadcast()
	b.mu.Unlock()
	if haveMetrics {
		b.out.ConsumeMetrics(metrics)
	}
	if haveLogs {
		b.out.ConsumeLogs(logs)
	}
	b.mu.Lock()
	b.used -= flight
	b.inflight = 0
	b.flushed.Broadcast()
	b.mu.Unlock()
}

// shutdown flushes what is left and stops the loop.
func (b *batcher) shutdown() {
	b.mu.Lock()
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	b.flushed.Broadcast()
	b.mu.Unlock()
	<-b.done
}
