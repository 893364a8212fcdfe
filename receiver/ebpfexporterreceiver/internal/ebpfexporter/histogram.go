// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"fmt"
	"math"
)

// bucketLayout is a histogram's buckets as ebpf_exporter reads them: the
// bucket index values to look up in the map, in order, the upper bound
// each one is exported as, and the index holding the sum.
type bucketLayout struct {
	keys   []float64       // bucket label values, as float64(strconv.ParseUint(label))
	bounds []float64       // exported upper bound ("le") of each key
	sumKey float64         // key whose value, times the multiplier, is the sum
	mult   float64         // bucket_multiplier, 1 when unset
	index  map[float64]int // position of each key in keys
}

// histogramBounds computes the layout of h, or says why ebpf_exporter
// would fail it (or why its output would not be a histogram at all:
// bounds that do not strictly increase).
func histogramBounds(h Histogram) (*bucketLayout, error) {
	mult := h.BucketMultiplier
	if mult == 0 {
		mult = 1
	}
	if math.IsNaN(mult) || math.IsInf(mult, 0) {
		return nil, fmt.Errorf("bucket_multiplier %v is not a finite number", h.BucketMultiplier)
	}
	l := &bucketLayout{mult: mult}
	var keyer func(float64) float64
	switch h.BucketType {
	case HistogramBucketExp2:
		keyer = func(b float64) float64 { return math.Exp2(b) * mult }
	case HistogramBucketExp2WithZero:
		keyer = func(b float64) float64 {
			if b == 0 {
				return 0
			}
			return math.Exp2(b-1) * mult
		}
	case HistogramBucketLinear, HistogramBucketFixed:
		keyer = func(b float64) float64 { return b * mult }
	case "":
		return nil, fmt.Errorf("bucket_type: missing (want exp2, exp2zero, linear or fixed)")
	default:
		return nil, fmt.Errorf("bucket_type: unknown histogram type: %q (want exp2, exp2zero, linear or fixed)", h.BucketType)
	}

	if h.BucketType == HistogramBucketFixed {
		if len(h.BucketKeys) == 0 {
			return nil, fmt.Errorf("bucket_keys: histogram buckets have zero size: len(bucket_keys) = 0")
		}
		l.keys = append(l.keys, h.BucketKeys...)
		l.sumKey = h.BucketKeys[len(h.BucketKeys)-1] + 1
	} else {
		if h.BucketMax == h.BucketMin {
			return nil, fmt.Errorf("bucket_max: histogram buckets have zero size: [bucket_min .. bucket_max] = [%d .. %d]", h.BucketMin, h.BucketMax)
		}
		if h.BucketMax < h.BucketMin {
			return nil, fmt.Errorf("bucket_max: bucket_max %d is below bucket_min %d", h.BucketMax, h.BucketMin)
		}
		if h.BucketMax-h.BucketMin > 4096 {
			return nil, fmt.Errorf("bucket_max: %d buckets is more than the 4096 this receiver accepts", h.BucketMax-h.BucketMin+1)
		}
		for i := h.BucketMin; i <= h.BucketMax; i++ {
			l.keys = append(l.keys, float64(i))
		}
		l.sumKey = float64(h.BucketMax + 1)
	}
	for i, k := range l.keys {
		b := keyer(k)
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("bucket %v has upper bound %v, not a finite number", k, b)
		}
		if i > 0 && b <= l.bounds[i-1] {
			return nil, fmt.Errorf("bucket %v has upper bound %v, not above the previous bucket's %v: bounds must strictly increase", k, b, l.bounds[i-1])
		}
		l.bounds = append(l.bounds, b)
	}
	l.index = make(map[float64]int, len(l.keys))
	for i, k := range l.keys {
		l.index[k] = i
	}
	return l, nil
}

// histogramValue is one exported histogram: per-bucket (not cumulative)
// counts in layout order, their total and the sum.
type histogramValue struct {
	counts []uint64
	count  uint64
	sum    float64
	sumRaw uint64 // the sum key's value, before the multiplier
}

// set records the map's value for bucket index le into v (v.counts has
// one element per layout key): an index outside the layout is ignored, the
// sum key's value is kept for finish. A later value for the same index
// replaces the earlier one; buckets never set count zero.
func (l *bucketLayout) set(v *histogramValue, le float64, value uint64) {
	if i, ok := l.index[le]; ok {
		v.counts[i] = value
	}
	if le == l.sumKey {
		v.sumRaw = value
	}
}

// finish computes v's total count and its sum (the sum key's value times
// the multiplier) once every bucket is set.
func (l *bucketLayout) finish(v *histogramValue) {
	v.count = 0
	for _, c := range v.counts {
		v.count += c
	}
	v.sum = float64(v.sumRaw) * l.mult
}
