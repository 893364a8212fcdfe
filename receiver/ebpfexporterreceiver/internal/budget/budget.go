// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package budget

import (
	"maps"
	"sync"
)

// The reasons a series, a sample or a span is left out.
const (
	// DropMaxSeries: a new map key or perf_event_array series found the
	// budget's series all taken.
	DropMaxSeries = "max_series"
	// DropMaxMemory: a new map key or perf_event_array series did not fit
	// in the budget's bytes.
	DropMaxMemory = "max_memory"
	// DropQueueFull: a span ring buffer record read while max_queued_spans
	// spans waited for the traces pipeline.
	DropQueueFull = "queue_full"
	// DropRefused: spans the traces pipeline refused.
	DropRefused = "refused"
)

// Costs charged per series, beyond its strings' bytes: a cached key's
// map slot, its cachedLabels and its share of the collection's scratch
// and pdata (measured with TestLabelCacheChurnIsBounded: the Go heap per
// series stays under the accounted bytes).
const (
	seriesOverhead = 320
	valueOverhead  = 16 // a string header per label value
)

// SeriesCost is what one decoded key or perf series is charged.
func SeriesCost(raw int, values []string, key string) int64 {
	n := int64(seriesOverhead + raw + len(key))
	for _, v := range values {
		n += int64(valueOverhead + len(v))
	}
	return n
}

// Budget is one Exporter's account of what other processes made it keep.
// A nil budget admits everything and counts nothing (tests).
type Budget struct {
	maxSeries int64
	maxBytes  int64

	mu      sync.Mutex
	series  int64
	bytes   int64
	dropped map[DropKey]uint64
}

// DropKey names a drop counter: the config and the reason.
type DropKey struct {
	Config string
	Reason string
}

// New returns a budget of maxSeries series and maxBytes bytes.
func New(maxSeries, maxBytes int64) *Budget {
	return &Budget{maxSeries: maxSeries, maxBytes: maxBytes, dropped: map[DropKey]uint64{}}
}

// Full is a cheap check before decoding a new key: whether no series is
// left (a key that would be refused need not be decoded).
func (b *Budget) Full() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.series >= b.maxSeries
}

// Admit charges one series of cost bytes, or returns why it cannot.
func (b *Budget) Admit(cost int64) (reason string) {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.series >= b.maxSeries:
		return DropMaxSeries
	case b.bytes+cost > b.maxBytes:
		return DropMaxMemory
	}
	b.series++
	b.bytes += cost
	return ""
}

// Release credits n series of cost bytes in all.
func (b *Budget) Release(n, cost int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.series -= n
	b.bytes -= cost
}

// Drop counts n things of config left out for reason.
func (b *Budget) Drop(config, reason string, n uint64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropped[DropKey{config, reason}] += n
}

// Usage returns the series and bytes held and the drops so far.
func (b *Budget) Usage() (series, bytes int64, dropped map[DropKey]uint64) {
	if b == nil {
		return 0, 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.series, b.bytes, maps.Clone(b.dropped)
}
