// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

var (
	tStart = pcommon.NewTimestampFromTime(time.Unix(1_700_000_000, 0))
	tNow   = pcommon.NewTimestampFromTime(time.Unix(1_700_000_010, 0))
)

func convert(t *testing.T, spec *mapSpec, md mapData) (pmetric.MetricSlice, int, error) {
	t.Helper()
	ms := pmetric.NewMetricSlice()
	n, err := appendMapMetrics(ms, "s", spec, md, tStart, tNow)
	return ms, n, err
}

func hist(buckets ...bucket) mapData {
	return mapData{name: "@h", entries: []mapEntry{{kind: valueHist, buckets: buckets}}}
}

func b(min, max float64, count uint64) bucket {
	return bucket{min: min, max: max, hasMin: true, hasMax: true, count: count}
}

func TestHistogramBuckets(t *testing.T) {
	spec := &mapSpec{mapName: "@h", typ: MapTypeHistogram, metricName: "h"}
	tests := []struct {
		name   string
		in     mapData
		bounds []float64
		counts []uint64
	}{
		{"trimmed to the non-zero range", hist(b(0, 0, 0), b(1, 1, 3), b(2, 3, 0), b(4, 7, 2), b(8, 15, 0)),
			[]float64{1, 3, 7}, []uint64{3, 0, 2, 0}},
		{"negative bucket", hist(bucket{max: -1, hasMax: true, count: 1}, b(0, 0, 1), b(1, 1, 1)),
			[]float64{-1, 0, 1}, []uint64{1, 1, 1, 0}},
		{"lhist overflow is the +Inf bucket", hist(b(0, 9, 1), b(10, 19, 0), bucket{min: 20, hasMin: true, count: 5}),
			[]float64{9, 19}, []uint64{1, 0, 5}},
		{"only the overflow bucket", hist(b(0, 9, 0), bucket{min: 10, hasMin: true, count: 4}),
			[]float64{9}, []uint64{0, 4}},
		{"one bucket", hist(b(64, 127, 9)),
			[]float64{127}, []uint64{9, 0}},
		{"a middle bucket without max takes the next min", hist(bucket{min: 0, hasMin: true, count: 1}, b(10, 19, 1)),
			[]float64{9, 19}, []uint64{1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, n, err := convert(t, spec, tt.in)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, 1, ms.Len())
			m := ms.At(0)
			require.Equal(t, pmetric.MetricTypeHistogram, m.Type())
			assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality())
			dp := m.Histogram().DataPoints().At(0)
			assert.Equal(t, tt.bounds, dp.ExplicitBounds().AsRaw())
			assert.Equal(t, tt.counts, dp.BucketCounts().AsRaw())
			var total uint64
			for _, c := range tt.counts {
				total += c
			}
			assert.Equal(t, total, dp.Count())
			assert.False(t, dp.HasSum(), "bpftrace does not print the sum")
			assert.Equal(t, tStart, dp.StartTimestamp())
			assert.Equal(t, tNow, dp.Timestamp())
			assert.Equal(t, map[string]any{AttrScript: "s"}, dp.Attributes().AsRaw())
		})
	}

	ms, n, err := convert(t, spec, hist(b(0, 0, 0), b(1, 1, 0)))
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, ms.Len(), "no counts, no point, no metric")

	_, _, err = convert(t, spec, hist(b(0, 9, 1), b(5, 7, 1)))
	assert.ErrorContains(t, err, "not increasing")
	_, _, err = convert(t, spec, hist(bucket{count: 1}, bucket{count: 1}))
	assert.ErrorContains(t, err, "no upper bound")
}

func TestKeyAttributes(t *testing.T) {
	spec := &mapSpec{mapName: "@m", typ: MapTypeSum, metricName: "m", monotonic: true, attributes: []string{"a"}}
	md := mapData{name: "@m", keyed: true, entries: []mapEntry{
		{key: "1,x,3", kind: valueNumber, number: number{isInt: true, i: 5}},
		{key: "2", kind: valueNumber, number: number{isInt: true, i: 6}},
	}}
	ms, n, err := convert(t, spec, md)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	dps := ms.At(0).Sum().DataPoints()
	assert.Equal(t, map[string]any{AttrScript: "s", "a": "1", "key1": "x", "key2": "3"}, dps.At(0).Attributes().AsRaw())
	assert.Equal(t, map[string]any{AttrScript: "s", "a": "2"}, dps.At(1).Attributes().AsRaw())

	spec.attributes = nil
	ms, _, err = convert(t, spec, md)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{AttrScript: "s", "key0": "1", "key1": "x", "key2": "3"}, ms.At(0).Sum().DataPoints().At(0).Attributes().AsRaw())
}

