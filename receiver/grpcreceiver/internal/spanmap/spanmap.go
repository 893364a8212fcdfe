// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spanmap

import (
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/otelcol-seq/otelcol-seq/internal/procid"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Other is rpc.method of a call whose method is not known or recognised.
const Other = "_OTHER"

// Attributes of this receiver beyond the semantic conventions.
const (
	AttrResetCode       = "seq.grpc.reset_code"
	AttrFlags           = "seq.grpc.flags" // the names of the call's flags
	AttrReqDataFrames   = "seq.grpc.request.data_frames"
	AttrRespDataFrames  = "seq.grpc.response.data_frames"
	AttrReqHeaderBytes  = "seq.grpc.request.header_bytes"
	AttrRespHeaderBytes = "seq.grpc.response.header_bytes"
	AttrStreamID        = "seq.grpc.stream_id"
	// AttrMethodPlaceholder: a method that cannot be known (rpc.method
	// _OTHER) named by an HPACK entry from before the capture started:
	// "_UNKNOWN_<n>" (h2.Call.MethodPlaceholder), the same for the calls
	// of one method on one connection (with network.peer.* and
	// process.pid: a connection's calls of one method).
	AttrMethodPlaceholder = "seq.grpc.method_placeholder"
)

// Defaults of the bounds on what a peer's headers put into a span.
const (
	DefaultMaxMethods          = 1000
	DefaultMaxValueLength      = 256
	DefaultMaxStatusMessageLen = 128
)

// Config configures a Mapper.
type Config struct {
	// BootID is /proc/sys/kernel/random/boot_id (without the newline).
	BootID string
	// Instance makes the derived ids of this Mapper differ from those of
	// every other (a collector restarted, a second collector on the host):
	// connection ids and stream ids start over with each load, the calls
	// they name do not. The receiver draws it at random when it starts.
	Instance [16]byte
	// KnownMethods, when not empty, are the recognised methods
	// ("pkg.Service/Method"): any other is reported as _OTHER with
	// rpc.method_original. Empty: every well-formed gRPC path is recognised,
	// up to MaxMethods distinct ones.
	KnownMethods []string
	// MaxMethods bounds the distinct rpc.method values (and so span names)
	// when KnownMethods is empty: the first MaxMethods methods seen are
	// kept, any later new one is _OTHER (counted in Stats.MethodsOverLimit).
	// 0: DefaultMaxMethods.
	MaxMethods int
	// MaxValueLength cuts the values a peer chooses (url.path, url.query,
	// rpc.method_original, http.request.method_original, server.address
	// from :authority) at this many bytes (on a UTF-8 boundary; counted in
	// Stats.ValuesCut). 0: DefaultMaxValueLength.
	MaxValueLength int
	// MaxStatusMessageLength cuts grpc-message (the span's status message)
	// likewise. 0: DefaultMaxStatusMessageLen.
	MaxStatusMessageLength int
	// URLQuery exports url.query for plain HTTP/2 requests. Off by default:
	// query strings carry tokens and other secrets.
	URLQuery bool
	// ProcessTraceID, when set, gives the trace id of a process's span for
	// the link (the process model knows the trace a process belongs to).
	// Unset: the trace the process would root (procid.IDs.TraceID).
	ProcessTraceID func(pid uint32, startNs uint64) (pcommon.TraceID, bool)
}

// Stats count what the Mapper bounded.
type Stats struct {
	MethodsOverLimit       uint64 // calls whose method became _OTHER because MaxMethods were seen already
	ValuesCut              uint64 // peer-chosen attribute values cut at MaxValueLength
	StatusMessagesCut      uint64 // grpc-messages cut at MaxStatusMessageLength
	HTTPMethodsUnknown     uint64 // plain HTTP requests whose method is not a known one (_OTHER)
	URLQueriesNotExported  uint64 // plain HTTP requests whose query was left out (URLQuery off)
	SpansMethodPlaceholder uint64 // spans given AttrMethodPlaceholder (the tracker counts the calls: method_placeholders)
}

// Mapper builds spans. It is not safe for concurrent use.
type Mapper struct {
	cfg   Config
	boot  []byte
	proc  procid.IDs
	known map[string]struct{}
	// seen are the methods kept so far (KnownMethods empty), at most
	// cfg.MaxMethods.
	seen  map[string]struct{}
	stats Stats
	buf   []byte
	// Per-call work that depends only on the process or the address,
	// remembered: a process's span ids (two SHA-256 each) and an address's
	// text. Bounded by cacheMax entries each, forgotten all at once.
	procs map[procKey]procIDs
	addrs map[netip.Addr]string
}

// cacheMax bounds the Mapper's caches.
const cacheMax = 4096

// numAttrs is the most attributes a span gets (capacity reserved up front).
const numAttrs = 20

type procKey struct {
	pid   uint32
	start uint64
}

type procIDs struct {
	span  pcommon.SpanID
	trace pcommon.TraceID
}

// procIDs returns the ids of the span of process (pid, start) that the
// seq receiver emits.
func (m *Mapper) procIDs(pid uint32, start uint64) procIDs {
	k := procKey{pid, start}
	if ids, ok := m.procs[k]; ok {
		return ids
	}
	if len(m.procs) >= cacheMax {
		clear(m.procs)
	}
	ids := procIDs{span: m.proc.SpanID(pid, start), trace: m.proc.TraceID(pid, start)}
	m.procs[k] = ids
	return ids
}

// addrString is a.Unmap().String(), remembered.
func (m *Mapper) addrString(a netip.Addr) string {
	if s, ok := m.addrs[a]; ok {
		return s
	}
	if len(m.addrs) >= cacheMax {
		clear(m.addrs)
	}
	s := a.Unmap().String()
	m.addrs[a] = s
	return s
}

// New returns a Mapper.
func New(cfg Config) *Mapper {
	if cfg.MaxMethods <= 0 {
		cfg.MaxMethods = DefaultMaxMethods
	}
	if cfg.MaxValueLength <= 0 {
		cfg.MaxValueLength = DefaultMaxValueLength
	}
	if cfg.MaxStatusMessageLength <= 0 {
		cfg.MaxStatusMessageLength = DefaultMaxStatusMessageLen
	}
	m := &Mapper{
		cfg: cfg, boot: []byte(cfg.BootID), proc: procid.New(cfg.BootID),
		procs: map[procKey]procIDs{}, addrs: map[netip.Addr]string{}, seen: map[string]struct{}{},
	}
	if len(cfg.KnownMethods) > 0 {
		m.known = make(map[string]struct{}, len(cfg.KnownMethods))
		for _, k := range cfg.KnownMethods {
			m.known[k] = struct{}{}
		}
	}
	return m
}

// Stats returns the counters.
func (m *Mapper) Stats() Stats { return m.stats }

// hash returns sha256(kind \0 boot \0 instance \0 conn \0 local \0 remote \0 stream).
func (m *Mapper) hash(kind string, conn h2.ConnID, local, remote h2.Endpoint, sid uint32) [sha256.Size]byte {
	b := append(m.buf[:0], kind...)
	b = append(b, 0)
	b = append(b, m.boot...)
	b = append(b, 0)
	b = append(b, m.cfg.Instance[:]...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(conn))
	for _, e := range [2]h2.Endpoint{local, remote} {
		b = append(b, 0)
		b = e.Addr.Unmap().AppendTo(b)
		b = binary.BigEndian.AppendUint16(b, e.Port)
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, sid)
	m.buf = b
	return sha256.Sum256(b)
}

// Kinds of the hashes of calls whose sequence numbers are known: nothing
// of this host goes into them, so both ends compute them alike.
const (
	kindClientSeq = "seq.grpc.client.tcpseq"
	kindServerSeq = "seq.grpc.server.tcpseq"
)

// seqHash returns sha256(kind \0 ReqSeq \0 (1 RespSeq | 0) \0 stream): what
// both ends of a call see alike, whatever host, collector, socket or NAT
// (c.ReqSeqKnown).
func (m *Mapper) seqHash(kind string, c *h2.Call) [sha256.Size]byte {
	b := append(m.buf[:0], kind...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, c.ReqSeq)
	b = append(b, 0)
	if c.RespSeqKnown {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, c.RespSeq)
	} else {
		b = append(b, 0)
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, c.StreamID)
	m.buf = b
	return sha256.Sum256(b)
}

