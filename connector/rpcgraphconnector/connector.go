// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/connector/rpcgraphconnector/internal/metadata"
)

// The series, as Tempo's and contrib's service graphs name them.
const (
	metricRequests      = "traces_service_graph_request_total"
	metricFailed        = "traces_service_graph_request_failed_total"
	metricServerSeconds = "traces_service_graph_request_server_seconds"
	metricClientSeconds = "traces_service_graph_request_client_seconds"
	metricUnpaired      = "traces_service_graph_unpaired_spans_total"
	attrClient          = "client"
	attrServer          = "server"
	attrReason          = "reason"
	reasonExpired       = "expired"         // the other end did not come within store::ttl
	reasonStoreFull     = "store_full"      // evicted, the oldest of store::max_items calls waiting, for a new one
	reasonNodeStoreFull = "node_store_full" // evicted, the oldest of store::max_items_per_node calls of its node waiting, for a new one
	reasonEdgesFull     = "edges_full"      // max_edges edges were counted
	reasonUnnamed       = "unnamed"         // the span has none of node_attributes
	reasonNodeTooLong   = "node_too_long"   // the span's node is longer than max_node_length
	reasonNoParent      = "no_parent"       // a SERVER span without a parent span
	reasonDuplicate     = "duplicate"       // a second span for the same end of one call
	nodeSeparator       = "/"
)

// callKey names one call: its trace and the CLIENT span's id (the SERVER
// span's parent).
type callKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// end is what one span says of its end of the call.
type end struct {
	node    string
	seconds float64
	failed  bool
}

// waiting is a call one of whose ends has been seen.
type waiting struct {
	key            callKey
	node           string        // the node of the first span seen, charged in perNode
	nodeElem       *list.Element // in perNode[node]
	client, server *end
	deadline       time.Time
	elem           *list.Element
}

type edgeKey struct{ client, server string }

type histogram struct {
	counts []uint64 // one per bound, and one above the last
	count  uint64
	sum    float64
}

type edge struct {
	start            pcommon.Timestamp // when the edge was first counted (since its last expiry)
	last             time.Time         // when a call was last paired
	requests, failed uint64
	server, client   histogram
}

type rpcgraph struct {
	component.StartFunc
	logger *zap.Logger
	cfg    *Config
	next   consumer.Metrics
	bounds []float64 // seconds
	start  pcommon.Timestamp
	now    func() time.Time

	mu       sync.Mutex
	waiting  map[callKey]*waiting
	perNode  map[string]*list.List // of *waiting, by the node of their first span seen, oldest first
	order    *list.List            // of *waiting, oldest (first deadline) first
	edges    map[edgeKey]*edge
	unpaired map[string]uint64
	changed  bool
	full     uint64 // store_full, node_store_full and edges_full at the last warning

	stop chan struct{}
	done chan struct{}
}

func newConnector(logger *zap.Logger, cfg *Config, next consumer.Metrics) *rpcgraph {
	bounds := make([]float64, len(cfg.LatencyHistogramBuckets))
	for i, b := range cfg.LatencyHistogramBuckets {
		bounds[i] = b.Seconds()
	}
	return &rpcgraph{
		logger:   logger,
		cfg:      cfg,
		next:     next,
		bounds:   bounds,
		start:    pcommon.NewTimestampFromTime(time.Now()),
		now:      time.Now,
		waiting:  map[callKey]*waiting{},
		perNode:  map[string]*list.List{},
		order:    list.New(),
		edges:    map[edgeKey]*edge{},
		unpaired: map[string]uint64{},
	}
}

func (*rpcgraph) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start sends the metrics on every metrics_flush_interval until Shutdown.
func (g *rpcgraph) Start(context.Context, component.Host) error {
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	go g.flushLoop()
	return nil
}

// Shutdown stops the flushes (the calls still waiting are not counted).
func (g *rpcgraph) Shutdown(context.Context) error {
	if g.stop == nil {
		return nil
	}
	close(g.stop)
	<-g.done
	return nil
}

func (g *rpcgraph) flushLoop() {
	defer close(g.done)
	t := time.NewTicker(g.cfg.MetricsFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			if md, ok := g.collect(); ok {
				if err := g.next.ConsumeMetrics(context.Background(), md); err != nil {
					g.logger.Warn("service graph metrics refused", zap.Error(err))
				}
			}
		}
	}
}

// ConsumeTraces takes the CLIENT and SERVER spans; every other kind passes
// unseen.
func (g *rpcgraph) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.expire(now)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				g.consumeSpan(spans.At(k), res, now)
			}
		}
	}
	return nil
}

