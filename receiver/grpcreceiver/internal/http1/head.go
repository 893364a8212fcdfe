// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// tchars are the bytes of a token (RFC 9110 tchar).
var tchars = func() (t [256]bool) {
	for _, b := range []byte("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t[b] = true
	}
	return t
}()

func isTchar(b byte) bool { return tchars[b] }

// methodLen is the length of the method token data begins with, followed
// by a space (0: none).
func methodLen(data []byte) int {
	for i := 0; i < len(data) && i <= maxMethodLen; i++ {
		if data[i] == ' ' {
			return i
		}
		if !isTchar(data[i]) {
			return 0
		}
	}
	return 0
}

// plausibleRequest says whether data, a call's first bytes, begins a
// request: a whole request line ("method SP request-target SP
// HTTP/1.x", the target in one of its forms).
func plausibleRequest(data []byte) bool {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return false
	}
	target, _, ok := splitRequestLine(bytes.TrimSuffix(data[:i], []byte("\r")))
	return ok && (target[0] == '/' || string(target) == "*" || bytes.Contains(target, []byte("://")) ||
		bytes.HasPrefix(data, []byte("CONNECT ")))
}

// plausibleResponse says whether data, a call's first bytes, may begin a
// response: "HTTP/1.x NNN" followed by a space or the line's end.
func plausibleResponse(data []byte) bool {
	_, ok := parseStatusLine(data[:min(len(data), 13)], true)
	return ok
}

// splitRequestLine splits "method SP target SP HTTP/1.x".
func splitRequestLine(line []byte) (target []byte, version string, ok bool) {
	m := methodLen(line)
	if m == 0 {
		return nil, "", false
	}
	j := bytes.LastIndexByte(line, ' ')
	if j <= m+1 {
		return nil, "", false
	}
	target = line[m+1 : j]
	for _, b := range target {
		if b <= ' ' || b > '~' {
			return nil, "", false
		}
	}
	switch string(line[j+1:]) {
	case "HTTP/1.1":
		version = "1.1"
	case "HTTP/1.0":
		version = "1.0"
	default:
		return nil, "", false
	}
	return target, version, true
}

// parseStatusLine parses "HTTP/1.x NNN[ reason]"; prefix: line may be cut
// after the status code.
func parseStatusLine(line []byte, prefix bool) (int, bool) {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' {
		return 0, false
	}
	code := 0
	for _, b := range line[9:12] {
		if b < '0' || b > '9' {
			return 0, false
		}
		code = code*10 + int(b-'0')
	}
	if len(line) > 12 && line[12] != ' ' && !(prefix && line[12] == '\r') {
		return 0, false
	}
	return code, code >= 100
}

// requestLine parses a request's start line into d.pend.
func (t *Tracker) requestLine(c *conn, d *direction, line []byte) {
	target, version, ok := splitRequestLine(line)
	if !ok {
		t.lose(c, d, LostBadStart)
		return
	}
	e := d.pend
	call := &e.call
	method := line[:methodLen(line)]
	call.Method, call.Version = string(method), version
	e.head = string(method) == "HEAD"
	e.connect = string(method) == "CONNECT"
	switch {
	case target[0] == '/' || (len(target) == 1 && target[0] == '*'):
		call.Path = t.bounded(target)
	case e.connect:
		call.Path = t.bounded(target)
		call.Authority = call.Path
	default: // absolute-form: scheme "://" authority [path]
		i := bytes.Index(target, []byte("://"))
		if i <= 0 {
			t.lose(c, d, LostBadStart)
			return
		}
		rest := target[i+3:]
		j := bytes.IndexAny(rest, "/?")
		if j < 0 {
			j = len(rest)
		}
		call.Authority = t.bounded(rest[:j])
		call.Path = "/"
		if j < len(rest) && rest[j] == '/' {
			call.Path = t.bounded(rest[j:])
		} else if j < len(rest) {
			call.Path = t.bounded(append([]byte("/"), rest[j:]...))
		}
	}
}

// statusLine parses a response's start line.
func (t *Tracker) statusLine(c *conn, d *direction, line []byte) {
	code, ok := parseStatusLine(line, false)
	if !ok {
		t.lose(c, d, LostBadStart)
		return
	}
	d.h.status = code
}

