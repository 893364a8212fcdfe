// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/otelcol-seq/otelcol-seq/internal/procid"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
)

// This receiver's own span attributes (not in semconv).
const (
	AttrStreamID  = "http2.stream.id"        // the call's HTTP/2 stream id
	AttrResetCode = "http2.reset.error_code" // RST_STREAM error code, when reset
	AttrGap       = "grpc_receiver.gap"      // bytes of the connection were lost while the call was open
	AttrEvicted   = "grpc_receiver.evicted"  // ended by the idle timeout, not by its end
	AttrClosed    = "grpc_receiver.conn_closed"
	AttrGoAway    = "grpc_receiver.goaway"
	AttrCancelled = "grpc_receiver.cancelled"
	AttrMessage   = "rpc.grpc.status_message"
	AttrReqBytes  = "rpc.request.body.size"  // DATA bytes of the request (length-prefixed messages)
	AttrRespBytes = "rpc.response.body.size" // DATA bytes of the response
)

// grpcCodes are the gRPC status codes' names, as rpc.response.status_code wants them.
var grpcCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

func codeName(c int) string {
	if c >= 0 && c < len(grpcCodes) {
		return grpcCodes[c]
	}
	return strconv.Itoa(c)
}

// serverErrors are the codes a server span counts as errors (semconv's gRPC page).
func serverError(c int) bool {
	switch c {
	case 2, 4, 12, 13, 14, 15:
		return true
	}
	return false
}

// spanMapper turns calls into spans. ids salts the trace and span ids of
// calls without a traceparent so that two collectors do not collide; proc
// gives the process span ids of the seq receiver (links).
type spanMapper struct {
	service string
	salt    [8]byte
	proc    procid.IDs
}

func (m *spanMapper) hash(kind byte, conn h2.ConnID, sid uint32) [32]byte {
	var b [8 + 1 + 8 + 4]byte
	copy(b[:8], m.salt[:])
	b[8] = kind
	binary.LittleEndian.PutUint64(b[9:], uint64(conn))
	binary.LittleEndian.PutUint32(b[17:], sid)
	return sha256.Sum256(b[:])
}

// ids returns the trace id, the span id and the parent of a call's span.
// Both ends of a call between two processes of this host get the same trace,
// the server's span a child of the client's (the client socket is known on
// both sides); a traceparent header wins for the trace and the client's parent.
func (m *spanMapper) ids(c *h2.Call) (pcommon.TraceID, pcommon.SpanID, pcommon.SpanID) {
	client := c.ClientConn
	if !c.ClientConnKnown {
		client = c.Conn
	}
	t := m.hash('t', client, c.StreamID)
	cs := m.hash('c', client, c.StreamID)
	var trace pcommon.TraceID
	copy(trace[:], t[:16])
	var clientSpan pcommon.SpanID
	copy(clientSpan[:], cs[:8])
	var parent pcommon.SpanID
	if c.TraceParent.Valid {
		trace = c.TraceParent.TraceID
		parent = c.TraceParent.ParentID
	}
	if c.Side == h2.SideClient {
		return trace, clientSpan, parent
	}
	ss := m.hash('s', c.Conn, c.StreamID)
	var span pcommon.SpanID
	copy(span[:], ss[:8])
	if c.ClientConnKnown {
		parent = clientSpan
	}
	return trace, span, parent
}

// newTraces starts a batch: one resource (service.name), one scope.
func (m *spanMapper) newTraces() (ptrace.Traces, ptrace.SpanSlice) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(string(semconv.ServiceNameKey), m.service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	return td, ss.Spans()
}

