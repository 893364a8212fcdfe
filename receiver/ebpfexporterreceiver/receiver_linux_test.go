// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporterreceiver

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-seq/otelcol-seq/internal/testutil"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadatatest"
)

// sumOf returns the value of the first data point of the named sum, or -1.
func sumOf(md pmetric.Metrics, name string) int64 {
	v := int64(-1)
	testutil.EachMetric(md, func(m pmetric.Metric) {
		if v < 0 && m.Name() == name && m.Type() == pmetric.MetricTypeSum && m.Sum().DataPoints().Len() > 0 {
			v = m.Sum().DataPoints().At(0).IntValue()
		}
	})
	return v
}

// The receiver loads the fixtures, pulls their maps every collection
// interval through the scraper controller, reports the config it could not
// load in its telemetry while the other runs, and leaves nothing behind.
func TestReceiverPullsEveryInterval(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := createDefaultConfig()
	cfg.ConfigDir = testutil.ArchDir("../../testdata/ebpf_exporter")
	cfg.Names = []string{"ebpfx_counters", "no_such_config"}
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.InitialDelay = 0
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	sink := new(consumertest.MetricsSink)
	rcv, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))

	before := int64(-1)
	require.Eventually(t, func() bool {
		syscall.Getppid()
		all := sink.AllMetrics()
		if len(all) < 3 {
			return false
		}
		if before < 0 {
			before = sumOf(all[0], "ebpfx_getppid_calls_total")
		}
		return sumOf(all[len(all)-1], "ebpfx_getppid_calls_total") > before
	}, 10*time.Second, 20*time.Millisecond, "three collections, the counter growing")

	metadatatest.AssertEqualReceiverEbpfExporterConfigs(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("state", "loaded")), Value: 1},
		{Attributes: attribute.NewSet(attribute.String("state", "failed")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())

	require.NoError(t, rcv.Shutdown(context.Background()))
	n := len(sink.AllMetrics())
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, sink.AllMetrics(), n, "no collection after Shutdown")
}
