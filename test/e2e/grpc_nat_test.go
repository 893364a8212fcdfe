// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// nodeConfig is one node's agent: the grpc receiver keeping the calls of
// one port (one end of each call), spans to Jaeger and to a file.
const nodeConfig = `
receivers:
  grpc:
    ports: [%d]
    service_name: %s
exporters:
  otlp_grpc:
    endpoint: %s
    tls: {insecure: true}
  file:
    path: %s
processors:
  batch:
    timeout: 200ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [grpc]
      processors: [batch]
      exporters: [otlp_grpc, file]
`

// tlsNodeConfig is nodeConfig with the TLS probes on (the rescan picks up
// the Python client started after the agents).
var tlsNodeConfig = strings.Replace(nodeConfig, "    service_name: %s\n",
	"    service_name: %s\n    tls: {enabled: true, rescan_interval: 1s}\n", 1)

// withHTTP1 turns on the HTTP/1.x capture (opt-in) in a node config.
func withHTTP1(config string) string {
	return strings.Replace(config, "    service_name: %s\n", "    service_name: %s\n    protocols: {http1: true}\n", 1)
}

// natRule adds an iptables nat rule and removes it when the test ends.
func natRule(t *testing.T, chain string, args ...string) {
	t.Helper()
	rule := append([]string{"-t", "nat", "-A", chain}, args...)
	out, err := exec.Command("iptables", rule...).CombinedOutput()
	require.NoError(t, err, "iptables %v: %s", rule, out)
	t.Cleanup(func() {
		rule[2] = "-D"
		_ = exec.Command("iptables", rule...).Run()
	})
}

// natPair stands for two nodes with NAT between them, on loopback: a
// client dials 127.0.0.1:svc (a Service address), which DNAT sends to
// 127.0.0.1:real where the server listens; SNAT rewrites the client's
// source to 127.0.0.2 and another port. Neither socket's 4-tuple is the
// other's reversed. It returns svc.
func natPair(t *testing.T, real int) int {
	t.Helper()
	route := "/proc/sys/net/ipv4/conf/lo/route_localnet"
	if b, err := os.ReadFile(route); err == nil && strings.TrimSpace(string(b)) != "1" {
		require.NoError(t, os.WriteFile(route, []byte("1"), 0o644))
		t.Cleanup(func() { _ = os.WriteFile(route, b, 0o644) })
	}
	svc := mustFreePort(t)
	natRule(t, "OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", strconv.Itoa(svc),
		"-j", "DNAT", "--to-destination", "127.0.0.1:"+strconv.Itoa(real))
	natRule(t, "POSTROUTING", "-p", "tcp", "-d", "127.0.0.1", "--dport", strconv.Itoa(real),
		"-j", "SNAT", "--to-source", "127.0.0.2:41000-41999")
	return svc
}

func mustFreePort(t *testing.T) int {
	_, p, _ := strings.Cut(freePort(t), ":")
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// node starts one node's collector keeping the calls on port.
func node(t *testing.T, j *jaeger, name string, port int) (*collector, string) {
	return nodeOf(t, nodeConfig, j, name, port)
}

// nodeOf starts one node's collector of config (nodeConfig's verbs).
func nodeOf(t *testing.T, config string, j *jaeger, name string, port int) (*collector, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "spans.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(config, port, name, j.otlpGRPC, out)), 0o600))
	return startCollector(t, nil, "--config", cfg), out
}

// joinRate counts the server spans of method whose parent is a client span
// of the same trace, from the other node.
func joinRate(servers, clients []ptrace.Span) (joined int, unjoined []string) {
	byID := map[pcommon.SpanID]ptrace.Span{}
	for _, c := range clients {
		byID[c.SpanID()] = c
	}
	for _, s := range servers {
		if c, ok := byID[s.ParentSpanID()]; ok && c.TraceID() == s.TraceID() {
			joined++
			continue
		}
		unjoined = append(unjoined, fmt.Sprintf("server span %s trace %s parent %s", s.SpanID(), s.TraceID(), s.ParentSpanID()))
	}
	return joined, unjoined
}

// ofKind keeps the spans of one kind and rpc.method.
func ofKind(spans []ptrace.Span, kind ptrace.SpanKind, method string) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range spans {
		if m, _ := s.Attributes().Get("rpc.method"); s.Kind() == kind && m.Str() == method {
			out = append(out, s)
		}
	}
	return out
}

