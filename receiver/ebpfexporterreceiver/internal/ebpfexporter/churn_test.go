// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// churnLabels are a per-process map's: pid and comm, as a local user
// chooses them by spawning processes with ever new names.
var churnLabels = []spec.Label{
	{Name: "pid", Size: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
	{Name: "comm", Size: 16, Decoders: []spec.Decoder{{Name: "string"}}},
}

// churn runs collections over a map that holds perMap keys at a time, each
// collection's keys all new: collections*perMap distinct keys in all. It
// returns the Go heap the cache holds after the last collection (after GC,
// the input freed) and the series each collection exported.
// heapNoise is what the heap may gain meanwhile from elsewhere in the test
// binary (the teardown of an earlier test's goroutines: a few hundred bytes
// seen), far below what a leaking cache of 10 000 keys would keep.
const heapNoise = 8 << 10

func churn(t *testing.T, cache *labelCache, collections, perMap int) (heap int64, exported []int) {
	t.Helper()
	dec := decoder.NewSet(decoder.Env{})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := int64(ms.HeapAlloc)
	next := uint32(0)
	for range collections {
		entries := make([]mapEntry, perMap)
		for i := range entries {
			next++
			entries[i] = entry(cat(u32(next), comm(fmt.Sprintf("w%08x", next))), 1)
		}
		cache.rotate()
		ss, err := decodeSeries(entries, false, churnLabels, dec, cache)
		require.NoError(t, err)
		cache.sweep()
		exported = append(exported, len(ss))
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(cache)
	return int64(ms.HeapAlloc) - base, exported
}

// A million distinct keys over 100 collections, 10k in the map at a time:
// the cache holds only the live ones, within the budget, and the Go heap
// it keeps stays within what is accounted. With the budget large enough
// nothing is left out; with a smaller one the series and the bytes stay
// under it and every key left out is counted, at every collection.
func TestLabelCacheChurnIsBounded(t *testing.T) {
	const collections, perMap = 100, 10_000
	t.Run("fits", func(t *testing.T) {
		b := budget.New(DefaultMaxSeries, DefaultMaxMemory)
		cache := newLabelCache(b, "churn")
		heap, exported := churn(t, cache, collections, perMap)
		series, bytes, dropped := b.Usage()
		for i, n := range exported {
			require.Equal(t, perMap, n, "collection %d exports every key", i)
		}
		assert.Equal(t, int64(perMap), series, "only the last collection's keys are held")
		assert.Equal(t, perMap, len(cache.entries)) //nolint:testifylint // not Len: it would print the map
		assert.Empty(t, dropped)
		assert.LessOrEqual(t, heap, bytes+heapNoise, "the Go heap the cache keeps (%d) is within what is accounted (%d)", heap, bytes)
		t.Logf("accounted %d series, %d bytes (%.0f per series); heap after GC %d bytes", series, bytes, float64(bytes)/float64(series), heap)
	})
	t.Run("over", func(t *testing.T) {
		const maxSeries = 4000
		b := budget.New(maxSeries, DefaultMaxMemory)
		cache := newLabelCache(b, "churn")
		heap, exported := churn(t, cache, collections, perMap)
		series, bytes, dropped := b.Usage()
		for i, n := range exported {
			require.LessOrEqual(t, n, maxSeries, "collection %d", i)
		}
		assert.LessOrEqual(t, series, int64(maxSeries))
		assert.LessOrEqual(t, len(cache.entries), maxSeries)
		assert.LessOrEqual(t, heap, bytes+heapNoise, "the Go heap the cache keeps (%d) is within what is accounted (%d)", heap, bytes)
		// Each collection's keys are new: the first takes the budget, the
		// next finds it full (its predecessor's keys are swept only at the
		// rotate after it), and so on, alternately.
		var admitted int
		for _, n := range exported {
			admitted += n
		}
		assert.Equal(t, uint64(collections*perMap-admitted), dropped[budget.DropKey{Config: "churn", Reason: budget.DropMaxSeries}], "every key left out is counted")
		assert.Positive(t, dropped[budget.DropKey{Config: "churn", Reason: budget.DropMaxSeries}])

		b2 := budget.New(DefaultMaxSeries, 1<<20) // bytes bind first
		cache2 := newLabelCache(b2, "bytes")
		_, _ = churn(t, cache2, 3, perMap)
		_, bytes2, dropped2 := b2.Usage()
		assert.LessOrEqual(t, bytes2, int64(1<<20))
		assert.Positive(t, dropped2[budget.DropKey{Config: "bytes", Reason: budget.DropMaxMemory}])
		cache2.release()
		series2, bytes2, _ := b2.Usage()
		assert.Zero(t, series2, "released")
		assert.Zero(t, bytes2, "released")
	})
}