func TestNumbers(t *testing.T) {
	md := mapData{name: "@v", entries: []mapEntry{{kind: valueNumber, number: number{isInt: true, i: 42}}}}
	sum := &mapSpec{mapName: "@v", typ: MapTypeSum, metricName: "v", monotonic: true, unit: "{call}", description: "d"}
	ms, n, err := convert(t, sum, md)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m := ms.At(0)
	assert.Equal(t, "v", m.Name())
	assert.Equal(t, "{call}", m.Unit())
	assert.Equal(t, "d", m.Description())
	require.Equal(t, pmetric.MetricTypeSum, m.Type())
	assert.True(t, m.Sum().IsMonotonic())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
	dp := m.Sum().DataPoints().At(0)
	assert.Equal(t, int64(42), dp.IntValue())
	assert.Equal(t, tStart, dp.StartTimestamp())
	assert.Equal(t, map[string]any{AttrScript: "s"}, dp.Attributes().AsRaw())

	sum.monotonic = false
	ms, _, _ = convert(t, sum, md)
	assert.False(t, ms.At(0).Sum().IsMonotonic())

	gauge := &mapSpec{mapName: "@v", typ: MapTypeGauge, metricName: "v"}
	md.entries[0].number = number{f: 1.8446744073709552e19}
	ms, _, err = convert(t, gauge, md)
	require.NoError(t, err)
	require.Equal(t, pmetric.MetricTypeGauge, ms.At(0).Type())
	gdp := ms.At(0).Gauge().DataPoints().At(0)
	assert.Equal(t, pmetric.NumberDataPointValueTypeDouble, gdp.ValueType())
	assert.InEpsilon(t, 1.8446744073709552e19, gdp.DoubleValue(), 1e-9)
	assert.Zero(t, gdp.StartTimestamp(), "gauges have no start")
}

func TestStats(t *testing.T) {
	st := stats{count: number{isInt: true, i: 2}, average: number{isInt: true, i: 15}, total: number{isInt: true, i: 30}}
	md := mapData{name: "@s", keyed: true, entries: []mapEntry{{key: "a", kind: valueStats, stats: st}}}
	spec := &mapSpec{mapName: "@s", typ: MapTypeSum, metricName: "s", monotonic: true, attributes: []string{"k"}}
	ms, n, err := convert(t, spec, md)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.Equal(t, 3, ms.Len())
	want := []struct {
		name string
		typ  pmetric.MetricType
		v    int64
	}{{"s.count", pmetric.MetricTypeSum, 2}, {"s.total", pmetric.MetricTypeSum, 30}, {"s.average", pmetric.MetricTypeGauge, 15}}
	for i, w := range want {
		m := ms.At(i)
		assert.Equal(t, w.name, m.Name())
		require.Equal(t, w.typ, m.Type())
		var dp pmetric.NumberDataPoint
		if w.typ == pmetric.MetricTypeSum {
			dp = m.Sum().DataPoints().At(0)
		} else {
			dp = m.Gauge().DataPoints().At(0)
		}
		assert.Equal(t, w.v, dp.IntValue())
		assert.Equal(t, map[string]any{AttrScript: "s", "k": "a"}, dp.Attributes().AsRaw())
	}

	spec.typ = MapTypeGauge
	ms, _, err = convert(t, spec, md)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		assert.Equal(t, pmetric.MetricTypeGauge, ms.At(i).Type())
	}
}

func TestMismatches(t *testing.T) {
	num := mapData{name: "@v", entries: []mapEntry{{kind: valueNumber, number: number{isInt: true, i: 1}}}}
	ms, n, err := convert(t, &mapSpec{typ: MapTypeHistogram, metricName: "v"}, num)
	assert.ErrorContains(t, err, "map @v holds numbers, not hist()/lhist() buckets; set its type to sum or gauge")
	assert.Zero(t, n)
	assert.Zero(t, ms.Len())

	_, n, err = convert(t, &mapSpec{typ: MapTypeSum, metricName: "v"}, hist(b(1, 1, 1)))
	assert.ErrorContains(t, err, "map @h is a hist()/lhist() map; set its type to histogram")
	assert.Zero(t, n)

	mixed := mapData{name: "@m", keyed: true, entries: []mapEntry{
		{key: "a", kind: valueOther},
		{key: "b", kind: valueNumber, number: number{isInt: true, i: 1}},
	}}
	ms, n, err = convert(t, &mapSpec{typ: MapTypeGauge, metricName: "m"}, mixed)
	assert.ErrorContains(t, err, "1 value(s) of map @m are not numbers")
	assert.Equal(t, 1, n, "the numbers are exported all the same")
	assert.Equal(t, 1, ms.At(0).Gauge().DataPoints().Len())
}

