// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// ScopePrefix starts the instrumentation scope name of every config's
// metrics: "ebpf_exporter/<config name>". The scope also carries the
// attribute ConfigAttribute = <config name>.
const (
	ScopePrefix     = "ebpf_exporter/"
	ConfigAttribute = "ebpf_exporter.config"
	// SelfScope is the scope of the exporter's own series
	// (enabled_configs, decoder_errors_total), as ebpf_exporter exports them.
	SelfScope = "ebpf_exporter"
)

// mapEntry is one element of a metric's map: its key and its value on
// each possible CPU (a single value for maps that are not per-CPU).
type mapEntry struct {
	key    []byte
	values []uint64
}

// series is one exported label set and its value.
type series struct {
	labels []string
	key    string        // seriesKey(labels); set by decodeSeries
	cached *cachedLabels // the decoded key it came from; set by decodeSeries
	value  uint64
}

// labelCache is what one metric keeps between collections: the decoded
// labels of each raw key, like ebpf_exporter's decoder cache but only for
// the keys seen in the previous collection, so it never outgrows the map;
// the histogram's bucket layout; and scratch space every collection
// reuses.
type labelCache struct {
	gen     uint64 // the collection; an entry not used in the last one is dropped
	used    int    // entries used in this collection
	entries map[string]*cachedLabels
	peak    int // most entries since the map was last made: Go maps do not shrink

	// Every entry is charged to the budget (nil: unlimited) when it is
	// put and credited when it is swept; a new key that does not fit is
	// left out of the collection and counted for config by reason.
	budget  *budget.Budget
	config  string
	charged int64     // bytes charged for the entries
	dropped [2]uint64 // this collection's drops: max_series, max_memory

	layout *spec.BucketLayout // a histogram's, computed on first use

	// The order of the last full sort: a series key's rank is its place
	// in it. While no new key turns up, series are placed by rank, not
	// sorted.
	epoch  uint64 // of the last full sort; ranks of another epoch are stale
	nRanks int

	rows   []row          // scratch: the rows of a collection, decoded
	dense  []series       // scratch: series by rank
	index  map[string]int // scratch: position of each series by key
	groups []int          // scratch: the group of each histogram row
	counts []uint64       // scratch: every histogram group's bucket counts
}

// row is one map value with its decoded key.
type row struct {
	c *cachedLabels
	v uint64
}

// cachedLabels is one raw key decoded.
type cachedLabels struct {
	values []string
	key    string // seriesKey(values)
	skip   bool   // a decoder dropped the label set
	cost   int64  // bytes charged to the budget
	gen    uint64
	rank   int          // place of key in the cache's last full sort
	epoch  uint64       // of that sort
	bucket *bucketLabel // histograms: values split into group and bucket, on first use
}

// bucketLabel is a histogram row's labels split: all but the last label
// name the histogram, the last is the bucket index.
type bucketLabel struct {
	labels []string // all labels but the bucket
	group  string   // seriesKey(labels)
	le     float64
	err    error
}

func (c *cachedLabels) bucketLabel() *bucketLabel {
	if c.bucket != nil {
		return c.bucket
	}
	b := &bucketLabel{}
	if len(c.values) == 0 {
		b.err = errors.New("histogram row without a bucket label")
	} else {
		b.labels = c.values[:len(c.values)-1]
		b.group = seriesKey(b.labels)
		le, err := strconv.ParseUint(c.values[len(c.values)-1], 0, 64)
		if err != nil {
			b.err = fmt.Errorf("error parsing float value for bucket %#v: %v", c.values, err)
		}
		b.le = float64(le)
	}
	c.bucket = b
	return b
}

func (c *labelCache) get(raw []byte) (*cachedLabels, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.entries[string(raw)]
	if ok && v.gen != c.gen {
		v.gen = c.gen
		c.used++
	}
	return v, ok
}