// appendSpan maps one call.
func (m *spanMapper) appendSpan(spans ptrace.SpanSlice, c *h2.Call) {
	s := spans.AppendEmpty()
	trace, id, parent := m.ids(c)
	s.SetTraceID(trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(c.Start)
	s.SetEndTimestamp(c.End)
	if c.Side == h2.SideClient {
		s.SetKind(ptrace.SpanKindClient)
	} else {
		s.SetKind(ptrace.SpanKindServer)
	}
	a := s.Attributes()
	grpc := c.Protocol == h2.ProtoGRPC
	switch {
	case grpc && c.Service != "" && c.RPC != "":
		s.SetName(c.Service + "/" + c.RPC)
		a.PutStr(string(semconv.RPCMethodKey), c.Service+"/"+c.RPC)
	case grpc:
		s.SetName("grpc")
		a.PutStr(string(semconv.RPCMethodKey), "_OTHER")
		if c.Path != "" {
			a.PutStr(string(semconv.RPCMethodOriginalKey), c.Path)
		}
	case c.Method != "":
		s.SetName(c.Method)
	default:
		s.SetName("HTTP")
	}
	if grpc {
		a.PutStr(string(semconv.RPCSystemNameKey), "grpc")
		if c.GRPCStatus >= 0 {
			name := codeName(c.GRPCStatus)
			a.PutStr(string(semconv.RPCResponseStatusCodeKey), name)
			if c.GRPCStatus != 0 && (c.Side == h2.SideClient || serverError(c.GRPCStatus)) {
				s.Status().SetCode(ptrace.StatusCodeError)
				s.Status().SetMessage(c.GRPCMessage)
				a.PutStr(string(semconv.ErrorTypeKey), name)
			}
		}
		if c.GRPCMessage != "" {
			a.PutStr(AttrMessage, c.GRPCMessage)
		}
	} else {
		if c.Method != "" {
			a.PutStr(string(semconv.HTTPRequestMethodKey), c.Method)
		}
		if c.Path != "" {
			a.PutStr(string(semconv.URLPathKey), c.Path)
		}
		if c.HTTPStatus != 0 {
			a.PutInt(string(semconv.HTTPResponseStatusCodeKey), int64(c.HTTPStatus))
			if c.HTTPStatus >= 500 || (c.Side == h2.SideClient && c.HTTPStatus >= 400) {
				s.Status().SetCode(ptrace.StatusCodeError)
				a.PutStr(string(semconv.ErrorTypeKey), strconv.Itoa(c.HTTPStatus))
			}
		}
	}
	server, peer := c.Local, c.Remote
	if c.Side == h2.SideClient {
		server = c.Remote
	} else if c.Remote.Addr.IsValid() {
		a.PutStr(string(semconv.ClientAddressKey), c.Remote.Addr.String())
		a.PutInt(string(semconv.ClientPortKey), int64(c.Remote.Port))
	}
	if server.Addr.IsValid() {
		a.PutStr(string(semconv.ServerAddressKey), server.Addr.String())
		a.PutInt(string(semconv.ServerPortKey), int64(server.Port))
	}
	if peer.Addr.IsValid() {
		a.PutStr(string(semconv.NetworkPeerAddressKey), peer.Addr.String())
		a.PutInt(string(semconv.NetworkPeerPortKey), int64(peer.Port))
	}
	a.PutStr(string(semconv.NetworkProtocolNameKey), "http")
	a.PutStr(string(semconv.NetworkProtocolVersionKey), "2")
	if c.Proc.PID != 0 {
		a.PutInt(string(semconv.ProcessPIDKey), int64(c.Proc.PID))
		a.PutInt(string(semconv.ThreadIDKey), int64(c.Proc.TID))
		if c.Proc.StartNs != 0 {
			// The process's span of the seq receiver (same boot id, pid, start time).
			l := s.Links().AppendEmpty()
			l.SetTraceID(m.proc.TraceID(c.Proc.PID, c.Proc.StartNs))
			l.SetSpanID(m.proc.SpanID(c.Proc.PID, c.Proc.StartNs))
			l.Attributes().PutStr("link.type", "process")
		}
	}
	a.PutInt(AttrStreamID, int64(c.StreamID))
	a.PutInt(AttrReqBytes, int64(c.ReqDataBytes))
	a.PutInt(AttrRespBytes, int64(c.RespDataBytes))
	if c.Has(h2.FlagReset) {
		a.PutInt(AttrResetCode, int64(c.ResetCode))
	}
	for _, f := range []struct {
		flag h2.CallFlags
		key  string
	}{{h2.FlagGap, AttrGap}, {h2.FlagEvicted, AttrEvicted}, {h2.FlagConnClosed, AttrClosed}, {h2.FlagGoAway, AttrGoAway}, {h2.FlagCancelled, AttrCancelled}} {
		if c.Has(f.flag) {
			a.PutBool(f.key, true)
		}
	}
}
