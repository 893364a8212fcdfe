// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// startReceiver runs the grpc receiver into a sink.
func startReceiver(t *testing.T, mod func(*Config)) (*consumertest.TracesSink, func()) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Protocols.HTTP1 = true // the tests' HTTP/1.x traffic (opt-in)
	if mod != nil {
		mod(cfg)
	}
	require.NoError(t, confmap.Validate(cfg))
	sink := new(consumertest.TracesSink)
	r, err := NewFactory().CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	return sink, func() { require.NoError(t, r.Shutdown(context.Background())) }
}

// spansOf lists the sink's spans on the server's port.
func spansOf(sink *consumertest.TracesSink, port int64) []ptrace.Span {
	var out []ptrace.Span
	for _, td := range sink.AllTraces() {
		for i := range td.ResourceSpans().Len() {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := range ss.Len() {
				for k := range ss.At(j).Spans().Len() {
					s := ss.At(j).Spans().At(k)
					if v, ok := s.Attributes().Get("server.port"); ok && v.Int() == port {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// attr is a span's attribute as a string ("" when it has none).
func attr(s ptrace.Span, k string) string {
	v, ok := s.Attributes().Get(k)
	if !ok {
		return ""
	}
	return v.AsString()
}

// The config's hook names are the capture's, in its order.
func TestConfigHooksAreCaptures(t *testing.T) {
	var want []string
	for _, h := range capture.Hooks {
		want = append(want, string(h))
	}
	assert.Equal(t, want, hooks)
}

func TestReceiverGRPCGo(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range []string{HookSocket, HookSyscalls, HookRawSyscalls} {
		t.Run(hook, func(t *testing.T) { testReceiverGRPCGo(t, hook) })
	}
	// The programs of kernels without BPF atomic fetch (5.10): the ring
	// buffer's numbering reader under the receiver's read loop.
	t.Run("raw_syscalls_nofetch", func(t *testing.T) {
		noFetch = true
		defer func() { noFetch = false }()
		testReceiverGRPCGo(t, HookRawSyscalls)
	})
}

func testReceiverGRPCGo(t *testing.T, hook string) {
	// The kernel's shares off: 2000 calls on one connection as fast as
	// this machine makes them exceed a connection's default share (8 MiB/s
	// with 64 tokens a frame) when the machine is quiet, and the calls
	// throttled are lost (counted). This test is about the spans.
	sink, stop := startReceiver(t, func(c *Config) { c.Hook = hook; c.MaxCaptureRate = 0; c.MaxCaptureRatePerUser = 0 })
	defer stop()

	srv, client := grpctest.StartDialed(t)
	port := int64(port(t, srv.Addr))
	ctx := context.Background()

	// Thousands of unary calls, 8 at a time on the one connection.
	const calls, workers = 2000, 8
	wait := grpctest.UnaryConcurrently(ctx, client, calls, workers)
	// A server-streaming call: 5 responses, 100 ms apart (>= 500 ms long).
	streamStart := time.Now()
	require.NoError(t, grpctest.Stream(ctx, client, 5, 100*time.Millisecond))
	streamTook := time.Since(streamStart)
	require.Zero(t, wait(), "failed unary calls")
	// Errors: the server answers NOT_FOUND and INTERNAL.
	require.Error(t, grpctest.Unary(ctx, client, codes.NotFound, "no such thing"))
	require.Error(t, grpctest.Unary(ctx, client, codes.Internal, "boom"))
	// A cancellation: the client gives up on a long stream.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- grpctest.Stream(cctx, client, 100, 100*time.Millisecond) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	require.Error(t, <-done)

	want := 2*calls + 2*1 + 2*2 + 2
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= want }, 30*time.Second, 50*time.Millisecond,
		"spans seen: %d of %d", len(spansOf(sink, port)), want)

	type key struct {
		method, code string
		kind         ptrace.SpanKind
	}
	counts := map[key]int{}
	streams := map[ptrace.SpanKind]map[string]bool{ptrace.SpanKindClient: {}, ptrace.SpanKindServer: {}}
	var streamSpans, cancelled []ptrace.Span
	for _, s := range spansOf(sink, port) {
		k := key{attr(s, "rpc.method"), attr(s, "rpc.response.status_code"), s.Kind()}
		counts[k]++
		if k.method == grpctest.Service+"/UnaryCall" && k.code == "OK" {
			sid := attr(s, spanmap.AttrStreamID)
			assert.False(t, streams[s.Kind()][sid], "stream %s twice", sid)
			streams[s.Kind()][sid] = true
		}
		if k.method == grpctest.Service+"/StreamingOutputCall" {
			if k.code == "OK" {
				streamSpans = append(streamSpans, s)
			} else {
				cancelled = append(cancelled, s)
			}
		}
	}
	t.Logf("spans by method, status and kind: %v", counts)
	for _, kind := range []ptrace.SpanKind{ptrace.SpanKindClient, ptrace.SpanKindServer} {
		assert.Equal(t, calls, counts[key{grpctest.Service + "/UnaryCall", "OK", kind}], "unary OK %s", kind)
		assert.Equal(t, 1, counts[key{grpctest.Service + "/UnaryCall", "NOT_FOUND", kind}], "NOT_FOUND %s", kind)
		assert.Equal(t, 1, counts[key{grpctest.Service + "/UnaryCall", "INTERNAL", kind}], "INTERNAL %s", kind)
	}
	// The stream's spans last as long as the stream: at least its five
	// 100 ms waits, at most what the client measured around it.
	require.Len(t, streamSpans, 2)
	for _, s := range streamSpans {
		d := s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime())
		assert.GreaterOrEqual(t, d, 500*time.Millisecond, "%s span", s.Kind())
		assert.LessOrEqual(t, d, streamTook, "%s span", s.Kind())
	}
	require.Len(t, cancelled, 2)
	for _, s := range cancelled {
		assert.Equal(t, "CANCELLED", attr(s, "rpc.response.status_code"), "%s", s.Kind())
		assert.Contains(t, attr(s, spanmap.AttrFlags), "cancelled")
	}
	// Both ends of a call share its trace; the server's span is the client's child.
	byTrace := map[[16]byte][]ptrace.Span{}
	for _, s := range spansOf(sink, port) {
		byTrace[s.TraceID()] = append(byTrace[s.TraceID()], s)
	}
	assert.Len(t, byTrace, want/2)
	for _, pair := range byTrace {
		if assert.Len(t, pair, 2) {
			c, s := pair[0], pair[1]
			if c.Kind() == ptrace.SpanKindServer {
				c, s = s, c
			}
			assert.Equal(t, c.SpanID(), s.ParentSpanID())
		}
	}
}

// A connection already open when the receiver starts (its HPACK tables
// unknown): every call after the start is a span at both ends, the first
// too, and a method named by an entry from before the start is _OTHER
// with a placeholder, the same for all the calls of the method.
func TestReceiverPredatingConnection(t *testing.T) {
	testutil.RequireRoot(t)
	srv, client := grpctest.StartDialed(t)
	ctx := context.Background()
	for range 10 {
		require.NoError(t, grpctest.Unary(ctx, client, codes.OK, ""))
	}

	sink, stop := startReceiver(t, nil)
	defer stop()
	const calls = 40
	for range calls {
		require.NoError(t, grpctest.Unary(ctx, client, codes.OK, ""))
	}
	port := int64(port(t, srv.Addr))
	assert.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*calls }, 20*time.Second, 50*time.Millisecond)
	kinds := map[ptrace.SpanKind]int{}
	placeholders := map[ptrace.SpanKind]map[string]int{ptrace.SpanKindClient: {}, ptrace.SpanKindServer: {}}
	for _, s := range spansOf(sink, port) {
		kinds[s.Kind()]++
		m := attr(s, "rpc.method")
		if m == spanmap.Other {
			p := attr(s, spanmap.AttrMethodPlaceholder)
			assert.NotEmpty(t, p, "%s span of unknown method without a placeholder", s.Kind())
			placeholders[s.Kind()][p]++
		} else {
			assert.Equal(t, grpctest.Service+"/UnaryCall", m)
		}
	}
	t.Logf("spans by kind %v, placeholders %v", kinds, placeholders)
	assert.Equal(t, calls, kinds[ptrace.SpanKindClient], "every call after the start, the first too")
	assert.Equal(t, calls, kinds[ptrace.SpanKindServer])
	for k, ps := range placeholders {
		assert.LessOrEqual(t, len(ps), 1, "%s: one method, one placeholder", k)
	}
}

func port(t *testing.T, addr string) uint16 {
	t.Helper()
	ap, err := netipParse(addr)
	require.NoError(t, err)
	return ap
}

// TLS (opt-in): curl over OpenSSL against a grpc-go TLS server in this
// process: one CLIENT span per call in curl (OpenSSL's probes) and one
// SERVER span here (Go crypto/tls's: this running executable has them),
// with the method and the status. Their sockets carry ciphertext.
func TestReceiverTLSOpenSSL(t *testing.T) {
	testutil.RequireRoot(t)
	curl, err := exec.LookPath("curl")
	require.NoError(t, err, "curl (with OpenSSL) is needed for the TLS test: apt-get install curl")
	probeSelf = true // the server is this process
	defer func() { probeSelf = false }()
	sink, stop := startReceiver(t, func(c *Config) { c.TLS.Enabled = true })
	defer stop()
	srv, err := grpctest.StartTLS()
	require.NoError(t, err)
	defer srv.Stop()
	const calls = 20
	body := filepath.Join(t.TempDir(), "req")
	require.NoError(t, os.WriteFile(body, []byte{0, 0, 0, 0, 0}, 0o644))
	var args []string
	for i := range calls {
		if i > 0 {
			args = append(args, "--next")
		}
		args = append(args, "-sk", "--http2", "-o", "/dev/null", "-X", "POST", "-H", "content-type: application/grpc",
			"-H", "te: trailers", "--data-binary", "@"+body, "https://"+srv.Addr+grpctest.UnaryMethod)
	}
	out, err := exec.Command(curl, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	port := int64(mustPort(t, srv.Addr))
	method := grpctest.Service + "/UnaryCall"
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= calls }, 30*time.Second, 50*time.Millisecond,
		"spans: %v", countSpans(spansOf(sink, port), method))
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*calls }, 30*time.Second, 50*time.Millisecond,
		"spans: %v", countSpans(spansOf(sink, port), method))
	assert.Equal(t, map[string]int{"Client OK": calls, "Server OK": calls}, countSpans(spansOf(sink, port), method))
}

