// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spanmap

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/otelcol-seq/otelcol-seq/internal/procid"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const boot = "3b1f0c56-1111-4222-8333-444455556666"

var (
	cli = h2.Endpoint{Addr: netip.MustParseAddr("10.0.0.1"), Port: 41000}
	srv = h2.Endpoint{Addr: netip.MustParseAddr("10.0.0.2"), Port: 50051}
)

// pair is one call as its client and its server saw it, both on this host.
func pair() (client, server h2.Call) {
	client = h2.Call{
		Conn: 11, Role: h2.RoleClient, Local: cli, Remote: srv, PeerConn: 22, PeerFound: true,
		ClientConn: 11, ClientConnKnown: true, Side: h2.SideClient, StreamID: 7,
		Proc: h2.Proc{PID: 100, StartNs: 1000}, Start: 10, End: 20,
		Method: "POST", Path: "/pkg.Svc/Do", Service: "pkg.Svc", RPC: "Do", Authority: "svc.local:50051",
		Protocol: h2.ProtoGRPC, GRPCStatus: 0, HTTPStatus: 200, ReqDataFrames: 1, RespDataFrames: 1,
	}
	server = client
	server.Conn, server.Role, server.Local, server.Remote, server.PeerConn = 22, h2.RoleServer, srv, cli, 11
	server.Side, server.Proc = h2.SideServer, h2.Proc{PID: 200, StartNs: 2000}
	return client, server
}

func span(t *testing.T, m *Mapper, c *h2.Call) ptrace.Span {
	t.Helper()
	ss := ptrace.NewSpanSlice()
	m.Append(ss, c)
	require.Equal(t, 1, ss.Len())
	return ss.At(0)
}

func TestLocalPairIsParentAndChild(t *testing.T) {
	m := New(Config{BootID: boot})
	c, s := pair()
	cs, ss := span(t, m, &c), span(t, m, &s)
	assert.Equal(t, ptrace.SpanKindClient, cs.Kind())
	assert.Equal(t, ptrace.SpanKindServer, ss.Kind())
	assert.True(t, cs.ParentSpanID().IsEmpty(), "no traceparent: the client span roots the trace")
	assert.Equal(t, cs.TraceID(), ss.TraceID())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID())
	assert.NotEqual(t, cs.SpanID(), ss.SpanID())
	assert.Equal(t, "pkg.Svc/Do", cs.Name())
	assert.Equal(t, "pkg.Svc/Do", ss.Name())

	// another stream, another boot, another connection: other ids
	c2 := c
	c2.StreamID = 9
	assert.NotEqual(t, cs.SpanID(), span(t, m, &c2).SpanID())
	assert.NotEqual(t, cs.SpanID(), span(t, New(Config{BootID: "other"}), &c).SpanID())
	c2 = c
	c2.ClientConn = 12
	assert.NotEqual(t, cs.SpanID(), span(t, m, &c2).SpanID())

	// a server whose client is not tracked: a root of its own
	s.ClientConnKnown, s.PeerFound = false, false
	ss = span(t, m, &s)
	assert.True(t, ss.ParentSpanID().IsEmpty())
	assert.NotEqual(t, cs.TraceID(), ss.TraceID())
}

func TestTraceParent(t *testing.T) {
	m := New(Config{BootID: boot})
	tp := h2.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.True(t, tp.Valid)
	c, s := pair()
	c.TraceParent, s.TraceParent = tp, tp
	cs, ss := span(t, m, &c), span(t, m, &s)
	assert.Equal(t, tp.TraceID, cs.TraceID())
	assert.Equal(t, tp.ParentID, cs.ParentSpanID())
	assert.Equal(t, tp.TraceID, ss.TraceID())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID(), "the local client span sits between")
	assert.Equal(t, uint32(1), cs.Flags())

	// a remote client: the server span is the child of the traceparent
	s.ClientConnKnown = false
	ss = span(t, m, &s)
	assert.Equal(t, tp.TraceID, ss.TraceID())
	assert.Equal(t, tp.ParentID, ss.ParentSpanID())
}