func TestLogRecords(t *testing.T) {
	lrs := plog.NewLogRecordSlice()
	at, obs := time.Unix(10, 0), time.Unix(11, 0)
	appendLineLog(lrs, "execsnoop", streamStdout, "123 456 /bin/true", plog.SeverityNumberInfo, at, obs)
	appendLineLog(lrs, "execsnoop", streamStderr, "ERROR: oops", plog.SeverityNumberWarn, obs, obs)
	appendLostEventsLog(lrs, "execsnoop", 7, obs)
	require.Equal(t, 3, lrs.Len())

	lr := lrs.At(0)
	assert.Equal(t, "123 456 /bin/true", lr.Body().Str())
	assert.Equal(t, plog.SeverityNumberInfo, lr.SeverityNumber())
	assert.Equal(t, "INFO", lr.SeverityText())
	assert.Equal(t, pcommon.NewTimestampFromTime(at), lr.Timestamp())
	assert.Equal(t, pcommon.NewTimestampFromTime(obs), lr.ObservedTimestamp())
	assert.Equal(t, map[string]any{AttrScript: "execsnoop", AttrStream: "stdout"}, lr.Attributes().AsRaw())

	lr = lrs.At(1)
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, map[string]any{AttrScript: "execsnoop", AttrStream: "stderr"}, lr.Attributes().AsRaw())

	lr = lrs.At(2)
	assert.Equal(t, EventLostEvents, lr.EventName())
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, "bpftrace lost 7 events (its perf buffer was full)", lr.Body().Str())
	assert.Equal(t, int64(7), lr.Attributes().AsRaw()[AttrLostEvents])
}

// TestGolden converts captured records with the configurations of the
// integration tests and compares the pdata with testdata/golden.
func TestGolden(t *testing.T) {
	cases := []struct {
		name    string
		capture string
		maps    map[string]MapConfig
		index   int // which print of the map
	}{
		{"syscount", "syscount", map[string]MapConfig{
			"@syscall": {Type: MapTypeSum, Attributes: []string{"syscall"}, Unit: "{syscall}"},
			"@process": {Type: MapTypeSum, Attributes: []string{"comm"}},
		}, 0},
		{"runqlat", "runqlat", map[string]MapConfig{
			"@usecs": {Type: MapTypeHistogram, Unit: "us", Description: "run queue latency"},
		}, 0},
		{"types", "types", map[string]MapConfig{
			"@h":    {Type: MapTypeHistogram},
			"@lh":   {Type: MapTypeHistogram},
			"@hk":   {Type: MapTypeHistogram, Attributes: []string{"id"}},
			"@lhk":  {Type: MapTypeHistogram},
			"@s":    {Type: MapTypeSum},
			"@sk":   {Type: MapTypeGauge, Attributes: []string{"k"}},
			"@avg":  {Type: MapTypeGauge},
			"@avgk": {Type: MapTypeGauge},
			"@mn":   {Type: MapTypeGauge},
			"@mx":   {Type: MapTypeGauge},
			"@val":  {Type: MapTypeGauge},
			"@neg":  {Type: MapTypeGauge},
			"@mk":   {Type: MapTypeSum, Attributes: []string{"a"}},
			"@sum":  {Type: MapTypeSum, Monotonic: boolp(false)},
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Scripts: []ScriptConfig{{Name: c.name, Program: "BEGIN {}", Maps: c.maps}}}
			specs, err := cfg.resolve(false)
			require.NoError(t, err)
			spec := specs[0]
			md := pmetric.NewMetrics()
			sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(ScopeName)
			seen := map[string]int{}
			for _, rec := range readRecords(t, filepath.Join("testdata/capture", c.capture+".jsonl")) {
				for _, m := range rec.maps {
					ms := spec.maps[m.name]
					if ms == nil {
						continue
					}
					seen[m.name]++
					if seen[m.name]-1 != c.index {
						continue
					}
					_, err := appendMapMetrics(sm.Metrics(), spec.name, ms, m, tStart, tNow)
					require.NoError(t, err, m.name)
				}
			}
			for name := range c.maps {
				assert.Positive(t, seen[name], "%s printed in the capture", name)
			}
			got, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
			require.NoError(t, err)
			testutil.GoldenJSON(t, filepath.Join("testdata", "golden", c.name+".json"), got)
		})
	}
}