// bounded copies b, cut to MaxFieldBytes (counted).
func (t *Tracker) bounded(b []byte) string {
	if len(b) > t.cfg.MaxFieldBytes {
		t.stats.FieldsCut++
		b = b[:t.cfg.MaxFieldBytes]
	}
	return string(b)
}

// field handles a header field line of d's head.
func (t *Tracker) field(c *conn, d *direction, line []byte) {
	if line[0] == ' ' || line[0] == '\t' { // obs-fold: a continuation, ignored
		t.stats.FoldedLines++
		return
	}
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		t.lose(c, d, LostBadField)
		return
	}
	for _, b := range line[:i] {
		if !isTchar(b) {
			t.lose(c, d, LostBadField)
			return
		}
	}
	name, value := line[:i], bytes.Trim(line[i+1:], " \t")
	h := &d.h
	switch {
	case bytes.EqualFold(name, []byte("content-length")):
		n, ok := parseContentLength(value)
		if !ok || (h.contentLength >= 0 && h.contentLength != n) {
			h.clConflict = true
		}
		h.contentLength = n
	case bytes.EqualFold(name, []byte("transfer-encoding")):
		last := value
		if j := bytes.LastIndexByte(value, ','); j >= 0 {
			last = bytes.Trim(value[j+1:], " \t")
		}
		h.te, h.chunked = true, bytes.EqualFold(last, []byte("chunked"))
	case d.pend == nil:
	case bytes.EqualFold(name, []byte("host")):
		if d.pend.call.Authority == "" {
			d.pend.call.Authority = t.bounded(value)
		}
	case bytes.EqualFold(name, []byte("user-agent")):
		d.pend.call.UserAgent = t.bounded(value)
	case bytes.EqualFold(name, []byte("content-type")):
		d.pend.call.ContentType = t.bounded(value)
	case bytes.EqualFold(name, []byte("traceparent")):
		d.pend.call.TraceParent = h2.ParseTraceParent(string(value))
	}
}

// parseContentLength parses a Content-Length value: a number (at most
// 18 digits), or a list of equal ones (RFC 9110 8.6: "42, 42"), each
// between optional whitespace. One pass, no allocation: a line of commas
// or of "1," costs what any line of its length costs.
func parseContentLength(b []byte) (int64, bool) {
	n, cur := int64(-1), int64(0)
	digits, ws := 0, false // of the current item: its digits, whitespace after them
	for i := 0; i <= len(b); i++ {
		c := byte(',')
		if i < len(b) {
			c = b[i]
		}
		switch {
		case c >= '0' && c <= '9' && !ws:
			if digits++; digits > 18 {
				return 0, false
			}
			cur = cur*10 + int64(c-'0')
		case c == ' ' || c == '\t':
			ws = digits > 0
		case c == ',':
			if digits == 0 || (n >= 0 && n != cur) {
				return 0, false
			}
			n, cur, digits, ws = cur, 0, 0, false
		default:
			return 0, false
		}
	}
	return n, true
}

// parseChunkSize parses a chunk-size line: hex digits (at most 15), then
// optional whitespace and extensions.
func parseChunkSize(line []byte) (uint64, bool) {
	var n uint64
	i := 0
	for ; i < len(line); i++ {
		b := line[i]
		var v byte
		switch {
		case b >= '0' && b <= '9':
			v = b - '0'
		case b >= 'a' && b <= 'f':
			v = b - 'a' + 10
		case b >= 'A' && b <= 'F':
			v = b - 'A' + 10
		default:
			goto rest
		}
		if i >= 15 {
			return 0, false
		}
		n = n<<4 | uint64(v)
	}
rest:
	if i == 0 {
		return 0, false
	}
	if r := bytes.TrimLeft(line[i:], " \t"); len(r) > 0 && r[0] != ';' {
		return 0, false
	}
	return n, true
}

// headDone handles the end of d's head.
func (t *Tracker) headDone(c *conn, d *direction, ch *h2.Chunk) {
	h := &d.h
	if h.clConflict && !h.te {
		t.lose(c, d, LostBadFraming)
		return
	}
	if d.isReq {
		t.requestDone(c, d, ch)
	} else {
		t.responseDone(c, d, ch)
	}
}