func TestAttributesAndLink(t *testing.T) {
	m := New(Config{BootID: boot})
	c, s := pair()
	c.Flags = h2.FlagStreaming
	cs := span(t, m, &c)
	want := map[string]any{
		"rpc.system.name":          "grpc",
		"rpc.method":               "pkg.Svc/Do",
		"rpc.response.status_code": "OK",
		"server.address":           "svc.local",
		"server.port":              int64(50051),
		"network.peer.address":     "10.0.0.2",
		"network.peer.port":        int64(50051),
		"network.transport":        "tcp",
		"network.protocol.name":    "http",
		"network.protocol.version": "2",
		"process.pid":              int64(100),
		AttrStreamID:               int64(7),
		AttrReqDataFrames:          int64(1),
		AttrRespDataFrames:         int64(1),
		AttrReqHeaderBytes:         int64(0),
		AttrRespHeaderBytes:        int64(0),
		AttrFlags:                  []any{"streaming"},
	}
	assert.Equal(t, want, cs.Attributes().AsRaw())
	assert.Equal(t, ptrace.StatusCodeUnset, cs.Status().Code())
	assert.Equal(t, pcommon.Timestamp(10), cs.StartTimestamp())
	assert.Equal(t, pcommon.Timestamp(20), cs.EndTimestamp())
	require.Equal(t, 1, cs.Links().Len())
	assert.Equal(t, procid.SpanID(boot, 100, 1000), cs.Links().At(0).SpanID())
	assert.Equal(t, procid.TraceID(boot, 100, 1000), cs.Links().At(0).TraceID())

	s.Authority = ""
	ss := span(t, m, &s)
	v, _ := ss.Attributes().Get("server.address")
	assert.Equal(t, "10.0.0.2", v.Str(), "no :authority: the server's address")
	v, _ = ss.Attributes().Get("network.peer.address")
	assert.Equal(t, "10.0.0.1", v.Str())
	assert.Equal(t, procid.SpanID(boot, 200, 2000), ss.Links().At(0).SpanID())

	// the process model can name the process's trace
	want2 := pcommon.TraceID{9}
	m = New(Config{BootID: boot, ProcessTraceID: func(pid uint32, _ uint64) (pcommon.TraceID, bool) {
		return want2, pid == 100
	}})
	assert.Equal(t, want2, span(t, m, &c).Links().At(0).TraceID())
}

func TestStatusRules(t *testing.T) {
	m := New(Config{BootID: boot})
	serverErrors := map[int]bool{2: true, 4: true, 12: true, 13: true, 14: true, 15: true}
	for code := 0; code <= 16; code++ {
		c, s := pair()
		c.GRPCStatus, s.GRPCStatus = code, code
		c.GRPCMessage, s.GRPCMessage = "msg", "msg"
		cs, ss := span(t, m, &c), span(t, m, &s)
		v, _ := cs.Attributes().Get("rpc.response.status_code")
		assert.Equal(t, StatusName(code), v.Str())
		if code == 0 {
			assert.Equal(t, ptrace.StatusCodeUnset, cs.Status().Code())
		} else {
			assert.Equal(t, ptrace.StatusCodeError, cs.Status().Code(), "client %d", code)
			assert.Equal(t, "msg", cs.Status().Message())
			e, _ := cs.Attributes().Get("error.type")
			assert.Equal(t, StatusName(code), e.Str())
		}
		if serverErrors[code] {
			assert.Equal(t, ptrace.StatusCodeError, ss.Status().Code(), "server %d", code)
		} else {
			assert.Equal(t, ptrace.StatusCodeUnset, ss.Status().Code(), "server %d", code)
		}
	}
	assert.Equal(t, "UNAUTHENTICATED", StatusName(16))
	assert.Equal(t, "17", StatusName(17))
	assert.True(t, IsError(17, h2.SideServer))
	c, _ := pair()
	c.GRPCStatus = -1
	_, ok := span(t, m, &c).Attributes().Get("rpc.response.status_code")
	assert.False(t, ok)
}