// full reports whether a new key would find no series left in the
// budget (counted as dropped): it is then not decoded at all.
func (c *labelCache) full() bool {
	if c == nil || !c.budget.Full() {
		return false
	}
	c.dropped[0]++
	return true
}

// put caches v for raw if the budget has room for it, and reports whether
// it did; a key left out is counted by reason.
func (c *labelCache) put(raw []byte, v *cachedLabels) bool {
	if c == nil {
		return true
	}
	if c.budget != nil {
		cost := budget.SeriesCost(len(raw), v.values, v.key)
		switch c.budget.Admit(cost) {
		case "":
			v.cost = cost
			c.charged += cost
		case budget.DropMaxSeries:
			c.dropped[0]++
			return false
		default:
			c.dropped[1]++
			return false
		}
	}
	v.gen = c.gen
	c.entries[string(raw)] = v
	c.used++ // only misses are put
	c.peak = max(c.peak, len(c.entries))
	return true
}

// rotate starts a collection: what was used in the last one is what is
// kept.
func (c *labelCache) rotate() {
	c.sweep()
	c.gen++
	c.used = 0
}

// sweep ends a collection: the entries it did not use are dropped and
// credited (swept only when some were not used), and the keys it left
// out are counted.
func (c *labelCache) sweep() {
	if c.used < len(c.entries) {
		var n, cost int64
		for k, v := range c.entries {
			if v.gen != c.gen {
				delete(c.entries, k)
				n, cost = n+1, cost+v.cost
			}
		}
		c.used = len(c.entries)
		if c.budget != nil {
			c.budget.Release(n, cost)
			c.charged -= cost
		}
	}
	// A churn of keys leaves the map's buckets behind: made again once
	// it holds a quarter of its peak.
	if c.peak > 1024 && len(c.entries) < c.peak/4 {
		m := make(map[string]*cachedLabels, len(c.entries))
		maps.Copy(m, c.entries)
		c.entries, c.peak = m, len(m)
		c.index = nil
		if cap(c.rows) > 4*len(m) {
			c.rows, c.dense, c.groups, c.counts = nil, nil, nil, nil
		}
	}
	c.flushDrops()
}

// flushDrops counts the keys left out since the last call.
func (c *labelCache) flushDrops() {
	c.budget.Drop(c.config, budget.DropMaxSeries, c.dropped[0])
	c.budget.Drop(c.config, budget.DropMaxMemory, c.dropped[1])
	c.dropped = [2]uint64{}
}

// release credits every entry, for good: the cache is not used again.
func (c *labelCache) release() {
	c.flushDrops()
	c.budget.Release(int64(len(c.entries)), c.charged)
	c.entries, c.charged, c.peak = map[string]*cachedLabels{}, 0, 0
}

// scratchIndex returns the cache's key index emptied (a new one without a cache).
func (c *labelCache) scratchIndex(size int) map[string]int {
	if c == nil {
		return make(map[string]int, size)
	}
	if c.index == nil {
		c.index = make(map[string]int, size)
	}
	clear(c.index)
	return c.index
}

// histogramLayout returns h's bucket layout, computed once per cache.
func (c *labelCache) histogramLayout(h spec.Histogram) (*spec.BucketLayout, error) {
	if c != nil && c.layout != nil {
		return c.layout, nil
	}
	l, err := spec.HistogramLayout(h)
	if c != nil && err == nil {
		c.layout = l
	}
	return l, err
}

// newLabelCache makes a metric's cache, charged to b (nil: unlimited) for
// config.
func newLabelCache(b *budget.Budget, config string) *labelCache {
	return &labelCache{entries: map[string]*cachedLabels{}, budget: b, config: config}
}

var zeroKey = []byte{0, 0, 0, 0}