func (g *rpcgraph) consumeSpan(s ptrace.Span, res pcommon.Map, now time.Time) {
	var key callKey
	switch s.Kind() {
	case ptrace.SpanKindClient:
		key = callKey{s.TraceID(), s.SpanID()}
	case ptrace.SpanKindServer:
		if s.ParentSpanID().IsEmpty() {
			g.count(reasonNoParent)
			return
		}
		key = callKey{s.TraceID(), s.ParentSpanID()}
	default:
		return
	}
	node, ok := g.node(s.Attributes(), res)
	if !ok {
		g.count(reasonUnnamed)
		return
	}
	if len(node) > g.cfg.MaxNodeLength {
		g.count(reasonNodeTooLong)
		return
	}
	e := &end{
		node:    node,
		seconds: time.Duration(s.EndTimestamp() - s.StartTimestamp()).Seconds(),
		failed:  s.Status().Code() == ptrace.StatusCodeError,
	}
	w := g.waiting[key]
	if w == nil {
		w = g.wait(key, node, now)
	}
	side := &w.client
	if s.Kind() == ptrace.SpanKindServer {
		side = &w.server
	}
	if *side != nil {
		g.count(reasonDuplicate)
		return
	}
	*side = e
	if w.client != nil && w.server != nil {
		g.remove(w)
		g.pair(w.client, w.server, now)
	}
}

// wait stores a new call whose first span seen names node. The store being
// full, or node's share of it, the oldest call waiting there gives way: the
// newest calls are the likeliest to pair, and a flood of calls that never
// pair (one process's, or many's) only pushes out calls already waiting
// longer than the flood takes to fill the store.
func (g *rpcgraph) wait(key callKey, node string, now time.Time) *waiting {
	if mine := g.perNode[node]; mine != nil && mine.Len() >= g.cfg.Store.MaxItemsPerNode {
		g.evict(mine.Front().Value.(*waiting), reasonNodeStoreFull)
	} else if len(g.waiting) >= g.cfg.Store.MaxItems {
		g.evict(g.order.Front().Value.(*waiting), reasonStoreFull)
	}
	mine := g.perNode[node] // after evict, which drops a list it empties
	if mine == nil {
		mine = list.New()
		g.perNode[node] = mine
	}
	w := &waiting{key: key, node: node, deadline: now.Add(g.cfg.Store.TTL)}
	w.elem = g.order.PushBack(w)
	w.nodeElem = mine.PushBack(w)
	g.waiting[key] = w
	return w
}

// evict drops a waiting call, one count per span waiting.
func (g *rpcgraph) evict(w *waiting, reason string) {
	g.remove(w)
	g.count(reason)
}

// node names a span's end: the values of the node attributes it has.
func (g *rpcgraph) node(attrs, res pcommon.Map) (string, bool) {
	var parts []string
	for _, name := range g.cfg.NodeAttributes {
		v, ok := attrs.Get(name)
		if !ok {
			v, ok = res.Get(name)
		}
		if ok {
			parts = append(parts, v.AsString())
		}
	}
	return strings.Join(parts, nodeSeparator), len(parts) > 0
}

func (g *rpcgraph) pair(client, server *end, now time.Time) {
	k := edgeKey{client.node, server.node}
	e := g.edges[k]
	if e == nil {
		if len(g.edges) >= g.cfg.MaxEdges {
			g.count(reasonEdgesFull)
			return
		}
		e = &edge{
			start:  pcommon.NewTimestampFromTime(now),
			server: histogram{counts: make([]uint64, len(g.bounds)+1)},
			client: histogram{counts: make([]uint64, len(g.bounds)+1)},
		}
		g.edges[k] = e
	}
	e.last = now
	e.requests++
	if client.failed || server.failed {
		e.failed++
	}
	g.observe(&e.server, server.seconds)
	g.observe(&e.client, client.seconds)
	g.changed = true
}

func (g *rpcgraph) observe(h *histogram, seconds float64) {
	i := 0
	for i < len(g.bounds) && seconds > g.bounds[i] {
		i++
	}
	h.counts[i]++
	h.count++
	h.sum += seconds
}

func (g *rpcgraph) count(reason string) {
	g.unpaired[reason]++
	g.changed = true
}

func (g *rpcgraph) remove(w *waiting) {
	g.order.Remove(w.elem)
	delete(g.waiting, w.key)
	mine := g.perNode[w.node]
	if mine.Remove(w.nodeElem); mine.Len() == 0 {
		delete(g.perNode, w.node)
	}
}