func TestOtherMethod(t *testing.T) {
	m := New(Config{BootID: boot})
	c, _ := pair()
	c.Flags |= h2.FlagMethodUnknown
	c.Path, c.Service, c.RPC = "", "", ""
	cs := span(t, m, &c)
	assert.Equal(t, "grpc", cs.Name())
	v, _ := cs.Attributes().Get("rpc.method")
	assert.Equal(t, Other, v.Str())
	_, ok := cs.Attributes().Get("rpc.method_original")
	assert.False(t, ok)

	c, _ = pair()
	c.Path, c.Service, c.RPC = "/not-grpc", "", ""
	cs = span(t, m, &c)
	v, _ = cs.Attributes().Get("rpc.method_original")
	assert.Equal(t, "not-grpc", v.Str())

	m = New(Config{BootID: boot, KnownMethods: []string{"pkg.Svc/Other"}})
	c, _ = pair()
	cs = span(t, m, &c)
	v, _ = cs.Attributes().Get("rpc.method")
	assert.Equal(t, Other, v.Str())
	v, _ = cs.Attributes().Get("rpc.method_original")
	assert.Equal(t, "pkg.Svc/Do", v.Str())
}

func TestPlainHTTP(t *testing.T) {
	m := New(Config{BootID: boot})
	c, s := pair()
	c.Protocol, s.Protocol = h2.ProtoHTTP, h2.ProtoHTTP
	c.Method, c.Path, c.HTTPStatus, c.GRPCStatus = "GET", "/index.html", 404, -1
	s.Method, s.Path, s.HTTPStatus, s.GRPCStatus = "GET", "/index.html", 404, -1
	cs, ss := span(t, m, &c), span(t, m, &s)
	assert.Equal(t, "GET", cs.Name())
	v, _ := cs.Attributes().Get("http.response.status_code")
	assert.Equal(t, int64(404), v.Int())
	v, _ = cs.Attributes().Get("url.path")
	assert.Equal(t, "/index.html", v.Str())
	assert.Equal(t, ptrace.StatusCodeError, cs.Status().Code())
	assert.Equal(t, ptrace.StatusCodeUnset, ss.Status().Code())
	_, ok := cs.Attributes().Get("rpc.system.name")
	assert.False(t, ok)
}

// TestHTTP1 checks an HTTP/1.x call's span (semconv HTTP spans, stable):
// its version, scheme, user agent (cut), client address on the server
// span, and the ids that join both ends as for HTTP/2.
func TestHTTP1(t *testing.T) {
	m := New(Config{BootID: boot, MaxValueLength: 16})
	c, s := pair()
	for _, x := range []*h2.Call{&c, &s} {
		x.Protocol, x.GRPCStatus, x.Version, x.TLS = h2.ProtoHTTP1, -1, "1.0", true
		x.Method, x.Path, x.HTTPStatus = "POST", "/orders?id=1", 503
		x.UserAgent = "curl/8.11.1 with a long tail"
	}
	cs, ss := span(t, m, &c), span(t, m, &s)
	for _, sp := range []ptrace.Span{cs, ss} {
		assert.Equal(t, "POST", sp.Name())
		a := sp.Attributes().AsRaw()
		assert.Equal(t, "1.0", a["network.protocol.version"])
		assert.Equal(t, "https", a["url.scheme"])
		assert.Equal(t, "curl/8.11.1 with", a["user_agent.original"], "cut at max_attribute_length")
		assert.Equal(t, "/orders", a["url.path"])
		assert.Equal(t, int64(503), a["http.response.status_code"])
		assert.Equal(t, "503", a["error.type"])
		assert.Equal(t, ptrace.StatusCodeError, sp.Status().Code())
	}
	_, ok := cs.Attributes().Get("client.address")
	assert.False(t, ok, "a client span has no client.address")
	v, _ := ss.Attributes().Get("client.address")
	assert.Equal(t, s.Remote.Addr.String(), v.Str())
	assert.Equal(t, cs.SpanID(), ss.ParentSpanID(), "the server span is the client span's child")
	assert.Equal(t, cs.TraceID(), ss.TraceID())
}

