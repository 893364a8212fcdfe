// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/internal/procid"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

func call(side h2.Side, status int) *h2.Call {
	cl := h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.1"), Port: 40000}
	sv := h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.1"), Port: 50051}
	c := &h2.Call{Conn: 1, ClientConn: 1, ClientConnKnown: true, Side: side, StreamID: 3, Start: 100, End: 200,
		Service: "grpc.testing.TestService", RPC: "UnaryCall", Path: "/grpc.testing.TestService/UnaryCall", Method: "POST",
		Protocol: h2.ProtoGRPC, GRPCStatus: status, Proc: h2.Proc{PID: 10, TID: 11, StartNs: 12}, Local: cl, Remote: sv}
	if side == h2.SideServer {
		c.Conn, c.Local, c.Remote = 2, sv, cl
	}
	return c
}

func TestSpansClientServerPair(t *testing.T) {
	m := spanMapper{service: "svc", proc: procid.New("boot")}
	td, spans := m.newTraces()
	m.appendSpan(spans, call(h2.SideClient, 0))
	m.appendSpan(spans, call(h2.SideServer, 0))
	require.Equal(t, 2, td.SpanCount())
	c, s := spans.At(0), spans.At(1)
	assert.Equal(t, ptrace.SpanKindClient, c.Kind())
	assert.Equal(t, ptrace.SpanKindServer, s.Kind())
	assert.Equal(t, "grpc.testing.TestService/UnaryCall", c.Name())
	assert.Equal(t, c.TraceID(), s.TraceID(), "one trace for both ends")
	assert.Equal(t, c.SpanID(), s.ParentSpanID(), "the server span is the client span's child")
	assert.NotEqual(t, c.SpanID(), s.SpanID())
	assert.True(t, c.ParentSpanID().IsEmpty())
	v, _ := c.Attributes().Get("rpc.response.status_code")
	assert.Equal(t, "OK", v.Str())
	v, _ = c.Attributes().Get("server.port")
	assert.Equal(t, int64(50051), v.Int())
	v, _ = s.Attributes().Get("client.port")
	assert.Equal(t, int64(40000), v.Int())
	require.Equal(t, 1, c.Links().Len())
	assert.Equal(t, procid.New("boot").SpanID(10, 12), c.Links().At(0).SpanID())
	assert.Equal(t, ptrace.StatusCodeUnset, c.Status().Code())
}

func TestSpansErrorStatus(t *testing.T) {
	m := spanMapper{service: "svc"}
	_, spans := m.newTraces()
	m.appendSpan(spans, call(h2.SideClient, 5))  // NOT_FOUND: an error for the client
	m.appendSpan(spans, call(h2.SideServer, 5))  // not for the server
	m.appendSpan(spans, call(h2.SideServer, 13)) // INTERNAL: for both
	assert.Equal(t, ptrace.StatusCodeError, spans.At(0).Status().Code())
	assert.Equal(t, ptrace.StatusCodeUnset, spans.At(1).Status().Code())
	assert.Equal(t, ptrace.StatusCodeError, spans.At(2).Status().Code())
	v, _ := spans.At(0).Attributes().Get("error.type")
	assert.Equal(t, "NOT_FOUND", v.Str())
}

func TestSpansTraceParent(t *testing.T) {
	m := spanMapper{service: "svc"}
	_, spans := m.newTraces()
	c := call(h2.SideClient, 0)
	c.TraceParent = h2.TraceParent{Valid: true, TraceID: [16]byte{1}, ParentID: [8]byte{2}}
	m.appendSpan(spans, c)
	assert.Equal(t, [16]byte{1}, [16]byte(spans.At(0).TraceID()))
	assert.Equal(t, [8]byte{2}, [8]byte(spans.At(0).ParentSpanID()))
}

func TestSnake(t *testing.T) {
	assert.Equal(t, "hpack_errors", snake("HPACKErrors"))
	assert.Equal(t, "conns_without_open", snake("ConnsWithoutOpen"))
	assert.Equal(t, "bytes_holes", snake("BytesHoles"))
}