// Two nodes' agents (two collectors sharing nothing, each keeping one end
// of every call by its port) and NAT of both ports between client and
// server: every server span is the child of its client span, in the
// client's trace, for grpc-go and grpcio clients, unary and streaming
// calls, and Jaeger shows one trace holding both nodes' spans. The join
// rate per client library is logged.
func TestGRPCAcrossNAT(t *testing.T) {
	testutil.RequireRoot(t)
	j := startJaeger(t)

	srv, err := grpctest.Start()
	require.NoError(t, err)
	defer srv.Stop()
	real, svc, svcAddr := natService(t, srv.Addr)

	// A connection open before the agents start: its calls after the start
	// join too.
	ccEarly, early, err := grpctest.Dial(svcAddr)
	require.NoError(t, err)
	defer ccEarly.Close()
	require.NoError(t, grpctest.Unary(context.Background(), early, codes.OK, ""))

	clientNode, clientOut := node(t, j, "client-node", svc)
	serverNode, serverOut := node(t, j, "server-node", real)
	begin := time.Now()
	ctx := context.Background()
	unary, stream, other := grpctest.Service+"/UnaryCall", grpctest.Service+"/StreamingOutputCall", "_OTHER"

	const calls, streams, earlyCalls = 200, 5, 40
	cc, client, err := grpctest.Dial(svcAddr)
	require.NoError(t, err)
	defer cc.Close()
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, calls, 4)(), "grpc-go calls failed")
	for range streams {
		require.NoError(t, grpctest.Stream(ctx, client, 5, 10*time.Millisecond))
	}
	for range earlyCalls {
		require.NoError(t, grpctest.Unary(ctx, early, codes.OK, ""))
	}
	py := grpctest.PythonGRPC(t, repoRoot(t))
	pyStart := pcommon.NewTimestampFromTime(time.Now())
	out, err := exec.Command(py, filepath.Join(repoRoot(t), "testdata", "grpc", "py_grpc.py"), "client", svcAddr, strconv.Itoa(calls)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	const pyCalls = calls + 1 // the calls (the first one included), one NOT_FOUND

	// grpc-go: calls and streams on a new connection, earlyCalls on the
	// early one (their method is not known: its HPACK entries predate the
	// agents, so they are rpc.method _OTHER); grpcio: pyCalls.
	wantUnary := calls + pyCalls
	var cs, ss []ptrace.Span
	assert.Eventually(t, func() bool {
		cs, ss = readSpans(t, clientOut), readSpans(t, serverOut)
		return len(ofKind(ss, ptrace.SpanKindServer, unary)) >= wantUnary && len(ofKind(cs, ptrace.SpanKindClient, unary)) >= wantUnary &&
			len(ofKind(ss, ptrace.SpanKindServer, stream)) >= streams &&
			len(ofKind(ss, ptrace.SpanKindServer, other)) >= earlyCalls && len(ofKind(cs, ptrace.SpanKindClient, other)) >= earlyCalls
	}, 60*time.Second, 250*time.Millisecond, "client node %d spans, server node %d\n%s\n%s",
		len(cs), len(ss), tail(clientNode.log(), 1500), tail(serverNode.log(), 1500))
	cs, ss = stopNodes(t, clientNode, serverNode, clientOut, serverOut, unary)

	assert.Len(t, ofKind(ss, ptrace.SpanKindServer, unary), wantUnary)
	assert.Len(t, ofKind(ss, ptrace.SpanKindServer, stream), streams)
	assert.Len(t, ofKind(ss, ptrace.SpanKindServer, other), earlyCalls, "the early connection's calls after the start")
	for _, m := range []string{unary, stream, other} {
		servers, clients := ofKind(ss, ptrace.SpanKindServer, m), ofKind(cs, ptrace.SpanKindClient, m)
		joined, unjoined := joinRate(servers, clients)
		t.Logf("%s across NAT: %d of %d server spans joined to their client span (%d client spans)", m, joined, len(servers), len(clients))
		assert.Equal(t, len(servers), joined, "server spans not joined: %v", head(unjoined, 5))
	}
	// Per client library: grpcio's calls came after every grpc-go call.
	for _, lib := range []struct {
		name string
		from pcommon.Timestamp
		to   pcommon.Timestamp
	}{{"grpc-go", 0, pyStart}, {"grpcio", pyStart, pcommon.Timestamp(1<<63 - 1)}} {
		var servers []ptrace.Span
		for _, s := range ofKind(ss, ptrace.SpanKindServer, unary) {
			if s.StartTimestamp() >= lib.from && s.StartTimestamp() < lib.to {
				servers = append(servers, s)
			}
		}
		joined, _ := joinRate(servers, ofKind(cs, ptrace.SpanKindClient, unary))
		t.Logf("%s client, unary, across NAT: %d of %d server spans joined", lib.name, joined, len(servers))
		assert.NotZero(t, len(servers), lib.name)
	}

	// Jaeger: one trace holds the client span of one node and the server
	// span of the other.
	servers := ofKind(ss, ptrace.SpanKindServer, unary)
	require.NotEmpty(t, servers)
	id := servers[len(servers)/2].TraceID()
	var got []span
	require.Eventually(t, func() bool {
		td, err := j.trace(t, id)
		if err != nil {
			return false
		}
		got = spans(td)
		return len(got) >= 2
	}, 30*time.Second, 250*time.Millisecond, "trace %s in Jaeger (since %s)", id, begin)
	names := map[string]string{}
	for _, s := range got {
		names[s.Kind().String()] = s.attrs["service.name"].(string)
	}
	assert.Equal(t, map[string]string{"Client": "client-node", "Server": "server-node"}, names, "trace %s: %v", id, got)
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TLS across NAT: the same two nodes, TLS probes on, a grpc-go TLS server
// in this process (its crypto/tls probed by both agents), a grpc-go TLS
// client in this process and a Python client over OpenSSL (ssl module and
// the h2 package: grpcio's statically linked BoringSSL is not probed), both
// through DNAT and SNAT. The sessions' ids come from the TCP sockets under
// them (their initial sequence numbers), which each agent finds on its
// own: every server span is the child of its client span, per client
// library, and Jaeger shows one trace holding both nodes' spans.
func TestGRPCTLSAcrossNAT(t *testing.T) {
	testutil.RequireRoot(t)
	j := startJaeger(t)

	srv, err := grpctest.StartTLS()
	require.NoError(t, err)
	defer srv.Stop()
	real, svc, svcAddr := natService(t, srv.Addr)

	clientNode, clientOut := nodeOf(t, tlsNodeConfig, j, "client-node", svc)
	serverNode, serverOut := nodeOf(t, tlsNodeConfig, j, "server-node", real)
	ctx := context.Background()
	unary, stream := grpctest.Service+"/UnaryCall", grpctest.Service+"/StreamingOutputCall"

	const calls, streams = 200, 5
	cc, client, err := grpctest.DialTLS(svcAddr)
	require.NoError(t, err)
	defer cc.Close()
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, calls, 4)(), "grpc-go calls failed")
	for range streams {
		require.NoError(t, grpctest.Stream(ctx, client, 5, 10*time.Millisecond))
	}
	require.Equal(t, codes.NotFound, status.Code(grpctest.Unary(ctx, client, codes.NotFound, "notfound")))
	py := grpctest.PythonGRPC(t, repoRoot(t))
	// The Python client's libssl is the system's, probed at the agents'
	// start (mapped by running processes or at a usual location).
	pyStart := pcommon.NewTimestampFromTime(time.Now())
	out, err := exec.Command(py, filepath.Join(repoRoot(t), "testdata", "grpc", "py_h2_tls.py"), svcAddr, strconv.Itoa(calls)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, strings.Repeat("0 ", calls)+"5\n", string(out), "grpc-status of each Python call")
	const perLib = calls + 1 // the calls and one NOT_FOUND

	wantUnary := 2 * perLib
	var cs, ss []ptrace.Span
	assert.Eventually(t, func() bool {
		cs, ss = readSpans(t, clientOut), readSpans(t, serverOut)
		return len(ofKind(ss, ptrace.SpanKindServer, unary)) >= wantUnary && len(ofKind(cs, ptrace.SpanKindClient, unary)) >= wantUnary &&
			len(ofKind(ss, ptrace.SpanKindServer, stream)) >= streams
	}, 60*time.Second, 250*time.Millisecond, "client node %d spans, server node %d\n%s\n%s",
		len(cs), len(ss), tail(clientNode.log(), 1500), tail(serverNode.log(), 1500))
	cs, ss = stopNodes(t, clientNode, serverNode, clientOut, serverOut, unary)
	assert.Len(t, ofKind(ss, ptrace.SpanKindServer, unary), wantUnary)
	assert.Len(t, ofKind(ss, ptrace.SpanKindServer, stream), streams)
	for _, m := range []string{unary, stream} {
		servers, clients := ofKind(ss, ptrace.SpanKindServer, m), ofKind(cs, ptrace.SpanKindClient, m)
		joined, unjoined := joinRate(servers, clients)
		t.Logf("TLS %s across NAT: %d of %d server spans joined to their client span (%d client spans)", m, joined, len(servers), len(clients))
		assert.Equal(t, len(servers), joined, "server spans not joined: %v", head(unjoined, 5))
	}
	for _, lib := range []struct {
		name     string
		from, to pcommon.Timestamp
	}{{"grpc-go (crypto/tls)", 0, pyStart}, {"Python h2 (OpenSSL)", pyStart, pcommon.Timestamp(1<<63 - 1)}} {
		var servers []ptrace.Span
		for _, s := range ofKind(ss, ptrace.SpanKindServer, unary) {
			if s.StartTimestamp() >= lib.from && s.StartTimestamp() < lib.to {
				servers = append(servers, s)
			}
		}
		joined, _ := joinRate(servers, ofKind(cs, ptrace.SpanKindClient, unary))
		t.Logf("%s client, TLS unary, across NAT: %d of %d server spans joined", lib.name, joined, len(servers))
		assert.Len(t, servers, perLib, lib.name)
		assert.Equal(t, len(servers), joined, lib.name)
	}

	servers := ofKind(ss, ptrace.SpanKindServer, unary)
	require.NotEmpty(t, servers)
	id := servers[len(servers)-1].TraceID() // a Python call's
	var got []span
	require.Eventually(t, func() bool {
		td, err := j.trace(t, id)
		if err != nil {
			return false
		}
		got = spans(td)
		return len(got) >= 2
	}, 30*time.Second, 250*time.Millisecond, "trace %s in Jaeger", id)
	names := map[string]string{}
	for _, s := range got {
		names[s.Kind().String()] = s.attrs["service.name"].(string)
	}
	assert.Equal(t, map[string]string{"Client": "client-node", "Server": "server-node"}, names, "trace %s: %v", id, got)
}

