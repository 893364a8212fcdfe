// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// FuzzParse feeds arbitrary lines to the JSON parser and what it accepts to
// the line assembler and the metric mapping (every type, and the mapping of
// a map no MapConfig names): nothing may
// panic, and every histogram point must be well formed.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/capture/*.jsonl")
	versions, _ := filepath.Glob("testdata/versions/*/*.jsonl")
	files = append(files, versions...)
	files = append(files, "testdata/newer_format.jsonl")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, maxRecordBytes)
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 && len(line) < 4096 {
				f.Add(append([]byte(nil), line...))
			}
		}
	}
	f.Add([]byte(`{"type": "hist", "data": {"@h": [{"min": 5, "max": 1, "count": 1}, {"count": 2}]}}`))
	f.Add([]byte(`{"type": "stats", "data": {"@s": {"count": "1", "average": 1e308, "total": -1}}}`))
	f.Add([]byte(`{"type": "map", "data": {"@": {"": 1, ",,": 2}}}`))

	specs := []*mapSpec{
		{typ: MapTypeSum, metricName: "s", monotonic: true, attributes: []string{"a"}},
		{typ: MapTypeGauge, metricName: "g"},
		{typ: MapTypeHistogram, metricName: "h", attributes: []string{"a", "b"}},
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := parseRecord(line)
		if err != nil {
			return
		}
		a := lineAssembler{max: 64}
		pl, _, cut := a.add(rec.text, rec.endsLine, time.Unix(0, 0))
		if len(pl.text) > 64 || a.len() > 64 || cut > len(rec.text) {
			t.Fatalf("line %d bytes, pending %d, cut %d of %d", len(pl.text), a.len(), cut, len(rec.text))
		}
		a.flush()
		for _, md := range rec.maps {
			// As a listed map of each type, and as a map no MapConfig names.
			for _, spec := range append(specs, autoMapSpec("fuzz", rec.typ, "count", md)) {
				ms := pmetric.NewMetricSlice()
				n, _ := appendMapMetrics(ms, "fuzz", spec, md, 1, 2)
				points := 0
				for i := 0; i < ms.Len(); i++ {
					m := ms.At(i)
					switch m.Type() {
					case pmetric.MetricTypeSum:
						points += m.Sum().DataPoints().Len()
					case pmetric.MetricTypeGauge:
						points += m.Gauge().DataPoints().Len()
					case pmetric.MetricTypeHistogram:
						dps := m.Histogram().DataPoints()
						points += dps.Len()
						for j := 0; j < dps.Len(); j++ {
							dp := dps.At(j)
							bounds, counts := dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()
							if len(counts) != len(bounds)+1 {
								t.Fatalf("%d counts for %d bounds", len(counts), len(bounds))
							}
							var total uint64
							for _, c := range counts {
								total += c
							}
							if total != dp.Count() {
								t.Fatalf("count %d, buckets sum to %d", dp.Count(), total)
							}
							for k := 1; k < len(bounds); k++ {
								if !(bounds[k] > bounds[k-1]) {
									t.Fatalf("bounds not increasing: %v", bounds)
								}
							}
						}
					}
				}
				if points != n {
					t.Fatalf("reported %d points, appended %d", n, points)
				}
			}
		}
	})
}