// Go crypto/tls (opt-in TLS) in a program started after the receiver and
// named in tls::go_binaries: grpctls (test/grpctest/cmd/grpctls),
// stripped (no .symtab: the probes are found through .gopclntab), a grpc-go
// client and server over TLS in one process, 8 calls at a time on one
// connection and one NOT_FOUND: exactly one CLIENT and one SERVER span per
// call, with the method, the status and the process.
func TestReceiverTLSGo(t *testing.T) {
	testutil.RequireRoot(t)
	bin := filepath.Join(t.TempDir(), "grpctls")
	require.NoError(t, grpctest.BuildTLSProgram(bin, "-ldflags=-s -w"))
	sink, stop := startReceiver(t, func(c *Config) {
		c.TLS.Enabled = true
		c.TLS.GoBinaries = []string{bin}
	})
	defer stop()
	const calls = 300
	p, err := grpctest.StartTLSProgram(bin, "-calls", fmt.Sprint(calls), "-workers", "8")
	require.NoError(t, err)
	requireTLSProgramSpans(t, sink, p, calls)
}

// A Go TLS program started after the receiver, at a path nobody named: the
// rescan finds it among the new processes and probes it before it connects
// (it waits for that), and every call becomes its two spans.
func TestReceiverTLSGoStartedLater(t *testing.T) {
	testutil.RequireRoot(t)
	bin := filepath.Join(t.TempDir(), "grpctls-later")
	require.NoError(t, grpctest.BuildTLSProgram(bin, "-ldflags=-s -w"))
	cfg := createDefaultConfig()
	cfg.TLS.Enabled = true
	cfg.TLS.RescanInterval = time.Second
	require.NoError(t, confmap.Validate(cfg))
	sink := new(consumertest.TracesSink)
	rt, err := NewFactory().CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	r := rt.(*grpcReceiver)
	probed := func() bool {
		for _, b := range r.cap.GoBinaries() {
			if b.Path == bin {
				return true
			}
		}
		return false
	}
	require.False(t, probed(), "not running at start")

	const calls = 200
	p, err := grpctest.StartTLSProgram(bin, "-calls", fmt.Sprint(calls), "-workers", "8", "-wait")
	require.NoError(t, err)
	require.Eventually(t, probed, 15*time.Second, 100*time.Millisecond, "rescan probes the new process's executable")
	require.NoError(t, p.Go())
	requireTLSProgramSpans(t, sink, p, calls)
}

