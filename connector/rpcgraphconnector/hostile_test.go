// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// hostile is a connector with node_attributes [host.name, process.pid] (as
// config/grpc-red.yaml sets) and a clock the test moves.
func hostile(t *testing.T, set func(*Config)) (*rpcgraph, *time.Time, *observer.ObservedLogs) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.NodeAttributes = []string{"host.name", "process.pid"}
	set(cfg)
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zap.WarnLevel)
	g := newConnector(zap.New(core), cfg, consumertest.NewNop())
	clock := time.Unix(100, 0)
	g.now = func() time.Time { return clock }
	return g, &clock, logs
}

// An unprivileged user pairs calls between processes it forks (each pid a
// node) until max_edges edges are counted. Edges never went away: long
// after the attacker stopped (or, with no attacker, after enough pid churn)
// every new edge, the host's real ones included, was edges_full for the
// collector's lifetime. An edge with no call for metrics_expiration is
// forgotten, so new edges are counted again.
func TestHostileEdgesFilledForever(t *testing.T) {
	g, clock, _ := hostile(t, func(c *Config) { c.MaxEdges = 4 })
	td := ptrace.NewTraces()
	for i := range 4 {
		call(td, ptrace.SpanKindClient, int64(1000+i), byte(i+1), 1, time.Millisecond, false)
		call(td, ptrace.SpanKindServer, 2000, byte(i+1), 1, time.Millisecond, false)
	}
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	_, ok := g.collect()
	require.True(t, ok)

	*clock = clock.Add(g.cfg.MetricsExpiration + time.Second)
	_, _ = g.collect()
	td = ptrace.NewTraces()
	call(td, ptrace.SpanKindClient, 10, 100, 1, time.Millisecond, false)
	call(td, ptrace.SpanKindServer, 20, 100, 1, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	md, ok := g.collect()
	require.True(t, ok)
	p := points(t, md)
	assert.Equal(t, 1.0, p[metricRequests+" h/10>h/20"], "the host's new edge is counted")
	assert.Zero(t, p[metricUnpaired+" "+reasonEdgesFull])
	assert.NotContains(t, p, metricRequests+" h/1000>h/2000", "the idle edge is no longer exported")
}

// One process makes calls whose other end never comes (to a remote host,
// or cut before the server's span): store::max_items of them at once, and
// every other process's calls were store_full until they expired. One node
// now holds at most store::max_items_per_node waiting calls; its calls
// beyond are counted node_store_full and the others' still pair.
func TestHostileStoreFilledByOneProcess(t *testing.T) {
	g, _, logs := hostile(t, func(c *Config) { c.Store.MaxItems = 100; c.Store.MaxItemsPerNode = 10 })
	td := ptrace.NewTraces()
	for i := range 200 {
		call(td, ptrace.SpanKindClient, 666, byte(i), 1, time.Millisecond, false)
	}
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	td = ptrace.NewTraces()
	call(td, ptrace.SpanKindClient, 10, 250, 2, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	td = ptrace.NewTraces()
	call(td, ptrace.SpanKindServer, 20, 250, 2, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	md, ok := g.collect()
	require.True(t, ok)
	p := points(t, md)
	assert.Equal(t, 1.0, p[metricRequests+" h/10>h/20"], "the other process's call is paired")
	assert.Equal(t, 190.0, p[metricUnpaired+" "+reasonNodeStoreFull])
	assert.Zero(t, p[metricUnpaired+" "+reasonStoreFull])
	// The operator is told which process floods.
	warned := logs.FilterMessageSnippet("state full").All()
	require.Len(t, warned, 1)
	assert.Equal(t, "h/666", warned[0].ContextMap()["most_waiting_node"])
	assert.Equal(t, int64(10), warned[0].ContextMap()["most_waiting"])
	assert.Equal(t, uint64(190), warned[0].ContextMap()[reasonNodeStoreFull])
	_, ok = g.collect()
	assert.False(t, ok)
	assert.Equal(t, 1, logs.FilterMessageSnippet("state full").Len(), "once per flush that pushed calls out")
}

// Many processes (a user forks them) each make a few calls that never pair,
// faster than store::ttl lets them go: with max_items waiting, a new call
// was store_full, so the host's calls went unpaired as long as the flood
// lasted. The oldest call waiting now gives way instead: a call whose other
// end comes before the flood has pushed max_items newer ones still pairs.
// And a node's evicted last call leaves no state behind.
func TestHostileStoreFilledByManyProcesses(t *testing.T) {
	g, _, _ := hostile(t, func(c *Config) { c.Store.MaxItems = 100; c.Store.MaxItemsPerNode = 1 })
	flood := func(from, to int) {
		td := ptrace.NewTraces()
		for i := from; i < to; i++ {
			call(td, ptrace.SpanKindClient, int64(1000+i), byte(i), 1, time.Millisecond, false)
		}
		require.NoError(t, g.ConsumeTraces(context.Background(), td))
	}
	flood(0, 100)
	td := ptrace.NewTraces()
	call(td, ptrace.SpanKindClient, 10, 250, 2, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	flood(100, 150)
	td = ptrace.NewTraces()
	call(td, ptrace.SpanKindServer, 20, 250, 2, time.Millisecond, false)
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	md, ok := g.collect()
	require.True(t, ok)
	p := points(t, md)
	assert.Equal(t, 1.0, p[metricRequests+" h/10>h/20"], "the host's call is paired")
	assert.Equal(t, 51.0, p[metricUnpaired+" "+reasonStoreFull])
	assert.Len(t, g.waiting, 99)
	assert.Len(t, g.perNode, 99, "no list left for an evicted node")
}

// The node names are the values of attributes whoever made the call may
// choose (server.address is the client's :authority, service.name the
// sender's when the traces come from OTLP): max_items waiting calls and
// max_edges edges bounded the count, not the bytes, each holding one or two
// names of any length. A node longer than max_node_length is not paired
// (node_too_long), so the state is at most (max_items + 2 max_edges)
// max_node_length bytes of names.
func TestHostileLongNodeNames(t *testing.T) {
	g, _, _ := hostile(t, func(c *Config) { c.NodeAttributes = []string{"server.address"}; c.MaxNodeLength = 256 })
	long := strings.Repeat("a", 1<<20)
	td := ptrace.NewTraces()
	for i := range 4 {
		call(td, ptrace.SpanKindClient, 10, byte(i), 1, time.Millisecond, false)
		call(td, ptrace.SpanKindServer, 20, byte(i), 1, time.Millisecond, false)
	}
	for i := range td.ResourceSpans().Len() {
		s := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		s.Attributes().PutStr("server.address", long[:(i%2+1)*256])
	}
	require.NoError(t, g.ConsumeTraces(context.Background(), td))
	md, ok := g.collect()
	require.True(t, ok)
	p := points(t, md)
	assert.Equal(t, 4.0, p[metricUnpaired+" "+reasonNodeTooLong], "the server spans' 512-byte nodes")
	assert.Equal(t, 4.0, p[metricUnpaired+" "+reasonExpired]+float64(len(g.waiting)), "the client spans wait")
	assert.Empty(t, g.edges)
}
