// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import "github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"

// histogramValue is one exported histogram: per-bucket (not cumulative)
// counts in layout order, their total and the sum.
type histogramValue struct {
	counts []uint64
	count  uint64
	sum    float64
	sumRaw uint64 // the sum key's value, before the multiplier
}

// set records the map's value for bucket index le of layout l into v
// (v.counts has one element per layout key): an index outside the layout
// is ignored, the sum key's value is kept for finish. A later value for
// the same index replaces the earlier one; buckets never set count zero.
func (v *histogramValue) set(l *spec.BucketLayout, le float64, value uint64) {
	if i, ok := l.KeyIndex(le); ok {
		v.counts[i] = value
	}
	if le == l.SumKey {
		v.sumRaw = value
	}
}

// finish computes v's total count and its sum (the sum key's value times
// the multiplier) once every bucket is set.
func (v *histogramValue) finish(l *spec.BucketLayout) {
	v.count = 0
	for _, c := range v.counts {
		v.count += c
	}
	v.sum = float64(v.sumRaw) * l.Multiplier
}