// requireTLSProgramSpans waits for grpctls p to end and checks its calls'
// spans: exactly one CLIENT and one SERVER span each, calls OK and one
// NOT_FOUND, all of its process.
func requireTLSProgramSpans(t *testing.T, sink *consumertest.TracesSink, p *grpctest.TLSProgram, calls int) {
	t.Helper()
	res, err := p.Result()
	require.NoError(t, err)
	port := int64(mustPort(t, p.Addr))
	method := grpctest.Service + "/UnaryCall"
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*calls+2 }, 30*time.Second, 50*time.Millisecond,
		"spans: %v", countSpans(spansOf(sink, port), method))
	assert.Equal(t, map[string]int{"Client OK": calls, "Server OK": calls, "Client NOT_FOUND": 1, "Server NOT_FOUND": 1},
		countSpans(spansOf(sink, port), method))
	for _, s := range spansOf(sink, port) {
		assert.Equal(t, fmt.Sprint(res.PID), attr(s, "process.pid"))
	}
}

// The kernel's and the tracker's counters reach self-telemetry, each under
// its counter attribute, with the values of the run; so do the gauges of
// what the tracker follows and holds now.
func TestReceiverCountersTelemetry(t *testing.T) {
	testutil.RequireRoot(t)
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	sink := new(consumertest.TracesSink)
	r, err := NewFactory().CreateTraces(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	_, client := grpctest.StartDialed(t)
	const calls = 50
	require.Zero(t, grpctest.UnaryConcurrently(context.Background(), client, calls, 4)(), "failed calls")
	counter := func(metric, name string) int64 {
		m, err := tel.GetMetric(metric)
		if err != nil {
			return 0
		}
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			if v, ok := dp.Attributes.Value("counter"); ok && v.AsString() == name {
				return dp.Value
			}
		}
		return 0
	}
	// The snapshot the callbacks read is taken once a second.
	require.Eventually(t, func() bool {
		return counter("otelcol_receiver_grpc_tracker", "calls_emitted") >= 2*calls
	}, 10*time.Second, 100*time.Millisecond, "tracker calls_emitted")
	assert.Positive(t, counter("otelcol_receiver_grpc_kernel", "frames"))
	assert.Positive(t, counter("otelcol_receiver_grpc_kernel", "conns_http2"))
	// The gauges, with the client's connection still open: both its ends
	// followed, and what the tracker holds for them accounted.
	gauge := func(metric string) int64 {
		m, err := tel.GetMetric(metric)
		require.NoError(t, err)
		dps := m.Data.(metricdata.Gauge[int64]).DataPoints
		require.Len(t, dps, 1, metric)
		return dps[0].Value
	}
	assert.GreaterOrEqual(t, gauge("otelcol_receiver_grpc_connections_live"), int64(2))
	mem := gauge("otelcol_receiver_grpc_tracker_memory")
	assert.Positive(t, mem)
	assert.LessOrEqual(t, mem, int64(createDefaultConfig().MaxMemory), "within max_memory")
}