// Kinds of the hashes of TLS calls whose socket was found (c.ISN.Known).
const (
	kindClientISN = "seq.grpc.client.tlsisn"
	kindServerISN = "seq.grpc.server.tlsisn"
)

// isnHash returns sha256(kind \0 client ISN \0 server ISN \0 stream): the
// TCP connection under a TLS session, by the initial sequence numbers both
// of its ends derive from their sockets (h2.SockISN), and the stream,
// never reused within a connection (c.ISN.Known).
func (m *Mapper) isnHash(kind string, c *h2.Call) [sha256.Size]byte {
	client, server := c.ISN.ClientServer(c.Side)
	b := append(m.buf[:0], kind...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, client)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, server)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, c.StreamID)
	m.buf = b
	return sha256.Sum256(b)
}

func spanID(h [sha256.Size]byte) pcommon.SpanID {
	id := pcommon.SpanID(h[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

func traceID(h [sha256.Size]byte) pcommon.TraceID {
	id := pcommon.TraceID(h[8:24])
	if id.IsEmpty() {
		id[15] = 1
	}
	return id
}

// IDs are the ids of a call's span.
type IDs struct {
	Trace  pcommon.TraceID
	Span   pcommon.SpanID
	Parent pcommon.SpanID // empty for a root
}

// ClientIDs returns the ids of the client span of c, computed from either
// end: from the call's TCP sequence numbers when they are known (on any
// host, across NAT), or from its TLS session's socket's initial sequence
// numbers (the same), else the client's own call, or the server's when its
// client is on this host and known (c.ClientConnKnown). ok is false when
// they cannot be known.
func (m *Mapper) ClientIDs(c *h2.Call) (IDs, bool) {
	var h [sha256.Size]byte
	switch {
	case c.ReqSeqKnown:
		h = m.seqHash(kindClientSeq, c)
	case c.ISN.Known:
		h = m.isnHash(kindClientISN, c)
	case !c.ClientConnKnown:
		return IDs{}, false
	default:
		local, remote := c.Local, c.Remote // the client's 4-tuple, from the client
		if c.Side == h2.SideServer {
			local, remote = c.Remote, c.Local
		}
		h = m.hash("seq.grpc.client", c.ClientConn, local, remote, c.StreamID)
	}
	ids := IDs{Trace: traceID(h), Span: spanID(h)}
	if tp := c.TraceParent; tp.Valid {
		ids.Trace, ids.Parent = tp.TraceID, tp.ParentID
	}
	return ids, true
}

// SpanIDs returns the ids of c's span.
func (m *Mapper) SpanIDs(c *h2.Call) IDs {
	if c.Side == h2.SideClient {
		if ids, ok := m.ClientIDs(c); ok {
			return ids
		}
	}
	var h [sha256.Size]byte
	switch {
	case c.ReqSeqKnown:
		h = m.seqHash(kindServerSeq, c)
	case c.ISN.Known:
		h = m.isnHash(kindServerISN, c)
	default:
		h = m.hash("seq.grpc.server", c.Conn, c.Local, c.Remote, c.StreamID)
	}
	ids := IDs{Trace: traceID(h), Span: spanID(h)}
	if cl, ok := m.ClientIDs(c); ok {
		ids.Trace, ids.Parent = cl.Trace, cl.Span
	} else if tp := c.TraceParent; tp.Valid {
		ids.Trace, ids.Parent = tp.TraceID, tp.ParentID
	}
	return ids
}

// Method returns rpc.method of c and the original method when that is
// _OTHER and the method is known.
func (m *Mapper) Method(c *h2.Call) (method, original string) {
	if c.Has(h2.FlagMethodUnknown) {
		return Other, ""
	}
	p := c.Path
	if len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	if c.Service == "" {
		return Other, m.cut(p)
	}
	if m.known != nil {
		if _, ok := m.known[p]; !ok {
			return Other, m.cut(p)
		}
		return p, ""
	}
	if _, ok := m.seen[p]; !ok {
		if len(m.seen) >= m.cfg.MaxMethods || len(p) > m.cfg.MaxValueLength {
			m.stats.MethodsOverLimit++
			return Other, m.cut(p)
		}
		m.seen[p] = struct{}{}
	}
	return p, ""
}

// cut shortens a peer-chosen value to MaxValueLength bytes.
func (m *Mapper) cut(v string) string {
	if len(v) <= m.cfg.MaxValueLength {
		return v
	}
	m.stats.ValuesCut++
	return cutUTF8(v, m.cfg.MaxValueLength)
}

// cutUTF8 returns the longest prefix of v of at most n bytes that does not
// end inside a UTF-8 sequence.
func cutUTF8(v string, n int) string {
	if len(v) <= n {
		return v
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(v[i]) {
		i--
	}
	if i > 0 && !utf8.RuneStart(v[i]) {
		i = n // not UTF-8 anyway
	}
	return v[:i]
}

// Append appends the span of c to spans.
func (m *Mapper) Append(spans ptrace.SpanSlice, c *h2.Call) ptrace.Span {
	s := spans.AppendEmpty()
	ids := m.SpanIDs(c)
	s.SetTraceID(ids.Trace)
	s.SetSpanID(ids.Span)
	s.SetParentSpanID(ids.Parent)
	if tp := c.TraceParent; tp.Valid && tp.Flags&1 != 0 {
		s.SetFlags(1)
	}
	s.SetStartTimestamp(c.Start)
	s.SetEndTimestamp(c.End)
	s.SetKind(ptrace.SpanKindServer)
	if c.Side == h2.SideClient {
		s.SetKind(ptrace.SpanKindClient)
	}
	a := s.Attributes()
	a.EnsureCapacity(numAttrs)
	if c.Protocol == h2.ProtoHTTP || c.Protocol == h2.ProtoHTTP1 {
		m.httpAttrs(s, c)
	} else {
		m.rpcAttrs(s, c)
	}
	server, peer := c.Remote, c.Remote
	if c.Side == h2.SideServer {
		server = c.Local
	}
	host, port := authority(c.Authority)
	host = m.cut(host)
	if host == "" && server.Addr.IsValid() {
		host, port = m.addrString(server.Addr), int(server.Port)
	}
	if host != "" {
		a.PutStr(string(semconv.ServerAddressKey), host)
		if port > 0 {
			a.PutInt(string(semconv.ServerPortKey), int64(port))
		}
	}
	if peer.Addr.IsValid() {
		a.PutStr(string(semconv.NetworkPeerAddressKey), m.addrString(peer.Addr))
		a.PutInt(string(semconv.NetworkPeerPortKey), int64(peer.Port))
	}
	a.PutStr(string(semconv.NetworkTransportKey), semconv.NetworkTransportTCP.Value.AsString())
	a.PutStr(string(semconv.NetworkProtocolNameKey), "http")
	version := "2"
	if c.Protocol == h2.ProtoHTTP1 && c.Version != "" {
		version = c.Version
	}
	a.PutStr(string(semconv.NetworkProtocolVersionKey), version)
	a.PutInt(string(semconv.ProcessPIDKey), int64(c.Proc.PID))
	a.PutInt(AttrStreamID, int64(c.StreamID))
	a.PutInt(AttrReqDataFrames, int64(c.ReqDataFrames))
	a.PutInt(AttrRespDataFrames, int64(c.RespDataFrames))
	a.PutInt(AttrReqHeaderBytes, int64(c.ReqHeaderBytes))
	a.PutInt(AttrRespHeaderBytes, int64(c.RespHeaderBytes))
	if c.Has(h2.FlagReset) {
		a.PutInt(AttrResetCode, int64(c.ResetCode))
	}
	if names := flagNames(c.Flags); len(names) > 0 {
		sl := a.PutEmptySlice(AttrFlags)
		for _, n := range names {
			sl.AppendEmpty().SetStr(n)
		}
	}
	if c.Proc.PID != 0 {
		l := s.Links().AppendEmpty()
		ids := m.procIDs(c.Proc.PID, c.Proc.StartNs)
		l.SetSpanID(ids.span)
		tid, ok := pcommon.TraceID{}, false
		if m.cfg.ProcessTraceID != nil {
			tid, ok = m.cfg.ProcessTraceID(c.Proc.PID, c.Proc.StartNs)
		}
		if !ok {
			tid = ids.trace
		}
		l.SetTraceID(tid)
	}
	return s
}

func (m *Mapper) rpcAttrs(s ptrace.Span, c *h2.Call) {
	a := s.Attributes()
	method, original := m.Method(c)
	a.PutStr(string(semconv.RPCSystemNameKey), semconv.RPCSystemNameGRPC.Value.AsString())
	a.PutStr(string(semconv.RPCMethodKey), method)
	if original != "" {
		a.PutStr(string(semconv.RPCMethodOriginalKey), original)
	}
	if c.Has(h2.FlagMethodUnknown) && c.MethodPlaceholder != "" {
		m.stats.SpansMethodPlaceholder++
		a.PutStr(AttrMethodPlaceholder, c.MethodPlaceholder)
	}
	// span name: rpc.method, or rpc.system.name when it is _OTHER
	if method == Other {
		s.SetName("grpc")
	} else {
		s.SetName(method)
	}
	if c.GRPCStatus < 0 {
		return
	}
	name := StatusName(c.GRPCStatus)
	a.PutStr(string(semconv.RPCResponseStatusCodeKey), name)
	if IsError(c.GRPCStatus, c.Side) {
		a.PutStr(string(semconv.ErrorTypeKey), name)
		s.Status().SetCode(ptrace.StatusCodeError)
		msg := c.GRPCMessage
		if len(msg) > m.cfg.MaxStatusMessageLength {
			m.stats.StatusMessagesCut++
			msg = cutUTF8(msg, m.cfg.MaxStatusMessageLength)
		}
		s.Status().SetMessage(msg)
	}
}

func (m *Mapper) httpAttrs(s ptrace.Span, c *h2.Call) {
	a := s.Attributes()
	method := c.Method
	if _, ok := httpMethods[method]; ok {
		s.SetName(method)
	} else {
		// semconv: an unknown method is _OTHER, the span named HTTP
		m.stats.HTTPMethodsUnknown++
		s.SetName("HTTP")
		if method != "" {
			a.PutStr(string(semconv.HTTPRequestMethodOriginalKey), m.cut(method))
		}
		method = Other
	}
	a.PutStr(string(semconv.HTTPRequestMethodKey), method)
	scheme := "http"
	if c.TLS {
		scheme = "https"
	}
	a.PutStr(string(semconv.URLSchemeKey), scheme)
	if c.UserAgent != "" {
		a.PutStr(string(semconv.UserAgentOriginalKey), m.cut(c.UserAgent))
	}
	if c.Side == h2.SideServer && c.Remote.Addr.IsValid() {
		// semconv: a server span's client.address is its peer's (no
		// proxy header is trusted: any process may write one).
		a.PutStr(string(semconv.ClientAddressKey), m.addrString(c.Remote.Addr))
		a.PutInt(string(semconv.ClientPortKey), int64(c.Remote.Port))
	}
	if c.Path != "" {
		path, query, hasQuery := strings.Cut(c.Path, "?")
		path, _, _ = strings.Cut(path, "#") // never sent, but not ours to export
		a.PutStr(string(semconv.URLPathKey), m.cut(path))
		if hasQuery {
			query, _, _ = strings.Cut(query, "#")
			if m.cfg.URLQuery {
				a.PutStr(string(semconv.URLQueryKey), m.cut(query))
			} else {
				m.stats.URLQueriesNotExported++
			}
		}
	}
	if c.HTTPStatus > 0 {
		a.PutInt(string(semconv.HTTPResponseStatusCodeKey), int64(c.HTTPStatus))
		// HTTP: 5xx are errors; 4xx are errors for a client only
		if c.HTTPStatus >= 500 || (c.HTTPStatus >= 400 && c.Side == h2.SideClient) {
			a.PutStr(string(semconv.ErrorTypeKey), strconv.Itoa(c.HTTPStatus))
			s.Status().SetCode(ptrace.StatusCodeError)
		}
	}
}

// httpMethods are the methods semconv's http.request.method knows (RFC 9110,
// RFC 5789's PATCH); any other is _OTHER.
var httpMethods = map[string]struct{}{
	"CONNECT": {}, "DELETE": {}, "GET": {}, "HEAD": {}, "OPTIONS": {}, "PATCH": {}, "POST": {}, "PUT": {}, "TRACE": {},
}

// authority splits an :authority (or a Host, or an absolute-form
// request-target's authority) into host and port (0 when none). Userinfo
// ("user:password@", deprecated but still written by clients) is left
// out: credentials never reach a span.
func authority(a string) (string, int) {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		a = a[i+1:]
	}
	if a == "" {
		return "", 0
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return a, 0
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

var statusNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// StatusName is the name of a gRPC status code (its number when unknown).
func StatusName(code int) string {
	if code >= 0 && code < len(statusNames) {
		return statusNames[code]
	}
	return strconv.Itoa(code)
}

// IsError applies the gRPC conventions: for a client any status but OK is
// an error; for a server only UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED,
// INTERNAL, UNAVAILABLE and DATA_LOSS (and codes out of the range).
func IsError(code int, side h2.Side) bool {
	if code == 0 {
		return false
	}
	if side == h2.SideClient {
		return true
	}
	switch code {
	case 2, 4, 12, 13, 14, 15:
		return true
	}
	return code < 0 || code >= len(statusNames)
}

var flagList = [...]struct {
	f    h2.CallFlags
	name string
}{
	{h2.FlagMethodUnknown, "method_unknown"}, {h2.FlagCancelled, "cancelled"}, {h2.FlagReset, "reset"},
	{h2.FlagGoAway, "goaway"}, {h2.FlagConnClosed, "conn_closed"}, {h2.FlagEvicted, "evicted"},
	{h2.FlagStreaming, "streaming"}, {h2.FlagGap, "gap"}, {h2.FlagDeadline, "deadline"},
}

func flagNames(f h2.CallFlags) []string {
	var out []string
	for _, e := range flagList {
		if f&e.f != 0 {
			out = append(out, e.name)
		}
	}
	return out
}

// LocalAddrs is the set of this host's addresses: a peer at one of them (or
// at a loopback address) is on this host.
type LocalAddrs struct {
	set map[netip.Addr]struct{}
}

// NewLocalAddrs returns the set of addrs.
func NewLocalAddrs(addrs ...netip.Addr) *LocalAddrs {
	l := &LocalAddrs{set: make(map[netip.Addr]struct{}, len(addrs))}
	for _, a := range addrs {
		l.set[a.Unmap()] = struct{}{}
	}
	return l
}

// InterfaceAddrs returns the addresses of this host's interfaces (of the
// caller's network namespace).
func InterfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

// IsLocal says whether a is a loopback address or one of the set.
func (l *LocalAddrs) IsLocal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	if l == nil {
		return false
	}
	_, ok := l.set[a]
	return ok
}
