// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
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
	dropped      uint64 // spans the sink refused
}

// spanReader reads one tracing.spans ring buffer and hands its spans to the
// sink in batches.
type spanReader struct {
	rd      *ringbuf.Reader
	dec     *spanDecoder
	service string
	sink    SpanSink
	logger  *zap.Logger

	mu     sync.Mutex
	counts spanCounts

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newSpanReader(config string, s Span, m *ebpf.Map, dec *decoderSet, sink SpanSink, logger *zap.Logger) (*spanReader, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &spanReader{
		rd:      rd,
		dec:     newSpanDecoder(config, s, dec, monotonicClock),
		service: ServiceName(s),
		sink:    sink,
		logger:  logger.With(zap.String("ringbuf", s.RingBuf)),
		ctx:     ctx,
		cancel:  cancel,
	}
	r.wg.Add(1)
	go r.loop()
	return r, nil
}

func (r *spanReader) loop() {
	defer r.wg.Done()
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
		derr := r.dec.decode(rec.RawSample, spans)
		r.mu.Lock()
		r.counts.records++
		if derr != nil && !errors.Is(derr, ErrSkipLabelSet) {
			r.counts.decodeErrors++
		}
		r.mu.Unlock()
		if derr != nil && !errors.Is(derr, ErrSkipLabelSet) {
			r.logger.Warn("error handling raw span bytes", zap.Error(derr))
		}
		if spans.Len() == 0 || (rec.Remaining > 0 && spans.Len() < maxSpanBatch) {
			continue
		}
		n := uint64(spans.Len())
		err = r.sink(r.ctx, td)
		r.mu.Lock()
		if err != nil {
			r.counts.dropped += n
		} else {
			r.counts.spans += n
		}
		r.mu.Unlock()
		if err != nil {
			r.logger.Warn("spans refused by the pipeline", zap.Uint64("spans", n), zap.Error(err))
		}
		td, spans = newSpanBatch(r.service)
	}
}

func (r *spanReader) snapshot() spanCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// close stops the reader; a batch being handed over is cancelled.
func (r *spanReader) close() error {
	r.cancel()
	err := r.rd.Close()
	r.wg.Wait()
	return err
}