func TestLocalAddrs(t *testing.T) {
	l := NewLocalAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.3"))
	assert.True(t, l.IsLocal(netip.MustParseAddr("127.0.0.1")))
	assert.True(t, l.IsLocal(netip.MustParseAddr("::1")))
	assert.True(t, l.IsLocal(netip.MustParseAddr("10.0.0.1")))
	assert.True(t, l.IsLocal(netip.MustParseAddr("::ffff:10.0.0.1")))
	assert.True(t, l.IsLocal(netip.MustParseAddr("10.0.0.3")))
	assert.False(t, l.IsLocal(netip.MustParseAddr("10.0.0.2")))
	var none *LocalAddrs
	assert.True(t, none.IsLocal(netip.MustParseAddr("127.0.0.2")))
	assert.False(t, none.IsLocal(netip.MustParseAddr("10.0.0.2")))
	addrs, err := InterfaceAddrs()
	require.NoError(t, err)
	assert.NotEmpty(t, addrs)
}

// BenchmarkAppend maps the two ends of one call, as the receiver does for
// every call between two processes of this host.
func BenchmarkAppend(b *testing.B) {
	m := New(Config{BootID: boot})
	c, s := pair()
	b.ReportAllocs()
	for b.Loop() {
		ss := ptrace.NewSpanSlice()
		m.Append(ss, &c)
		m.Append(ss, &s)
	}
}

// BenchmarkAppendSeq is BenchmarkAppend with the call's TCP sequence
// numbers known: the ids every node computes alike (the cross-host join).
func BenchmarkAppendSeq(b *testing.B) {
	m := New(Config{BootID: boot})
	c, s := pair()
	for _, x := range []*h2.Call{&c, &s} {
		x.ReqSeq, x.RespSeq, x.ReqSeqKnown, x.RespSeqKnown = 0x9a3c11f0, 0x11d2e877, true, true
	}
	b.ReportAllocs()
	for b.Loop() {
		ss := ptrace.NewSpanSlice()
		m.Append(ss, &c)
		m.Append(ss, &s)
	}
}

// The remembered process ids and address strings stay bounded and right.
func TestCachesBoundedAndRight(t *testing.T) {
	m := New(Config{BootID: boot})
	c, _ := pair()
	for i := range cacheMax + 10 {
		c.Proc = h2.Proc{PID: uint32(1000 + i), StartNs: uint64(i)}
		c.Remote.Addr = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		sp := span(t, m, &c)
		require.LessOrEqual(t, len(m.procs), cacheMax)
		require.LessOrEqual(t, len(m.addrs), cacheMax)
		if i%1000 == 0 || i >= cacheMax {
			l := sp.Links().At(0)
			require.Equal(t, procid.SpanID(boot, c.Proc.PID, c.Proc.StartNs), l.SpanID())
			require.Equal(t, procid.TraceID(boot, c.Proc.PID, c.Proc.StartNs), l.TraceID())
			v, _ := sp.Attributes().Get("network.peer.address")
			require.Equal(t, c.Remote.Addr.String(), v.Str())
		}
	}
}

// Ids never repeat across loads: connection and stream ids start over with
// every load of the capture (and in a second collector on the host), so the
// same numbers in another instance name another call.
func TestIDsDifferPerInstance(t *testing.T) {
	c, s := pair()
	a := New(Config{BootID: boot, Instance: [16]byte{1}})
	b := New(Config{BootID: boot, Instance: [16]byte{2}})
	ac, as := span(t, a, &c), span(t, a, &s)
	bc, bs := span(t, b, &c), span(t, b, &s)
	assert.NotEqual(t, ac.TraceID(), bc.TraceID())
	assert.NotEqual(t, ac.SpanID(), bc.SpanID())
	assert.NotEqual(t, as.SpanID(), bs.SpanID())
	// within one instance both ends still join
	assert.Equal(t, ac.SpanID(), as.ParentSpanID())
	assert.Equal(t, bc.SpanID(), bs.ParentSpanID())
}

