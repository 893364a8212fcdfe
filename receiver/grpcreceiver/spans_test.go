// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
)

// call is a finished unary call seen from one side, for unit tests.
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

func TestNewTraces(t *testing.T) {
	td, spans := newTraces("svc")
	spans.AppendEmpty()
	v, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("service.name")
	assert.Equal(t, "svc", v.Str())
	assert.Equal(t, metadata.ScopeName, td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().Name())
	assert.Equal(t, 1, td.SpanCount())
}
