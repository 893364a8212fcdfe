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
type batcher struct {
	out      Output
	interval time.Duration

	mu      sync.Mutex
	flushed *sync.Cond // signalled after each swap
	logs    plog.Logs
	lrs     plog.LogRecordSlice
	nLogs   int
	metrics pmetric.Metrics
	ms      pmetric.MetricSlice
	nPoints int

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newBatcher(out Output, interval time.Duration) *batcher {
	b := &batcher{
		out:      out,
		interval: interval,
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

// addLogs lets fn append log records; fn returns how many it appended.
func (b *batcher) addLogs(fn func(plog.LogRecordSlice) int) {
	b.mu.Lock()
	for b.nLogs >= maxBuffered && !b.stopping() {
		b.flushed.Wait()
	}
	b.nLogs += fn(b.lrs)
	full := b.nLogs >= flushRecords
	b.mu.Unlock()
	if full {
		b.kickFlush()
	}
}

// addMetrics lets fn append metrics; fn returns how many data points.
func (b *batcher) addMetrics(fn func(pmetric.MetricSlice) int) {
	b.mu.Lock()
	for b.nPoints >= maxBuffered && !b.stopping() {
		b.flushed.Wait()
	}
	b.nPoints += fn(b.ms)
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
	b.flushed.Broadcast()
	b.mu.Unlock()
	if haveMetrics {
		b.out.ConsumeMetrics(metrics)
	}
	if haveLogs {
		b.out.ConsumeLogs(logs)
	}
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