// What a peer chooses leaves the host bounded: the query string is not
// exported unless asked, url.path has no query, grpc-message and other peer
// values are cut, unknown HTTP methods are _OTHER.
func TestPeerValuesBounded(t *testing.T) {
	m := New(Config{BootID: boot, MaxValueLength: 16, MaxStatusMessageLength: 8})
	c, _ := pair()
	c.Protocol, c.GRPCStatus = h2.ProtoHTTP, -1
	c.Method, c.Path = "GET", "/login?token=s3cr3t#frag"
	cs := span(t, m, &c)
	v, _ := cs.Attributes().Get("url.path")
	assert.Equal(t, "/login", v.Str())
	_, ok := cs.Attributes().Get("url.query")
	assert.False(t, ok, "url.query is off by default")
	assert.Equal(t, uint64(1), m.Stats().URLQueriesNotExported)

	q := New(Config{BootID: boot, URLQuery: true})
	v, _ = span(t, q, &c).Attributes().Get("url.query")
	assert.Equal(t, "token=s3cr3t", v.Str())

	c.Method, c.Path = "X-EVIL-"+string(make([]byte, 40)), "/"+string(make([]byte, 100))
	cs = span(t, m, &c)
	assert.Equal(t, "HTTP", cs.Name())
	v, _ = cs.Attributes().Get("http.request.method")
	assert.Equal(t, Other, v.Str())
	v, _ = cs.Attributes().Get("http.request.method_original")
	assert.Len(t, v.Str(), 16)
	v, _ = cs.Attributes().Get("url.path")
	assert.Len(t, v.Str(), 16)

	g, _ := pair()
	g.GRPCStatus, g.GRPCMessage = 13, "héllo wörld, a long message"
	g.Authority = "a-very-long-authority.example.com:443"
	gs := span(t, m, &g)
	assert.Equal(t, "héllo w", gs.Status().Message(), "cut at 8 bytes, not inside a rune")
	v, _ = gs.Attributes().Get("server.address")
	assert.Len(t, v.Str(), 16)
	assert.Equal(t, uint64(1), m.Stats().StatusMessagesCut)
	assert.Positive(t, m.Stats().ValuesCut)
}

// rpc.method (and so the span name) takes at most MaxMethods distinct
// values: a peer sending a new path per call cannot grow a backend's
// cardinality.
func TestMethodCardinality(t *testing.T) {
	m := New(Config{BootID: boot, MaxMethods: 3})
	c, _ := pair()
	names := map[string]int{}
	for i := range 10 {
		c.Path = "/pkg.Svc/M" + strconv.Itoa(i%5)
		c.Service, c.RPC, _ = h2.SplitPath(c.Path)
		names[span(t, m, &c).Name()]++
	}
	assert.Equal(t, map[string]int{"pkg.Svc/M0": 2, "pkg.Svc/M1": 2, "pkg.Svc/M2": 2, "grpc": 4}, names)
	assert.Equal(t, uint64(4), m.Stats().MethodsOverLimit)
	c.Path = "/pkg.Svc/M1"
	c.Service, c.RPC, _ = h2.SplitPath(c.Path)
	v, _ := span(t, m, &c).Attributes().Get("rpc.method")
	assert.Equal(t, "pkg.Svc/M1", v.Str(), "a method kept stays kept")
}

func TestCutUTF8(t *testing.T) {
	assert.Equal(t, "abc", cutUTF8("abc", 5))
	assert.Equal(t, "ab", cutUTF8("abc", 2))
	assert.Equal(t, "a", cutUTF8("aé", 2))
	assert.Equal(t, "aé", cutUTF8("aéb", 3))
	assert.Equal(t, "\xff\xff", cutUTF8("\xff\xff\xff", 2))
}

// TestAuthorityUserinfo: a request-target in absolute form (or a Host, or
// an :authority) may carry userinfo ("user:password@host", as clients
// write a proxy's request): server.address is its host alone, the
// credentials never reach a span.
func TestAuthorityUserinfo(t *testing.T) {
	m := New(Config{BootID: boot})
	for _, tc := range []struct{ authority, host string }{
		{"alice:s3cret@api.example:8080", "api.example"},
		{"alice:s3cret@api.example", "api.example"},
		{"alice@[::1]:81", "::1"},
		{"a@b:s3cret@api.example", "api.example"},
	} {
		c, _ := pair()
		c.Protocol, c.GRPCStatus, c.Method, c.Path = h2.ProtoHTTP1, -1, "GET", "/"
		c.Authority = tc.authority
		a := span(t, m, &c).Attributes().AsRaw()
		assert.Equal(t, tc.host, a["server.address"], tc.authority)
		for k, v := range a {
			assert.NotContains(t, fmt.Sprint(v), "s3cret", k)
			assert.NotContains(t, fmt.Sprint(v), "alice", k)
		}
	}
}
