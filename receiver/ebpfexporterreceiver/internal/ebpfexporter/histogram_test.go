// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// TestHistogramBounds pins ebpf_exporter's upper bound ("le") of every
// bucket index for each bucket type.
func TestHistogramTransform(t *testing.T) {
	l, err := spec.HistogramLayout(spec.Histogram{BucketType: spec.HistogramBucketExp2, BucketMin: 1, BucketMax: 3, BucketMultiplier: 0.5})
	require.NoError(t, err)
	v := histogramValue{counts: make([]uint64, len(l.Keys))}
	for le, value := range map[float64]uint64{
		0: 100, // below bucket_min: ignored
		1: 3,
		3: 4,  // bucket 2 missing: zero
		4: 40, // sum key (bucket_max + 1)
		9: 7,  // above: ignored
	} {
		v.set(l, le, value)
	}
	v.set(l, 1, 3) // set again: replaced, not added
	v.finish(l)
	assert.Equal(t, []uint64{3, 0, 4}, v.counts)
	assert.Equal(t, uint64(7), v.count)
	assert.Equal(t, 20.0, v.sum)
}
