// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spec

import (
	"fmt"
	"math"
)

// BucketLayout is a histogram's buckets as ebpf_exporter reads them: the
// bucket index values to look up in the map, in order, the upper bound
// each one is exported as, and the index holding the sum.
type BucketLayout struct {
	Keys       []float64       // bucket label values, as float64(strconv.ParseUint(label))
	Bounds     []float64       // exported upper bound ("le") of each key
	SumKey     float64         // key whose value, times the multiplier, is the sum
	Multiplier float64         // bucket_multiplier, 1 when unset
	index      map[float64]int // position of each key in Keys
}

// HistogramLayout computes the layout of h, or says why ebpf_exporter
// would fail it (or why its output would not be a histogram at all:
// bounds that do not strictly increase).
func HistogramLayout(h Histogram) (*BucketLayout, error) {
	mult := h.BucketMultiplier
	if mult == 0 {
		mult = 1
	}
	if math.IsNaN(mult) || math.IsInf(mult, 0) {
		return nil, fmt.Errorf("bucket_multiplier %v is not a finite number", h.BucketMultiplier)
	}
	l := &BucketLayout{Multiplier: mult}
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
		l.Keys = append(l.Keys, h.BucketKeys...)
		l.SumKey = h.BucketKeys[len(h.BucketKeys)-1] + 1
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
			l.Keys = append(l.Keys, float64(i))
		}
		l.SumKey = float64(h.BucketMax + 1)
	}
	for i, k := range l.Keys {
		b := keyer(k)
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("bucket %v has upper bound %v, not a finite number", k, b)
		}
		if i > 0 && b <= l.Bounds[i-1] {
			return nil, fmt.Errorf("bucket %v has upper bound %v, not above the previous bucket's %v: bounds must strictly increase", k, b, l.Bounds[i-1])
		}
		l.Bounds = append(l.Bounds, b)
	}
	l.index = make(map[float64]int, len(l.Keys))
	for i, k := range l.Keys {
		l.index[k] = i
	}
	return l, nil
}

// KeyIndex returns the position of bucket index key in the layout, if it
// is one of its keys.
func (l *BucketLayout) KeyIndex(key float64) (int, bool) {
	i, ok := l.index[key]
	return i, ok
}
