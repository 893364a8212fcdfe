// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftracereceiver

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"
	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

func bodies(all []plog.Logs) []string {
	var out []string
	for _, ld := range all {
		testutil.EachLogRecord(ld, func(lr plog.LogRecord) { out = append(out, lr.Body().AsString()) })
	}
	return out
}

func metricNames(all []pmetric.Metrics) map[string]bool {
	out := map[string]bool{}
	for _, md := range all {
		testutil.EachMetric(md, func(m pmetric.Metric) { out[m.Name()] = true })
	}
	return out
}

// One receiver instance in a logs and a metrics pipeline runs the real
// bpftrace once: printed lines reach the logs pipeline, the listed map the
// metrics pipeline, and its supervisor counters the telemetry.
func TestReceiverRunsScriptForBothPipelines(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("bpftrace"); err != nil {
		t.Fatalf("bpftrace is not installed (make deps installs it): %v", err)
	}
	cfg := &Config{Config: bpftrace.Config{Scripts: []bpftrace.ScriptConfig{{
		Name:         "ticks",
		Program:      `BEGIN { printf("receiver-test hello\n"); @str["k"] = "v"; print(@str); } interval:ms:50 { @ticks = count(); }`,
		PullInterval: 200 * time.Millisecond,
		Maps:         map[string]bpftrace.MapConfig{"@ticks": {Type: bpftrace.MapTypeSum}},
	}}}}
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tel)
	logs, metrics := new(consumertest.LogsSink), new(consumertest.MetricsSink)
	lr, err := NewFactory().CreateLogs(context.Background(), set, cfg, logs)
	require.NoError(t, err)
	mr, err := NewFactory().CreateMetrics(context.Background(), set, cfg, metrics)
	require.NoError(t, err)
	require.Same(t, lr, mr, "one instance serves both pipelines")
	require.NoError(t, lr.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, mr.Start(context.Background(), componenttest.NewNopHost()))

	require.Eventually(t, func() bool {
		return metricNames(metrics.AllMetrics())["bpftrace.ticks.ticks"]
	}, 30*time.Second, 50*time.Millisecond, "the @ticks map as a metric")
	assert.Contains(t, bodies(logs.AllLogs()), "receiver-test hello")

	for _, name := range []string{"restarts", "start_failures", "lost_events", "parse_errors"} {
		m, err := tel.GetMetric("otelcol_receiver_bpftrace_" + name)
		require.NoError(t, err, "the supervisor's counters are exported")
		sum, ok := m.Data.(metricdata.Sum[int64])
		require.True(t, ok, name)
		require.Len(t, sum.DataPoints, 1, name)
		v, _ := sum.DataPoints[0].Attributes.Value("script")
		assert.Equal(t, "ticks", v.AsString())
		assert.Zero(t, sum.DataPoints[0].Value, "%s: the script ran once, cleanly", name)
	}

	// print(@str): a map of strings, passed on as a log record and counted.
	assert.Contains(t, bodies(logs.AllLogs()), `{"type": "map", "data": {"@str": {"k": "v"}}}`)
	m, err := tel.GetMetric("otelcol_receiver_bpftrace_unmapped")
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok)
	require.Len(t, sum.DataPoints, 1)
	typ, _ := sum.DataPoints[0].Attributes.Value("type")
	assert.Equal(t, "map", typ.AsString())
	assert.Equal(t, int64(1), sum.DataPoints[0].Value)

	require.NoError(t, lr.Shutdown(context.Background()))
	require.NoError(t, mr.Shutdown(context.Background()))
}
