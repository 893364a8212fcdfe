// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// perfPagesPerCPU sizes each CPU's perf buffer (ebpf_exporter uses 1024
// pages; 64 keeps memory use at 256 KiB per CPU).
const perfPagesPerCPU = 64

// defaultFlushInterval is how often a perf_event_array counter starts
// over when flush_interval is unset, as in ebpf_exporter.
const defaultFlushInterval = time.Hour

// perfCounter is a perf_event_array counter: each event's leading bytes
// (the label sizes and paddings) are decoded into labels and count one.
// Every flush_interval the counts start over (a new start timestamp).
type perfCounter struct {
	counter spec.Counter
	rd      *perf.Reader
	dec     *decoder.Set
	logger  *zap.Logger
	flush   time.Duration
	budget  *budget.Budget // charged for every series in counts
	config  string

	mu      sync.Mutex
	counts  map[string]*series
	start   time.Time
	lost    uint64
	errs    uint64
	charged int64 // bytes charged for counts

	wg sync.WaitGroup
}

func newPerfCounter(config string, c spec.Counter, m *ebpf.Map, dec *decoder.Set, b *budget.Budget, logger *zap.Logger) (*perfCounter, error) {
	rd, err := perf.NewReader(m, perfPagesPerCPU*os.Getpagesize())
	if err != nil {
		return nil, err
	}
	flush := c.FlushInterval
	if flush <= 0 {
		flush = defaultFlushInterval
	}
	p := &perfCounter{counter: c, rd: rd, dec: dec, logger: logger.With(zap.String("counter", c.Name)), flush: flush,
		budget: b, config: config, counts: map[string]*series{}, start: time.Now()}
	p.wg.Add(1)
	go p.loop()
	return p, nil
}

func (p *perfCounter) loop() {
	defer p.wg.Done()
	size := uint(0)
	for _, l := range p.counter.Labels {
		size += l.Size + l.Padding
	}
	var rec perf.Record
	for {
		if err := p.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, perf.ErrClosed) {
				return
			}
			p.logger.Warn("reading perf event array failed", zap.Error(err))
			continue
		}
		if rec.LostSamples > 0 {
			p.mu.Lock()
			p.lost += rec.LostSamples
			p.mu.Unlock()
			continue
		}
		if uint(len(rec.RawSample)) < size {
			p.mu.Lock()
			p.errs++
			p.mu.Unlock()
			continue
		}
		// Samples are padded to 8 bytes: only the label bytes count.
		values, err := p.dec.DecodeLabels(rec.RawSample[:size], p.counter.Labels)
		if errors.Is(err, decoder.ErrSkipLabelSet) {
			continue
		}
		p.mu.Lock()
		if err != nil {
			p.errs++
			p.mu.Unlock()
			continue
		}
		p.flushLocked()
		k := seriesKey(values)
		if s, ok := p.counts[k]; ok {
			s.value++
		} else {
			p.add(k, values)
		}
		p.mu.Unlock()
	}
}

// add starts the series of key k if the budget has room for it; a sample
// of a series that does not fit is counted as dropped.
func (p *perfCounter) add(k string, values []string) {
	cost := budget.SeriesCost(0, values, k)
	if reason := p.budget.Admit(cost); reason != "" {
		p.budget.Drop(p.config, reason, 1)
		return
	}
	p.charged += cost
	p.counts[k] = &series{labels: values, value: 1}
}

func (p *perfCounter) flushLocked() {
	if time.Since(p.start) >= p.flush {
		p.releaseLocked()
		p.start = time.Now()
	}
}

// releaseLocked forgets every series and credits the budget.
func (p *perfCounter) releaseLocked() {
	p.budget.Release(int64(len(p.counts)), p.charged)
	p.counts, p.charged = map[string]*series{}, 0
}

// snapshot returns the current counts, sorted, and their start time.
func (p *perfCounter) snapshot() ([]series, pcommon.Timestamp) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
	keys := make([]string, 0, len(p.counts))
	for k := range p.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]series, 0, len(keys))
	for _, k := range keys {
		out = append(out, *p.counts[k])
	}
	return out, pcommon.NewTimestampFromTime(p.start)
}

// takeErrors returns the decode failures since the last call.
func (p *perfCounter) takeErrors() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.errs
	p.errs = 0
	return n
}

func (p *perfCounter) lostCount() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *perfCounter) close() error {
	err := p.rd.Close()
	p.wg.Wait()
	p.mu.Lock()
	p.releaseLocked()
	p.mu.Unlock()
	return err
}