// decodeSeries turns a map's entries into label sets and values exactly as
// ebpf_exporter does:
//
//   - per-CPU maps give one row per CPU; when the last label is named cpu
//     the CPU number is appended to the key as a host-order uint16 (so that
//     label has size 2), otherwise the rows of one key are summed;
//   - a metric with no labels reads key uint32(0) only, and so does a
//     per-CPU one whose only label is cpu (its 4 key bytes are dropped);
//   - the key bytes are cut into the labels in order by size and padding,
//     and each label's decoders run in turn; a decoder returning
//     ErrSkipLabelSet (regexp) drops the row, any other error fails the
//     whole metric for this collection;
//   - rows whose decoded labels are equal are summed.
//
// The result is sorted by label values.
func decodeSeries(entries []mapEntry, perCPU bool, labels []spec.Label, dec *decoder.Set, cache *labelCache) ([]series, error) {
	addCPU := perCPU && len(labels) > 0 && labels[len(labels)-1].Name == "cpu"
	zeroOnly := spec.OnlyKeyZero(labels, perCPU)

	var rows []row
	if cache != nil {
		rows = cache.rows[:0]
	}
	ranked := cache != nil && cache.epoch > 0
	add := func(raw []byte, v uint64) error {
		c, ok := cache.get(raw)
		if !ok {
			if cache.full() {
				return nil // left out, counted
			}
			decoded, err := dec.DecodeLabels(raw, labels)
			if errors.Is(err, decoder.ErrSkipLabelSet) {
				cache.put(raw, &cachedLabels{skip: true})
				return nil
			}
			if err != nil {
				return err
			}
			c = &cachedLabels{values: decoded, key: seriesKey(decoded)}
			if !cache.put(raw, c) {
				return nil // left out, counted
			}
		}
		if c.skip {
			return nil
		}
		ranked = ranked && c.epoch == cache.epoch
		rows = append(rows, row{c, v})
		return nil
	}

	var cpuKey []byte // the key with its CPU appended, reused
	for _, e := range entries {
		if zeroOnly && !bytes.Equal(e.key, zeroKey) {
			continue
		}
		if !perCPU {
			if len(e.values) == 0 {
				continue
			}
			raw := e.key
			if len(labels) == 0 {
				raw = nil
			}
			if err := add(raw, e.values[0]); err != nil {
				return nil, err
			}
			continue
		}
		for cpu, v := range e.values {
			raw := e.key
			switch {
			case len(labels) == 0:
				raw = nil
			case addCPU:
				cpuKey = cpuKey[:0]
				if !zeroOnly {
					cpuKey = append(cpuKey, e.key...)
				}
				cpuKey = binary.NativeEndian.AppendUint16(cpuKey, uint16(cpu))
				raw = cpuKey
			}
			if err := add(raw, v); err != nil {
				return nil, err
			}
		}
	}
	if cache != nil {
		cache.rows = rows
	}
	if ranked {
		return cache.placeByRank(rows), nil
	}
	return cache.sortAndRank(rows), nil
}

// placeByRank sums rows of equal keys and orders them by their ranks,
// which all rows have from the last full sort.
func (c *labelCache) placeByRank(rows []row) []series {
	if cap(c.dense) < c.nRanks {
		c.dense = make([]series, c.nRanks)
	}
	dense := c.dense[:c.nRanks]
	clear(dense)
	n := 0
	for _, r := range rows {
		d := &dense[r.c.rank]
		if d.cached == nil {
			*d = series{labels: r.c.values, key: r.c.key, cached: r.c, value: r.v}
			n++
		} else {
			d.value += r.v
		}
	}
	out := make([]series, 0, n)
	for _, d := range dense {
		if d.cached != nil {
			out = append(out, d)
		}
	}
	return out
}

// sortAndRank sums rows of equal keys, sorts the series by key and, with
// a cache, ranks every row's key for the next collections.
func (c *labelCache) sortAndRank(rows []row) []series {
	index := c.scratchIndex(len(rows))
	out := make([]series, 0, len(rows))
	for _, r := range rows {
		if i, ok := index[r.c.key]; ok {
			out[i].value += r.v
			continue
		}
		index[r.c.key] = len(out)
		out = append(out, series{labels: r.c.values, key: r.c.key, cached: r.c, value: r.v})
	}
	slices.SortFunc(out, func(a, b series) int { return strings.Compare(a.key, b.key) })
	if c == nil {
		return out
	}
	c.epoch++
	c.nRanks = len(out)
	for i, s := range out {
		index[s.key] = i
	}
	for _, r := range rows {
		r.c.rank, r.c.epoch = index[r.c.key], c.epoch
	}
	return out
}

