// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// capturedVersions are the bpftrace versions of testdata/versions
// (capture-versions.sh): Debian 12, 13 and unstable.
var capturedVersions = []string{"0.17", "0.23", "0.27"}

// outcome is what a run of a script gave, in a form that compares across
// versions: each metric series' latest point, and the log records.
type outcome struct {
	// series: "name type{attrs}" -> the latest value (histograms: count
	// and buckets).
	series map[string]string
	// logs: "SEVERITY event: body", in order.
	logs []string
}

func (o outcome) metricNames() []string {
	var names []string
	for k := range o.series {
		name, _, _ := strings.Cut(k, " ")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// outcomeOf summarises what out received.
func outcomeOf(out *sink) outcome {
	o := outcome{series: map[string]string{}}
	out.mu.Lock()
	for _, md := range out.metrics {
		testutil.EachMetric(md, func(m pmetric.Metric) {
			kind := m.Type().String()
			if m.Type() == pmetric.MetricTypeSum && m.Sum().IsMonotonic() {
				kind = "MonotonicSum"
			}
			key := func(attrs pcommon.Map) string {
				raw := attrs.AsRaw()
				delete(raw, AttrScript)
				return fmt.Sprintf("%s %s %v", m.Name(), kind, raw)
			}
			switch m.Type() {
			case pmetric.MetricTypeSum, pmetric.MetricTypeGauge:
				var dps pmetric.NumberDataPointSlice
				if m.Type() == pmetric.MetricTypeGauge {
					dps = m.Gauge().DataPoints()
				} else {
					dps = m.Sum().DataPoints()
				}
				for i := 0; i < dps.Len(); i++ {
					dp := dps.At(i)
					v := fmt.Sprint(dp.IntValue())
					if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
						v = fmt.Sprint(dp.DoubleValue())
					}
					o.series[key(dp.Attributes())] = v
				}
			case pmetric.MetricTypeHistogram:
				dps := m.Histogram().DataPoints()
				for i := 0; i < dps.Len(); i++ {
					dp := dps.At(i)
					o.series[key(dp.Attributes())] = fmt.Sprintf("count=%d bounds=%v counts=%v", dp.Count(), dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw())
				}
			}
		})
	}
	out.mu.Unlock()
	for _, r := range out.records() {
		o.logs = append(o.logs, fmt.Sprintf("%s %s: %s", severityText(r.severity), r.event, r.body))
	}
	return o
}

// replay feeds a captured stdout to the handler of one script (sc, its
// Program the script's text) and returns what came out and the counters.
func replay(t *testing.T, capture string, sc ScriptConfig) (outcome, Counters) {
	t.Helper()
	out := &sink{}
	r, err := New(Config{Scripts: []ScriptConfig{sc}}, zap.NewNop(), out)
	require.NoError(t, err)
	r.batch.start()
	s := r.scripts[0]
	text, err := s.spec.text()
	require.NoError(t, err)
	h := &runHandler{s: s, fns: mapFunctions(text), tmpPath: "testdata/versions/" + sc.Name + ".bt", display: sc.Name}
	f, err := os.Open(capture)
	require.NoError(t, err)
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := readLine(br, maxRecordBytes)
		if len(line) > 0 {
			h.handleRecord(line, time.Unix(100, 0))
		}
		if err != nil {
			break
		}
	}
	h.flushLine()
	r.batch.shutdown()
	return outcomeOf(out), r.Counters()[sc.Name]
}

func selfprintScript(t *testing.T, maps map[string]MapConfig) ScriptConfig {
	text, err := os.ReadFile("testdata/versions/selfprint.bt")
	require.NoError(t, err)
	return ScriptConfig{Name: "selfprint", Program: string(text), Maps: maps}
}

// TestSelfPrintedMapsAcrossVersions: maps the script prints itself, with no
// maps: entry, become metrics of the type the record and the script say,
// the same on bpftrace 0.17, 0.23 and 0.27; a map of strings is passed on
// as a log record and counted.
func TestSelfPrintedMapsAcrossVersions(t *testing.T) {
	want := map[string]string{
		"bpftrace.selfprint.calls MonotonicSum map[]":              "3",
		"bpftrace.selfprint.bytes MonotonicSum map[]":              "123",
		"bpftrace.selfprint.lo Gauge map[]":                        "3",
		"bpftrace.selfprint.hi Gauge map[]":                        "9",
		"bpftrace.selfprint.mean Gauge map[]":                      "15",
		"bpftrace.selfprint.lat Histogram map[]":                   "count=3 bounds=[0 1 3 7 15 31 63 127] counts=[1 0 0 1 0 0 0 1 0]",
		"bpftrace.selfprint.lin Histogram map[]":                   "count=2 bounds=[19 29 39 49 59 69 79 89 99] counts=[1 0 0 0 0 0 0 0 0 1]",
		"bpftrace.selfprint.s.count MonotonicSum map[]":            "2",
		"bpftrace.selfprint.s.total MonotonicSum map[]":            "40",
		"bpftrace.selfprint.s.average Gauge map[]":                 "20",
		"bpftrace.selfprint.bykey MonotonicSum map[key:1 key.1:a]": "1",
		"bpftrace.selfprint.bykey MonotonicSum map[key:2 key.1:b]": "2",
		"bpftrace.selfprint.sk.count MonotonicSum map[key:x]":      "1",
		"bpftrace.selfprint.sk.total MonotonicSum map[key:x]":      "4",
		"bpftrace.selfprint.sk.average Gauge map[key:x]":           "4",
	}
	strMap := `INFO bpftrace.map: {"type": "map", "data": {"@str": {"k": "text"}}}`
	var first outcome
	for i, v := range capturedVersions {
		t.Run(v, func(t *testing.T) {
			got, c := replay(t, "testdata/versions/"+v+"/selfprint.jsonl", selfprintScript(t, nil))
			assert.Equal(t, want, got.series)
			// print() and bpftrace's print of every map at exit: twice.
			assert.Equal(t, []string{"INFO : selfprint start", strMap, "INFO : 7", strMap}, got.logs)
			assert.Equal(t, map[string]uint64{"map": 2}, c.Unmapped, "the map of strings, printed twice")
			assert.Zero(t, c.ParseErrors)
			if i == 0 {
				first = got
			} else {
				assert.Equal(t, first, got, "bpftrace %s gives what %s gives", v, capturedVersions[0])
			}
		})
	}
}

