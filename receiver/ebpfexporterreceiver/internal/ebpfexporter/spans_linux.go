// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// maxSpanBatch bounds the spans handed to the sink at once; a batch is
// also handed over as soon as the ring buffer is empty.
const maxSpanBatch = 1024

// monotonicClock reads the wall clock and CLOCK_MONOTONIC (what
// bpf_ktime_get_ns returns) together.
func monotonicClock() (time.Time, uint64) {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Now(), uint64(ts.Nano())
}

// spanCounts are one span ring buffer's counters.
type spanCounts struct {
	records      uint64 // records read
	spans        uint64 // spans the sink accepted
	decodeErrors uint64 // records that did not decode to a span
	dropped      uint64 // spans the sink refused or the queue had no room for
}

// spanQueueBatches bounds the batches waiting for the sink (the spans in
// them are bounded by max_queued_spans, shared by all ring buffers).
const spanQueueBatches = 256

// spanReader reads one tracing.spans ring buffer and hands its spans to the
// sink in batches. The ring buffer is read as it fills whatever the sink
// does: a sink that blocks or is slow leaves batches queued, up to
// max_queued_spans spans over all ring buffers, and records read beyond
// that are dropped, counted, and not decoded (the kernel side never fills
// up, so no drop goes uncounted).
type spanReader struct {
	rd      *ringbuf.Reader
	dec     *spanDecoder
	config  string
	service string
	sink    SpanSink
	logger  *zap.Logger

	budget    *budget
	queued    *atomic.Int64 // spans in batches not yet taken by the sink, all readers'
	maxQueued int64
	batches   chan ptrace.Traces

	mu     sync.Mutex
	counts spanCounts

	ctx      context.Context
	cancel   context.CancelFunc
	wg, send sync.WaitGroup
}

func newSpanReader(config string, s spec.Span, m *ebpf.Map, dec *decoder.Set, sink SpanSink, b *budget, queued *atomic.Int64, maxQueued int, logger *zap.Logger) (*spanReader, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &spanReader{
		rd:        rd,
		dec:       newSpanDecoder(config, s, dec, monotonicClock),
		config:    config,
		service:   ServiceName(s),
		sink:      sink,
		logger:    logger.With(zap.String("ringbuf", s.RingBuf)),
		budget:    b,
		queued:    queued,
		maxQueued: int64(maxQueued),
		batches:   make(chan ptrace.Traces, spanQueueBatches),
		ctx:       ctx,
		cancel:    cancel,
	}
	r.wg.Add(1)
	r.send.Add(1)
	go r.loop()
	go r.sendLoop()
	return r, nil
}

func (r *spanReader) loop() {
	defer r.wg.Done()
	defer close(r.batches)
	td, spans := newSpanBatch(r.service)
	var rec ringbuf.Record
	for {
		err := r.rd.ReadInto(&rec)
		if err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			r.logger.Warn("reading span ring buffer failed", zap.Error(err))
			continue
		}
		if r.queued.Load()+int64(spans.Len()) >= r.maxQueued {
			r.mu.Lock()
			r.counts.records++
			r.counts.dropped++
			r.mu.Unlock()
			r.budget.drop(r.config, DropQueueFull, 1)
		} else {
			derr := r.dec.decode(rec.RawSample, spans)
			failed := derr != nil && !errors.Is(derr, decoder.ErrSkipLabelSet)
			r.mu.Lock()
			r.counts.records++
			if failed {
				r.counts.decodeErrors++
			}
			r.mu.Unlock()
			if failed {
				r.logger.Warn("error handling raw span bytes", zap.Error(derr))
			}
		}
		if spans.Len() == 0 || (rec.Remaining > 0 && spans.Len() < maxSpanBatch) {
			continue
		}
		n := int64(spans.Len())
		r.queued.Add(n)
		select {
		case r.batches <- td:
		default: // as many batches as spanQueueBatches wait
			r.queued.Add(-n)
			r.mu.Lock()
			r.counts.dropped += uint64(n)
			r.mu.Unlock()
			r.budget.drop(r.config, DropQueueFull, uint64(n))
		}
		td, spans = newSpanBatch(r.service)
	}
}

// sendLoop hands the queued batches to the sink, one at a time.
func (r *spanReader) sendLoop() {
	defer r.send.Done()
	for td := range r.batches {
		n := uint64(td.SpanCount())
		err := r.sink(r.ctx, td)
		r.queued.Add(-int64(n))
		r.mu.Lock()
		if err != nil {
			r.counts.dropped += n
		} else {
			r.counts.spans += n
		}
		r.mu.Unlock()
		if err != nil {
			r.budget.drop(r.config, DropRefused, n)
			r.logger.Warn("spans refused by the pipeline", zap.Uint64("spans", n), zap.Error(err))
		}
	}
}

func (r *spanReader) snapshot() spanCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// close stops the reader; a batch being handed over is cancelled, and
// those still queued are handed over with the cancelled context.
func (r *spanReader) close() error {
	r.cancel()
	err := r.rd.Close()
	r.wg.Wait()
	r.send.Wait()
	return err
}