// seriesKey joins label values unambiguously.
func seriesKey(values []string) string {
	var b strings.Builder
	for _, v := range values {
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// histSeries is one exported histogram label set.
type histSeries struct {
	labels []string
	key    string
	value  histogramValue
}

// histogramSeries groups decoded rows by all labels but the last, whose
// value (parsed like strconv.ParseUint(s, 0, 64)) is the bucket index.
// A bucket label that does not parse fails the whole metric, as in
// ebpf_exporter. rows come from decodeSeries. The counts share the
// cache's scratch space: they are valid until its next collection.
func histogramSeries(rows []series, layout *spec.BucketLayout, cache *labelCache) ([]histSeries, error) {
	var groups []int
	if cache != nil {
		groups = cache.groups[:0]
	}
	// A group's key is a prefix of its rows' keys (seriesKey of all labels
	// but the last), and no other group's: the rows, sorted by key, come
	// group by group, in the groups' order.
	var out []histSeries
	for _, r := range rows {
		b := r.cached.bucketLabel()
		if b.err != nil {
			return nil, b.err
		}
		if len(out) == 0 || out[len(out)-1].key != b.group {
			out = append(out, histSeries{labels: b.labels, key: b.group})
		}
		groups = append(groups, len(out)-1)
	}
	n := len(layout.Keys)
	var counts []uint64
	if cache != nil {
		cache.groups = groups
		if cap(cache.counts) < len(out)*n {
			cache.counts = make([]uint64, len(out)*n)
		}
		counts = cache.counts[:len(out)*n]
		clear(counts)
	} else {
		counts = make([]uint64, len(out)*n)
	}
	for i := range out {
		out[i].value.counts = counts[i*n : (i+1)*n : (i+1)*n]
	}
	for i, r := range rows {
		out[groups[i]].value.set(layout, r.cached.bucket.le, r.value)
	}
	for i := range out {
		out[i].value.finish(layout)
	}
	return out, nil
}

func labelNames(labels []spec.Label) []string {
	names := make([]string, len(labels))
	for i, l := range labels {
		names[i] = l.Name
	}
	return names
}

func putAttributes(m pcommon.Map, names, values []string) {
	m.EnsureCapacity(len(names))
	for i, n := range names {
		m.PutStr(n, values[i])
	}
}

// appendCounter adds a monotonic cumulative Sum named like the counter,
// one data point per series.
func appendCounter(ms pmetric.MetricSlice, c spec.Counter, ss []series, start, now pcommon.Timestamp) {
	if len(ss) == 0 {
		return // as in ebpf_exporter, no series: nothing exported
	}
	m := ms.AppendEmpty()
	m.SetName(c.Name)
	m.SetDescription(c.Help)
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	names := labelNames(c.Labels)
	dps := sum.DataPoints()
	dps.EnsureCapacity(len(ss))
	for _, s := range ss {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(s.value))
		putAttributes(dp.Attributes(), names, s.labels)
	}
}

// appendHistogram adds a cumulative explicit-bucket Histogram: the bounds
// are the layout's upper bounds, the counts per bucket, plus an empty
// overflow bucket (every value the map holds is in a finite bucket).
func appendHistogram(ms pmetric.MetricSlice, h spec.Histogram, layout *spec.BucketLayout, hs []histSeries, start, now pcommon.Timestamp) {
	if len(hs) == 0 {
		return
	}
	m := ms.AppendEmpty()
	m.SetName(h.Name)
	m.SetDescription(h.Help)
	hist := m.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	names := labelNames(h.Labels[:len(h.Labels)-1])
	dps := hist.DataPoints()
	dps.EnsureCapacity(len(hs))
	for _, s := range hs {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.ExplicitBounds().FromRaw(layout.Bounds)
		bc := dp.BucketCounts()
		bc.EnsureCapacity(len(s.value.counts) + 1)
		bc.Append(s.value.counts...)
		bc.Append(0)
		dp.SetCount(s.value.count)
		dp.SetSum(s.value.sum)
		putAttributes(dp.Attributes(), names, s.labels)
	}
}

// newConfigScope starts the ScopeMetrics of one config.
func newConfigScope(rm pmetric.ResourceMetrics, config string) pmetric.ScopeMetrics {
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(ScopePrefix + config)
	sm.Scope().Attributes().PutStr(ConfigAttribute, config)
	return sm
}

// mapContents is what one collection read from a metric's map.
type mapContents struct {
	entries []mapEntry
	perCPU  bool
}

// configMetrics maps what was read from one config's maps to its metrics.
// Metrics whose map is missing from contents are skipped; each metric
// that fails to decode is skipped and counted in the returned error count
// (ebpf_exporter's decoder_errors_total), its error in errs.
func configMetrics(sm pmetric.ScopeMetrics, cfg *spec.ProgramConfig, contents map[string]mapContents, dec *decoder.Set, caches map[string]*labelCache, start, now pcommon.Timestamp) (errs []error) {
	ms := sm.Metrics()
	for _, c := range cfg.Metrics.Counters {
		mc, ok := contents[c.Name]
		if !ok {
			continue
		}
		ss, err := decodeSeries(mc.entries, mc.perCPU, c.Labels, dec, caches[c.Name])
		if err != nil {
			errs = append(errs, fmt.Errorf("error getting map %q values for metric %q of config %q: %w", c.Name, c.Name, cfg.Name, err))
			continue
		}
		appendCounter(ms, c, ss, start, now)
	}
	for _, h := range cfg.Metrics.Histograms {
		mc, ok := contents[h.Name]
		if !ok {
			continue
		}
		cache := caches[h.Name]
		layout, err := cache.histogramLayout(h)
		if err != nil { // validated at load; kept for safety
			errs = append(errs, fmt.Errorf("histogram %q of config %q: %w", h.Name, cfg.Name, err))
			continue
		}
		rows, err := decodeSeries(mc.entries, mc.perCPU, h.Labels, dec, cache)
		if err != nil {
			errs = append(errs, fmt.Errorf("error getting map %q values for metric %q of config %q: %w", h.Name, h.Name, cfg.Name, err))
			continue
		}
		hs, err := histogramSeries(rows, layout, cache)
		if err != nil {
			errs = append(errs, fmt.Errorf("histogram %q of config %q: %w", h.Name, cfg.Name, err))
			continue
		}
		appendHistogram(ms, h, layout, hs, start, now)
	}
	return errs
}

// appendSelfMetrics adds ebpf_exporter's own series: enabled_configs
// (gauge, 1 per running config, attribute name) and decoder_errors_total
// (monotonic sum per config, attribute config).
func appendSelfMetrics(rm pmetric.ResourceMetrics, enabled []string, decoderErrors map[string]uint64, start, now pcommon.Timestamp) {
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(SelfScope)
	ms := sm.Metrics()

	m := ms.AppendEmpty()
	m.SetName("enabled_configs")
	m.SetDescription("The set of enabled configs")
	g := m.SetEmptyGauge()
	for _, name := range enabled {
		dp := g.DataPoints().AppendEmpty()
		dp.SetTimestamp(now)
		dp.SetIntValue(1)
		dp.Attributes().PutStr("name", name)
	}

	m = ms.AppendEmpty()
	m.SetName("decoder_errors_total")
	m.SetDescription("How many times has decoders encountered errors")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	names := make([]string, 0, len(decoderErrors))
	for name := range decoderErrors {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		dp := sum.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(decoderErrors[name]))
		dp.Attributes().PutStr("config", name)
	}
}
