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

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
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

// Every field reaches the code it configures: config_dir and names load
// the fixtures, strict fails the config whose kprobe cannot attach (where
// kprobes are missing), collection_interval and initial_delay pace the
// collections, and timeout bounds each: with 1ns every collection is cut
// before the first config and only the receiver's own series arrive,
// delivered as a partial scrape (on main the timeout reached nothing).
func TestConfigFieldsArrive(t *testing.T) {
	testutil.RequireRoot(t)
	run := func(t *testing.T, timeout time.Duration) (*ebpfReceiver, *consumertest.MetricsSink) {
		cfg := createDefaultConfig()
		cfg.ConfigDir = testutil.ArchDir("../../testdata/ebpf_exporter")
		cfg.Names = []string{"ebpfx_counters", "ebpfx_partial"}
		cfg.Strict = true
		cfg.CollectionInterval = 150 * time.Millisecond
		cfg.InitialDelay = 10 * time.Millisecond
		cfg.Timeout = timeout
		testutil.AssertEveryFieldSet(t, cfg)
		require.NoError(t, cfg.Validate())
		set := metadatatest.NewSettings(componenttest.NewTelemetry())
		sink := new(consumertest.MetricsSink)
		rcv, err := NewFactory().CreateMetrics(context.Background(), set, cfg, sink)
		require.NoError(t, err)
		shared, err := sharedReceiver(set, cfg)
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { assert.NoError(t, rcv.Shutdown(context.Background())) })
		require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 6 }, 5*time.Second, 10*time.Millisecond,
			"six collections, 150ms apart from 10ms on (the defaults: 1s, then every 10s)")
		assert.Less(t, time.Since(start), 3*time.Second)
		return shared.C, sink
	}

	t.Run("loaded", func(t *testing.T) {
		r, sink := run(t, 5*time.Second)
		progs := r.ee.Programs()
		require.Contains(t, progs, "ebpfx_counters", "config_dir and names")
		require.Contains(t, progs, "ebpfx_partial")
		if kerr := progs["ebpfx_partial"]["ebpfx_partial_kprobe"]; kerr != nil {
			assert.Contains(t, r.ee.Failures(), "ebpfx_partial", "strict: a program that cannot attach fails its config (%v)", kerr)
		} else {
			t.Log("kprobes attach on this kernel: strict has nothing to fail")
		}
		assert.GreaterOrEqual(t, sumOf(sink.AllMetrics()[len(sink.AllMetrics())-1], "ebpfx_getppid_calls_total"), int64(0), "the config's series arrive")
	})
	t.Run("timeout", func(t *testing.T) {
		_, sink := run(t, time.Nanosecond)
		for _, md := range sink.AllMetrics() {
			assert.Equal(t, int64(-1), sumOf(md, "ebpfx_getppid_calls_total"), "no config is read within 1ns")
		}
	})
}
