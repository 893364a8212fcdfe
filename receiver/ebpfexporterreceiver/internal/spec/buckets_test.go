// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistogramBounds pins ebpf_exporter's upper bound ("le") of every
// bucket index for each bucket type.
func TestHistogramBounds(t *testing.T) {
	for _, c := range []struct {
		name   string
		h      Histogram
		keys   []float64
		bounds []float64
		sumKey float64
	}{
		{
			name:   "exp2: le = 2^i * multiplier",
			h:      Histogram{BucketType: HistogramBucketExp2, BucketMin: 0, BucketMax: 4},
			keys:   []float64{0, 1, 2, 3, 4},
			bounds: []float64{1, 2, 4, 8, 16},
			sumKey: 5,
		},
		{
			name:   "exp2 with multiplier and min",
			h:      Histogram{BucketType: HistogramBucketExp2, BucketMin: 2, BucketMax: 4, BucketMultiplier: 0.001},
			keys:   []float64{2, 3, 4},
			bounds: []float64{0.004, 0.008, 0.016},
			sumKey: 5,
		},
		{
			name:   "exp2zero: le(0) = 0, le(i) = 2^(i-1) * multiplier",
			h:      Histogram{BucketType: HistogramBucketExp2WithZero, BucketMin: 0, BucketMax: 4},
			keys:   []float64{0, 1, 2, 3, 4},
			bounds: []float64{0, 1, 2, 4, 8},
			sumKey: 5,
		},
		{
			name:   "linear: le = i * multiplier",
			h:      Histogram{BucketType: HistogramBucketLinear, BucketMin: 0, BucketMax: 3, BucketMultiplier: 0.5},
			keys:   []float64{0, 1, 2, 3},
			bounds: []float64{0, 0.5, 1, 1.5},
			sumKey: 4,
		},
		{
			name:   "fixed: le = key * multiplier, sum at last key + 1",
			h:      Histogram{BucketType: HistogramBucketFixed, BucketKeys: []float64{1, 10, 100}, BucketMultiplier: 2},
			keys:   []float64{1, 10, 100},
			bounds: []float64{2, 20, 200},
			sumKey: 101,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := HistogramLayout(c.h)
			require.NoError(t, err)
			assert.Equal(t, c.keys, l.Keys)
			assert.InDeltaSlice(t, c.bounds, l.Bounds, 1e-12)
			assert.Equal(t, c.sumKey, l.SumKey)
		})
	}
}

func TestHistogramBoundsErrors(t *testing.T) {
	for _, c := range []struct {
		h   Histogram
		msg string
	}{
		{Histogram{BucketType: "exp3", BucketMax: 2}, `unknown histogram type: "exp3"`},
		{Histogram{BucketType: HistogramBucketExp2, BucketMin: 3, BucketMax: 3}, "histogram buckets have zero size: [bucket_min .. bucket_max] = [3 .. 3]"},
		{Histogram{BucketType: HistogramBucketExp2, BucketMin: 3, BucketMax: 1}, "bucket_max 1 is below bucket_min 3"},
		{Histogram{BucketType: HistogramBucketFixed}, "len(bucket_keys) = 0"},
		{Histogram{BucketType: HistogramBucketFixed, BucketKeys: []float64{5, 1}}, "bounds must strictly increase"},
		{Histogram{BucketType: HistogramBucketLinear, BucketMax: 3, BucketMultiplier: -1}, "bounds must strictly increase"},
		{Histogram{BucketType: HistogramBucketExp2, BucketMin: 1000, BucketMax: 1100}, "not a finite number"},
	} {
		_, err := HistogramLayout(c.h)
		require.Error(t, err, "%+v", c.h)
		assert.Contains(t, err.Error(), c.msg)
	}
}