// TestListedMapOverridesAuto: a maps: entry still sets the name, type and
// attributes of a map the script prints itself.
func TestListedMapOverridesAuto(t *testing.T) {
	for _, v := range capturedVersions {
		t.Run(v, func(t *testing.T) {
			got, _ := replay(t, "testdata/versions/"+v+"/selfprint.jsonl", selfprintScript(t, map[string]MapConfig{
				"@calls": {Type: MapTypeGauge, Name: "calls.now"},
				"@bykey": {Type: MapTypeSum, Attributes: []string{"num"}, Monotonic: new(bool)},
			}))
			assert.Equal(t, "3", got.series["calls.now Gauge map[]"])
			assert.Equal(t, "2", got.series["bpftrace.selfprint.bykey Sum map[key1:b num:2]"])
			assert.NotContains(t, got.metricNames(), "bpftrace.selfprint.calls")
			assert.Contains(t, got.metricNames(), "bpftrace.selfprint.bytes", "the unlisted maps are still exported")
		})
	}
}

// TestNewerRecordTypes: bpftrace 0.27's errorf and warnf are ERROR and WARN
// log records, tseries a Gauge of the latest interval, an unsigned 32-bit
// value prints as it is, and test_result and benchmark_result (--test,
// --bench) are passed on as they are and counted by type.
func TestNewerRecordTypes(t *testing.T) {
	text, err := os.ReadFile("testdata/versions/newer.bt")
	require.NoError(t, err)
	sc := ScriptConfig{Name: "newer", Program: string(text)}
	got, c := replay(t, "testdata/versions/0.27/newer.jsonl", sc)
	assert.Equal(t, map[string]string{
		"bpftrace.newer.ts Gauge map[]":       "7",
		"bpftrace.newer.tsk Gauge map[key:1]": "2",
	}, got.series)
	assert.Equal(t, []string{
		"ERROR bpftrace.errorf: an errorf 3 at newer:5:3",
		"WARN bpftrace.warnf: a warnf x at newer:6:3",
		"INFO : 4294967295",
	}, got.logs)
	assert.Empty(t, c.Unmapped)

	got, c = replay(t, "testdata/versions/0.27/newer_test.jsonl", sc)
	assert.Equal(t, map[string]uint64{"test_result": 2}, c.Unmapped)
	require.Len(t, got.logs, 2)
	assert.True(t, strings.HasPrefix(got.logs[0], `INFO bpftrace.test_result: {"type": "test_result", "data": {"passes": `), got.logs[0])

	got, c = replay(t, "testdata/versions/0.27/newer_bench.jsonl", sc)
	assert.Equal(t, map[string]uint64{"benchmark_result": 1}, c.Unmapped)
	require.Len(t, got.logs, 1)
	assert.Contains(t, got.logs[0], `"iters": 40000`)
}

func TestMapFunctions(t *testing.T) {
	got := mapFunctions(`
		// @commented = count();
		tracepoint:x { @c[pid, comm] = count(); @s = sum(args.bytes); @lat[$k[0]] = hist(1); }
		BEGIN { @m = min(1); @ = count(); @plain = 5; printf("@fake = sum(1)"); @both = min(1); @both = max(2); }`)
	assert.Equal(t, map[string]string{"@c": "count", "@s": "sum", "@lat": "hist", "@m": "min", "@": "count"}, got)
}

func TestKeyAttributeNames(t *testing.T) {
	auto := &mapSpec{auto: true}
	listed := &mapSpec{attributes: []string{"comm"}}
	assert.Equal(t, []string{"key", "key.1", "key.2"}, []string{auto.keyAttribute(0), auto.keyAttribute(1), auto.keyAttribute(2)})
	assert.Equal(t, []string{"comm", "key1"}, []string{listed.keyAttribute(0), listed.keyAttribute(1)})
}
