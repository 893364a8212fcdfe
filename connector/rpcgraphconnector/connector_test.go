// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// call appends a span of one end of a call: the client span has id span,
// the server span is its child.
func call(td ptrace.Traces, kind ptrace.SpanKind, pid int64, trace, span byte, d time.Duration, failed bool) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("host.name", "h")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetKind(kind)
	s.SetTraceID(pcommon.TraceID{trace})
	s.Attributes().PutInt("process.pid", pid)
	if kind == ptrace.SpanKindClient {
		s.SetSpanID(pcommon.SpanID{span})
	} else {
		s.SetSpanID(pcommon.SpanID{span, 1})
		s.SetParentSpanID(pcommon.SpanID{span})
	}
	s.SetStartTimestamp(1e9)
	s.SetEndTimestamp(pcommon.Timestamp(1e9 + d.Nanoseconds()))
	if failed {
		s.Status().SetCode(ptrace.StatusCodeError)
	}
}

// points reads the collected metrics as "name client>server" (or "name
// reason") -> value (the count for histograms).
func points(t *testing.T, md pmetric.Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		m := ms.At(i)
		label := func(a pcommon.Map) string {
			if r, ok := a.Get(attrReason); ok {
				return m.Name() + " " + r.Str()
			}
			c, _ := a.Get(attrClient)
			s, _ := a.Get(attrServer)
			return m.Name() + " " + c.Str() + ">" + s.Str()
		}
		switch m.Type() {
		case pmetric.MetricTypeSum:
			for j := range m.Sum().DataPoints().Len() {
				dp := m.Sum().DataPoints().At(j)
				out[label(dp.Attributes())] = float64(dp.IntValue())
			}
		case pmetric.MetricTypeHistogram:
			for j := range m.Histogram().DataPoints().Len() {
				dp := m.Histogram().DataPoints().At(j)
				out[label(dp.Attributes())] = float64(dp.Count())
				out[label(dp.Attributes())+" sum"] = dp.Sum()
				assert.Equal(t, dp.Count(), sumOf(dp.BucketCounts().AsRaw()))
			}
		default:
			t.Fatalf("metric %s of type %v", m.Name(), m.Type())
		}
	}
	return out
}

func sumOf(v []uint64) uint64 {
	var n uint64
	for _, x := range v {
		n += x
	}
	return n
}

func TestPairsClientAndServer(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.NodeAttributes = []string{"host.name", "process.pid"}
	cfg.Store.MaxItems = 3
	require.NoError(t, cfg.Validate())
	g := newConnector(zap.NewNop(), cfg, consumertest.NewNop())
	clock := time.Unix(100, 0)
	g.now = func() time.Time { return clock }

	td := ptrace.NewTraces()
	// Two calls 10 -> 20, the server span first in one of them; one failed.
	call(td, ptrace.SpanKindServer, 20, 1, 1, 20*time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 1, 1, 30*time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 2, 1, 3*time.Millisecond, true)
	call(td, ptrace.SpanKindServer, 20, 2, 1, 2*time.Millisecond, false)
	// A call 30 -> 20 whose server span comes in the next batch.
	call(td, ptrace.SpanKindClient, 30, 3, 1, time.Millisecond, false)
	// A client whose server is never seen, a server without a parent.
	call(td, ptrace.SpanKindClient, 10, 4, 1, time.Millisecond, false)
	noParent := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	noParent.SetKind(ptrace.SpanKindServer)
	// Internal spans pass unseen.
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetKind(ptrace.SpanKindInternal)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))

	td = ptrace.NewTraces()
	call(td, ptrace.SpanKindServer, 20, 3, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 4, 1, time.Millisecond, false) // the same end again
	// One waiting already (trace 4); the store holds 3.
	call(td, ptrace.SpanKindClient, 10, 5, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 6, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 7, 1, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))

	clock = clock.Add(cfg.Store.TTL)
	md, ok := g.collect()
	require.True(t, ok)
	assert.Equal(t, map[string]float64{
		metricRequests + " h/10>h/20": 2, metricFailed + " h/10>h/20": 1,
		metricServerSeconds + " h/10>h/20": 2, metricServerSeconds + " h/10>h/20 sum": 0.022,
		metricClientSeconds + " h/10>h/20": 2, metricClientSeconds + " h/10>h/20 sum": 0.033,
		metricRequests + " h/30>h/20": 1, metricFailed + " h/30>h/20": 0,
		metricServerSeconds + " h/30>h/20": 1, metricServerSeconds + " h/30>h/20 sum": 0.001,
		metricClientSeconds + " h/30>h/20": 1, metricClientSeconds + " h/30>h/20 sum": 0.001,
		metricUnpaired + " " + reasonNoParent:  1,
		metricUnpaired + " " + reasonDuplicate: 1,
		metricUnpaired + " " + reasonStoreFull: 1, // trace 7
		metricUnpaired + " " + reasonExpired:   3, // traces 4, 5 and 6
	}, points(t, md))
	_, ok = g.collect()
	assert.False(t, ok, "nothing changed since")
}

func TestUnnamedAndEdgesFull(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.NodeAttributes = []string{"process.pid"}
	cfg.MaxEdges = 1
	g := newConnector(zap.NewNop(), cfg, consumertest.NewNop())
	td := ptrace.NewTraces()
	call(td, ptrace.SpanKindClient, 10, 1, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindServer, 20, 1, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 30, 2, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindServer, 20, 2, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindClient, 10, 3, 1, time.Millisecond, false)
	td.ResourceSpans().At(4).ScopeSpans().At(0).Spans().At(0).Attributes().Clear()
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	md, ok := g.collect()
	require.True(t, ok)
	p := points(t, md)
	assert.Equal(t, 1.0, p[metricRequests+" 10>20"])
	assert.Equal(t, 1.0, p[metricUnpaired+" "+reasonEdgesFull])
	assert.Equal(t, 1.0, p[metricUnpaired+" "+reasonUnnamed])
}

// The flush loop sends the snapshot on to the next consumer.
func TestFlushes(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.NodeAttributes = []string{"process.pid"}
	cfg.MetricsFlushInterval = 100 * time.Millisecond
	sink := new(consumertest.MetricsSink)
	g, err := NewFactory().CreateTracesToMetrics(context.Background(), connectorSettings(), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, g.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	call(td, ptrace.SpanKindClient, 10, 1, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindServer, 20, 1, 1, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) > 0 }, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, g.Shutdown(context.Background()))
	assert.Equal(t, 1.0, points(t, sink.AllMetrics()[0])[metricRequests+" 10>20"])
}

func TestValidate(t *testing.T) {
	cfg := createDefaultConfig()
	require.NoError(t, cfg.Validate())
	cfg.NodeAttributes = []string{""}
	cfg.Store = StoreConfig{}
	cfg.MaxEdges = 0
	cfg.LatencyHistogramBuckets = []time.Duration{time.Second, time.Second}
	cfg.MetricsFlushInterval = 0
	cfg.MetricsExpiration = -time.Second
	err := cfg.Validate()
	for _, field := range []string{"node_attributes[0]", "store::ttl", "store::max_items", "store::max_items_per_node", "max_edges", "metrics_expiration", "latency_histogram_buckets[1]", "metrics_flush_interval"} {
		assert.ErrorContains(t, err, field)
	}
}

func connectorSettings() connector.Settings { return connectortest.NewNopSettings(typ) }