// requestDone queues the request whose head d completed and starts its
// body.
func (t *Tracker) requestDone(c *conn, d *direction, ch *h2.Chunk) {
	h, e := &d.h, d.pend
	if h.te && !h.chunked { // a request's length cannot be known (RFC 9112 6.3)
		t.lose(c, d, LostBadFraming)
		return
	}
	d.pend = nil
	t.stats.RequestHeads++
	t.promote(c)
	call := &e.call
	*call = h2.Call{
		Conn: c.id, Role: c.role, Local: c.local, Remote: c.remote, NetNS: c.netns, ISN: c.isn, TLS: c.tls,
		Proc: h.proc, StreamID: uint32(h.off), StartNs: h.startNs, ReqSeq: h.seq, ReqSeqKnown: h.seqKnown,
		Protocol: h2.ProtoHTTP1, GRPCStatus: -1, ReqHeaderBytes: uint32(d.headBytes),
		Method: call.Method, Path: call.Path, Authority: call.Authority, UserAgent: call.UserAgent,
		ContentType: call.ContentType, Version: call.Version, TraceParent: call.TraceParent,
	}
	if d == &c.dirs[h2.Ingress] {
		call.Side = h2.SideServer
	}
	if call.Proc == (h2.Proc{}) {
		call.Proc = c.openProc
	}
	if len(c.queue) >= t.cfg.MaxPipelined {
		t.stats.RequestsOverLimit++
		c.queue[len(c.queue)-1].skipAfter++
		e = nil
	} else {
		e.mem, e.reqLost = exchMem+strMem(call), c.reqLost
		c.queue = append(c.queue, e)
		t.charge(c, e.mem)
	}
	d.msg = e
	switch {
	case h.chunked:
		d.st = psChunkSize
	case h.contentLength > 0:
		d.st, d.remaining = psBody, uint64(h.contentLength)
		t.addData(d, d.remaining)
	default:
		t.bodyDone(c, d, ch.TimeNs)
	}
}

// responseDone pairs the response whose head d completed and starts its
// body: interim responses (1xx but 101) are passed over; 101 and a 2xx to
// CONNECT end the connection's HTTP parsing.
func (t *Tracker) responseDone(c *conn, d *direction, ch *h2.Chunk) {
	h := d.h
	t.stats.ResponseHeads++
	if d.msg == nil && !d.skipping {
		t.pair(c, d)
	}
	e := d.msg
	var call *h2.Call
	if e != nil {
		call = &e.call
		call.RespHeaderBytes += uint32(d.headBytes)
		if !call.RespSeqKnown && h.seqKnown {
			call.RespSeq, call.RespSeqKnown = h.seq, true
		}
	}
	tunnel := h.status == 101 || (e != nil && e.connect && h.status/100 == 2)
	if h.status/100 == 1 && !tunnel {
		t.stats.InterimResponses++
		d.startAt(d.pos)
		return
	}
	if call != nil {
		call.HTTPStatus = h.status
		call.Flags |= h2.FlagResponseHeaders
	}
	switch {
	case tunnel:
		t.stats.ConnsTunnelled++
		c.tunnel = true
		if e != nil {
			d.msg = nil
			t.finish(c, ch.TimeNs, 0)
		}
		for i := range c.dirs {
			c.dirs[i].line, c.dirs[i].pend = nil, nil
		}
	case (e != nil && e.head) || h.status == 204 || h.status == 304:
		t.bodyDone(c, d, ch.TimeNs)
	case h.chunked:
		d.st = psChunkSize
	case h.te:
		t.closeDelimited(d)
	case h.contentLength > 0:
		d.st, d.remaining = psBody, uint64(h.contentLength)
		t.addData(d, d.remaining)
	case h.contentLength == 0:
		t.bodyDone(c, d, ch.TimeNs)
	default:
		t.closeDelimited(d)
	}
}

// pair finds the request that the response whose head d completed
// answers (d.msg): the oldest queued, unless responses are to be skipped
// first (requests not tracked) or its first byte was captured after the
// response's (then the response is skipped: d.skipping).
func (t *Tracker) pair(c *conn, d *direction) {
	switch {
	case c.respSkip > 0:
		c.respSkip--
	case len(c.queue) > 0 && c.queue[0].call.StartNs <= d.h.startNs:
		d.msg = c.queue[0]
		return
	}
	d.skipping = true
	t.stats.ResponsesUnmatched++
}

// closeDelimited makes d's response body end with the connection.
func (t *Tracker) closeDelimited(d *direction) {
	d.st = psClose
	if d.msg != nil {
		d.msg.closeDelimited = true
	}
}