// stopNodes stops both nodes' collectors, logs what each counted at its
// stop, and reads their spans once more: each node keeps one end's spans of
// method m only.
func stopNodes(t *testing.T, clientNode, serverNode *collector, clientOut, serverOut, m string) (cs, ss []ptrace.Span) {
	t.Helper()
	clientNode.stop(t)
	serverNode.stop(t)
	for _, n := range []*collector{clientNode, serverNode} {
		if i := strings.Index(n.log(), "grpc receiver: stopped"); i >= 0 {
			t.Log(tail(n.log()[i:], 600))
		}
	}
	cs, ss = readSpans(t, clientOut), readSpans(t, serverOut)
	assert.Empty(t, ofKind(cs, ptrace.SpanKindServer, m), "the client node keeps client spans only")
	assert.Empty(t, ofKind(ss, ptrace.SpanKindClient, m), "the server node keeps server spans only")
	return cs, ss
}

// natService puts the NAT pair (natPair) in front of the server listening
// at addr: the server's own port, the service port clients dial, and its
// address.
func natService(t *testing.T, addr string) (int, int, string) {
	t.Helper()
	_, p, _ := strings.Cut(addr, ":")
	real, err := strconv.Atoi(p)
	require.NoError(t, err)
	svc := natPair(t, real)
	return real, svc, "127.0.0.1:" + strconv.Itoa(svc)
}
