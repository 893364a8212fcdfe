// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporterreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/ebpfexporter"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadata"
)

// The budget's fields reach the exporter that enforces them, and the
// defaults are the documented ones.
func TestConfigLimitsArrive(t *testing.T) {
	def := createDefaultConfig()
	assert.Equal(t, ebpfexporter.DefaultMaxSeries, def.MaxSeries)
	assert.Equal(t, int64(ebpfexporter.DefaultMaxMemory), def.MaxMemory)
	assert.Equal(t, ebpfexporter.DefaultMaxQueuedSpans, def.MaxQueuedSpans)

	cfg := loadConfig(t, "limits")
	require.NoError(t, confmap.Validate(cfg))
	r, err := sharedReceiver(receivertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Shutdown(t.Context()) })
	st := r.C.ee.Stats()
	assert.Equal(t, int64(7), st.MaxSeries)
	assert.Equal(t, int64(12345), st.MaxMemory)
	assert.Equal(t, int64(3), st.MaxQueuedSpans)
}

func TestConfigNegativeLimits(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "negative_limits"))
	require.Error(t, err)
	for _, want := range []string{
		"max_series: -1 is negative; use 0 for the default (50000) or a positive count",
		"max_memory: -2 is negative; use 0 for the default (33554432 bytes) or a positive byte count",
		"max_queued_spans: -3 is negative; use 0 for the default (8192) or a positive count",
	} {
		assert.Contains(t, err.Error(), want)
	}
}
