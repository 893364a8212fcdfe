// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

const benchYAML = `
metrics:
  counters:
    - name: syscalls_total
      help: per-CPU, summed, two labels
      labels:
        - name: pid
          size: 4
          decoders: [{name: uint}]
        - name: comm
          size: 16
          decoders: [{name: string}]
  histograms:
    - name: latency_seconds
      help: exp2 by disk
      bucket_type: exp2
      bucket_min: 0
      bucket_max: 15
      bucket_multiplier: 0.000001
      labels:
        - name: disk
          size: 4
          decoders: [{name: uint}]
        - name: bucket
          size: 4
          decoders: [{name: uint}]
`

// benchSeries is how many series each metric of benchYAML has.
const benchSeries = 1024

// BenchmarkConfigMetrics is one collection of an ebpf_exporter config
// without the kernel: map contents (keys and per-CPU values, as read from
// the maps) decoded to label sets and mapped to pdata, per series. The
// label cache is warm, as from the second collection on. "counters": a
// per-CPU counter map of benchSeries keys (pid, comm) on 2 CPUs;
// "histograms": benchSeries histograms (disks) of 16 exp2 buckets each,
// 16 map entries per series.
func BenchmarkConfigMetrics(b *testing.B) {
	cfg, _, err := spec.ParseProgramConfig("bench", "bench.yaml", []byte(benchYAML))
	if err != nil {
		b.Fatal(err)
	}
	var counters, hist []mapEntry
	for i := range uint32(benchSeries) {
		counters = append(counters, entry(cat(u32(1000+i), comm("worker-"+string(rune('a'+i%26)))), uint64(i), 2*uint64(i)))
		for bucket := range uint32(16) {
			hist = append(hist, entry(cat(u32(i), u32(bucket)), uint64(bucket+i)))
		}
	}
	for _, bc := range []struct {
		name     string
		contents map[string]mapContents
	}{
		{"counters", map[string]mapContents{"syscalls_total": {entries: counters, perCPU: true}}},
		{"histograms", map[string]mapContents{"latency_seconds": {entries: hist}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dec := decoder.NewSet(decoder.Env{})
			bud := budget.New(DefaultMaxSeries, DefaultMaxMemory) // as Exporter charges them
			caches := map[string]*labelCache{"syscalls_total": newLabelCache(bud, "bench"), "latency_seconds": newLabelCache(bud, "bench")}
			collect := func() pmetric.Metrics {
				for _, c := range caches {
					c.rotate()
				}
				md := pmetric.NewMetrics()
				sm := newConfigScope(md.ResourceMetrics().AppendEmpty(), cfg.Name)
				if errs := configMetrics(sm, cfg, bc.contents, dec, caches, goldenStart, goldenNow); len(errs) > 0 {
					b.Fatal(errs)
				}
				for _, c := range caches {
					c.sweep()
				}
				return md
			}
			if n := collect().DataPointCount(); n != benchSeries {
				b.Fatalf("%d series, want %d", n, benchSeries)
			}
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				collect()
			}
			runtime.ReadMemStats(&after)
			perSeries := float64(b.N) * benchSeries
			b.ReportMetric(perSeries/b.Elapsed().Seconds(), "series/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perSeries, "ns/series")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perSeries, "allocs/series")
		})
	}
}
