// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package spans

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
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

// spanQueueBatches bounds the batches waiting for the sink (the spans in
// them are bounded by max_queued_spans, shared by all ring buffers).
const spanQueueBatches = 256

// Reader reads one tracing.spans ring buffer and hands its spans to the
// sink in batches. The ring buffer is read as it fills whatever the sink
// does: a sink that blocks or is slow leaves batches queued, up to
// max_queued_spans spans over all ring buffers, and records read beyond
// that are dropped, counted, and not decoded (the kernel side never fills
// up, so no drop goes uncounted).
type Reader struct {
	rd      *ringbuf.Reader
	dec     *spanDecoder
	config  string
	service string
	sink    Sink
	logger  *zap.Logger

	budget    *budget.Budget
	queued    *atomic.Int64 // spans in batches not yet taken by the sink, all readers'
	maxQueued int64
	batches   chan ptrace.Traces

	mu     sync.Mutex
	counts Counts

	ctx      context.Context
	cancel   context.CancelFunc
	wg, send sync.WaitGroup
}

// NewReader reads ring buffer m of span s of config into sink, in its own
// goroutines, until Close; drops are counted in b, and queued (shared by all
// readers) bounds the spans waiting for the sink at maxQueued.
func NewReader(config string, s spec.Span, m *ebpf.Map, dec *decoder.Set, sink Sink, b *budget.Budget, queued *atomic.Int64, maxQueued int, logger *zap.Logger) (*Reader, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reader{
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

func (r *Reader) loop() {
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
			r.counts.Records++
			r.counts.Dropped++
			r.mu.Unlock()
			r.budget.Drop(r.config, budget.DropQueueFull, 1)
		} else {
			derr := r.dec.decode(rec.RawSample, spans)
			failed := derr != nil && !errors.Is(derr, decoder.ErrSkipLabelSet)
			r.mu.Lock()
			r.counts.Records++
			if failed {
				r.counts.DecodeErrors++
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
			r.counts.Dropped += uint64(n)
			r.mu.Unlock()
			r.budget.Drop(r.config, budget.DropQueueFull, uint64(n))
		}
		td, spans = newSpanBatch(r.service)
	}
}

// sendLoop hands the queued batches to the sink, one at a time.
func (r *Reader) sendLoop() {
	defer r.send.Done()
	for td := range r.batches {
		n := uint64(td.SpanCount())
		err := r.sink(r.ctx, td)
		r.queued.Add(-int64(n))
		r.mu.Lock()
		if err != nil {
			r.counts.Dropped += n
		} else {
			r.counts.Spans += n
		}
		r.mu.Unlock()
		if err != nil {
			r.budget.Drop(r.config, budget.DropRefused, n)
			r.logger.Warn("spans refused by the pipeline", zap.Uint64("spans", n), zap.Error(err))
		}
	}
}

// Snapshot returns the reader's counters now.
func (r *Reader) Snapshot() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Close stops the reader; a batch being handed over is cancelled, and
// those still queued are handed over with the cancelled context.
func (r *Reader) Close() error {
	r.cancel()
	err := r.rd.Close()
	r.wg.Wait()
	r.send.Wait()
	return err
}