// expire drops the calls whose other end did not come in time, one count
// per span waiting.
func (g *rpcgraph) expire(now time.Time) {
	for f := g.order.Front(); f != nil; f = g.order.Front() {
		w := f.Value.(*waiting)
		if now.Before(w.deadline) {
			return
		}
		g.evict(w, reasonExpired)
	}
}

// collect expires what is due and snapshots the cumulative metrics; false
// when nothing changed since the last snapshot.
func (g *rpcgraph) collect() (pmetric.Metrics, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.expire(now)
	for k, e := range g.edges {
		if now.Sub(e.last) >= g.cfg.MetricsExpiration {
			delete(g.edges, k)
			g.changed = true
		}
	}
	if !g.changed {
		return pmetric.Metrics{}, false
	}
	g.warnFull()
	g.changed = false
	ts := pcommon.NewTimestampFromTime(now)
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	ms := sm.Metrics()

	requests := g.sum(ms, metricRequests, "{call}", "Calls whose client and server spans were paired, per edge.")
	failed := g.sum(ms, metricFailed, "{call}", "Paired calls either of whose spans has status ERROR, per edge.")
	server := g.histogram(ms, metricServerSeconds, "Duration of the SERVER span of the paired calls, per edge.")
	client := g.histogram(ms, metricClientSeconds, "Duration of the CLIENT span of the paired calls, per edge.")
	for k, e := range g.edges {
		point(requests.AppendEmpty(), k, e.start, ts).SetIntValue(int64(e.requests))
		point(failed.AppendEmpty(), k, e.start, ts).SetIntValue(int64(e.failed))
		g.histogramPoint(server.AppendEmpty(), k, e.start, ts, &e.server)
		g.histogramPoint(client.AppendEmpty(), k, e.start, ts, &e.client)
	}
	unpaired := g.sum(ms, metricUnpaired, "{span}", "CLIENT and SERVER spans not paired, by reason.")
	for reason, n := range g.unpaired {
		dp := unpaired.AppendEmpty()
		dp.SetStartTimestamp(g.start)
		dp.SetTimestamp(ts)
		dp.Attributes().PutStr(attrReason, reason)
		dp.SetIntValue(int64(n))
	}
	return md, true
}

// warnFull tells, once a flush in which calls were pushed out of the store
// or edges not counted, who holds the store: the node with the most calls
// waiting (a flood's, most likely).
func (g *rpcgraph) warnFull() {
	full := g.unpaired[reasonStoreFull] + g.unpaired[reasonNodeStoreFull] + g.unpaired[reasonEdgesFull]
	if full == g.full {
		return
	}
	g.full = full
	top, n := "", 0
	for node, l := range g.perNode {
		if l.Len() > n {
			top, n = node, l.Len()
		}
	}
	g.logger.Warn("service graph state full: calls pushed out of the store or edges not counted",
		zap.Uint64(reasonStoreFull, g.unpaired[reasonStoreFull]),
		zap.Uint64(reasonNodeStoreFull, g.unpaired[reasonNodeStoreFull]),
		zap.Uint64(reasonEdgesFull, g.unpaired[reasonEdgesFull]),
		zap.Int("waiting", len(g.waiting)), zap.Int("edges", len(g.edges)),
		zap.String("most_waiting_node", top), zap.Int("most_waiting", n))
}

func (*rpcgraph) sum(ms pmetric.MetricSlice, name, unit, desc string) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(desc)
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return s.DataPoints()
}

func (*rpcgraph) histogram(ms pmetric.MetricSlice, name, desc string) pmetric.HistogramDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit("s")
	m.SetDescription(desc)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return h.DataPoints()
}

func point(dp pmetric.NumberDataPoint, k edgeKey, start, ts pcommon.Timestamp) pmetric.NumberDataPoint {
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.Attributes().PutStr(attrClient, k.client)
	dp.Attributes().PutStr(attrServer, k.server)
	return dp
}

func (g *rpcgraph) histogramPoint(dp pmetric.HistogramDataPoint, k edgeKey, start, ts pcommon.Timestamp, h *histogram) {
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.Attributes().PutStr(attrClient, k.client)
	dp.Attributes().PutStr(attrServer, k.server)
	dp.ExplicitBounds().FromRaw(g.bounds)
	dp.BucketCounts().FromRaw(h.counts)
	dp.SetCount(h.count)
	dp.SetSum(h.sum)
}
