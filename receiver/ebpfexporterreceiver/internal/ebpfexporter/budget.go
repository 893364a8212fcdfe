// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"maps"
	"sync"
)

// What the receiver keeps between collections is chosen by other
// processes: the keys in its maps (comm strings, pids, cgroup ids,
// addresses: any local user can churn them by spawning processes with ever
// new names) and the label sets of perf_event_array samples. Every such
// structure is charged to one budget per Exporter when it is made and
// credited when it goes; what does not fit is left out and counted by
// reason.
const (
	// DefaultMaxSeries is the default Config.MaxSeries: decoded map keys
	// and perf_event_array series held at once, over all configs. A
	// node's per-cgroup or per-process maps hold a few thousand.
	DefaultMaxSeries = 50_000
	// DefaultMaxMemory is the default Config.MaxMemory: 32 MiB, about a
	// tenth of the agent's 300 MiB limit; the collection's pdata of as
	// many series is about as much again, in flight to the exporters.
	DefaultMaxMemory = 32 << 20
	// DefaultMaxQueuedSpans is the default Config.MaxQueuedSpans: spans
	// read from the ring buffers and not yet taken by the traces pipeline,
	// over all ring buffers (a span is at most a few hundred bytes: the
	// labels' sizes are the operator's, a cgroup path is cut at
	// maxCgroupPath).
	DefaultMaxQueuedSpans = 8192
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

// seriesCost is what one decoded key or perf series is charged.
func seriesCost(raw int, values []string, key string) int64 {
	n := int64(seriesOverhead + raw + len(key))
	for _, v := range values {
		n += int64(valueOverhead + len(v))
	}
	return n
}

// budget is one Exporter's account of what other processes made it keep.
// A nil budget admits everything and counts nothing (tests).
type budget struct {
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

func newBudget(maxSeries, maxBytes int64) *budget {
	return &budget{maxSeries: maxSeries, maxBytes: maxBytes, dropped: map[DropKey]uint64{}}
}

// full is a cheap check before decoding a new key: whether no series is
// left (a key that would be refused need not be decoded).
func (b *budget) full() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.series >= b.maxSeries
}

// admit charges one series of cost bytes, or returns why it cannot.
func (b *budget) admit(cost int64) (reason string) {
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

// release credits n series of cost bytes in all.
func (b *budget) release(n, cost int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.series -= n
	b.bytes -= cost
}

// drop counts n things of config left out for reason.
func (b *budget) drop(config, reason string, n uint64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropped[DropKey{config, reason}] += n
}

// usage returns the series and bytes held and the drops so far.
func (b *budget) usage() (series, bytes int64, dropped map[DropKey]uint64) {
	if b == nil {
		return 0, 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.series, b.bytes, maps.Clone(b.dropped)
}
