// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// exchanges runs a connection of role through steps: each a call of one
// direction ("c" the client's bytes, "s" the server's), seen from the
// given end, then closes it.
type step struct {
	client bool
	b      []byte
}

func cl(b string) step { return step{true, []byte(b)} }
func sv(b string) step { return step{false, []byte(b)} }

func run(t *testing.T, role h2.Role, steps ...step) ([]h2.Call, Stats) {
	t.Helper()
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, role)
	for _, s := range steps {
		d := h2.Egress
		if s.client == (role == h2.RoleServer) {
			d = h2.Ingress
		}
		cp.call(d, s.b)
	}
	cp.close()
	if tr.MemoryUsed() != 0 {
		t.Fatalf("%d bytes accounted after close", tr.MemoryUsed())
	}
	return rec.calls, tr.Stats()
}

func wantCalls(t *testing.T, calls []h2.Call, n int) {
	t.Helper()
	if len(calls) != n {
		t.Fatalf("%d calls, want %d: %+v", len(calls), n, calls)
	}
}

func TestPipelined(t *testing.T) {
	reqs := "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
		"HEAD /3 HTTP/1.1\r\nHost: h\r\n\r\n" +
		"GET /4 HTTP/1.1\r\nHost: h\r\nUser-Agent: curl/8\r\n\r\n"
	resps := "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc" +
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + // HEAD: no body
		"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"
	for _, role := range []h2.Role{h2.RoleClient, h2.RoleServer} {
		calls, st := run(t, role, cl(reqs), sv(resps))
		wantCalls(t, calls, 4)
		for i, w := range []struct {
			m, p   string
			status int
			req    uint64
			resp   uint64
		}{{"GET", "/1", 200, 0, 3}, {"POST", "/2", 201, 5, 2}, {"HEAD", "/3", 200, 0, 0}, {"GET", "/4", 503, 0, 0}} {
			c := calls[i]
			checkCall(t, c, w.m, w.p, "h", w.status)
			if c.ReqDataBytes != w.req || c.RespDataBytes != w.resp || c.Has(h2.FlagConnClosed) || c.Has(h2.FlagGap) {
				t.Fatalf("call %d: %+v", i, c)
			}
			if (c.Side == h2.SideServer) != (role == h2.RoleServer) {
				t.Fatalf("call %d side %d for role %d", i, c.Side, role)
			}
		}
		if calls[1].StreamID != uint32(strings.Index(reqs, "POST")) || calls[1].RespSeq-calls[0].RespSeq != uint32(strings.Index(resps, "HTTP/1.1 201")) {
			t.Fatalf("ids: %d, resp seqs %d %d", calls[1].StreamID, calls[0].RespSeq, calls[1].RespSeq)
		}
		if calls[3].UserAgent != "curl/8" || st.RequestHeads != 4 || st.SyncLostTotal() != 0 {
			t.Fatalf("%+v; %+v", calls[3], st)
		}
	}
}

func TestNoBodyStatuses(t *testing.T) {
	calls, st := run(t, h2.RoleServer,
		cl("GET /a HTTP/1.1\r\nHost: h\r\n\r\n"), sv("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"),
		cl("GET /b HTTP/1.1\r\nHost: h\r\nIf-None-Match: x\r\n\r\n"), sv("HTTP/1.1 304 Not Modified\r\nContent-Length: 500\r\nETag: x\r\n\r\n"),
		cl("GET /c HTTP/1.1\r\nHost: h\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	wantCalls(t, calls, 3)
	checkCall(t, calls[0], "GET", "/a", "h", 204)
	checkCall(t, calls[1], "GET", "/b", "h", 304)
	checkCall(t, calls[2], "GET", "/c", "h", 200)
	if st.SyncLostTotal() != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestContinue(t *testing.T) {
	body := strings.Repeat("u", 40<<10)
	calls, st := run(t, h2.RoleClient,
		cl("PUT /up HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 40960\r\n\r\n"),
		sv("HTTP/1.1 100 Continue\r\n\r\n"),
		cl(body),
		sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, calls, 1)
	checkCall(t, calls[0], "PUT", "/up", "h", 200)
	if calls[0].ReqDataBytes != 40<<10 || st.InterimResponses != 1 || !calls[0].Has(h2.FlagRequestEnded) ||
		calls[0].RespHeaderBytes != uint32(len("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")) {
		t.Fatalf("%+v; %+v", calls[0], st)
	}
}

func TestTunnels(t *testing.T) {
	junk := strings.Repeat("\x16\x03\x01junk", 300)
	for _, tc := range []struct {
		name, req, resp, method, path, host string
		status                              int
	}{
		{"upgrade", "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
			"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", "GET", "/ws", "h", 101},
		{"connect", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
			"HTTP/1.1 200 Connection established\r\n\r\n", "CONNECT", "example.com:443", "example.com:443", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, st := run(t, h2.RoleClient, cl(tc.req), sv(tc.resp), cl(junk), sv(junk), cl("GET / HTTP/1.1\r\n\r\n"))
			wantCalls(t, calls, 1)
			checkCall(t, calls[0], tc.method, tc.path, tc.host, tc.status)
			if st.ConnsTunnelled != 1 || st.BytesTunnelled != uint64(2*(otherCap+tailCap)+18) || st.RequestHeads != 1 || calls[0].Has(h2.FlagConnClosed) {
				t.Fatalf("%+v; %+v", calls[0], st)
			}
		})
	}
	// a CONNECT refused: the connection stays HTTP
	calls, _ := run(t, h2.RoleClient, cl("CONNECT x:1 HTTP/1.1\r\n\r\n"), sv("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"),
		cl("GET /n HTTP/1.1\r\nHost: x\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, calls, 2)
	checkCall(t, calls[1], "GET", "/n", "x", 200)
}

func TestCloseDelimited(t *testing.T) {
	body := strings.Repeat("z", 30<<10)
	calls, st := run(t, h2.RoleServer,
		cl("GET /old HTTP/1.0\r\nUser-Agent: w\r\n\r\n"),
		sv("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"), sv(body), sv(body))
	wantCalls(t, calls, 1)
	c := calls[0]
	checkCall(t, c, "GET", "/old", "", 200)
	if c.Version != "1.0" || c.RespDataBytes != uint64(2*len(body)) || c.Has(h2.FlagConnClosed) || c.EndNs != c.StartNs+3000 || st.CallsConnClosed != 0 {
		t.Fatalf("%+v; %+v", c, st)
	}
}

func TestTargets(t *testing.T) {
	pad := strings.Repeat("p", 1500)
	calls, _ := run(t, h2.RoleClient,
		cl("GET http://target.example:81/p/q?r=1 HTTP/1.1\r\nHost: other\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		cl("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		cl("GET http://bare.example HTTP/1.1\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		cl("GET / HTTP/1.1\r\nX-Pad: "+pad+"\r\nX-Pad2: "+pad+"\r\nHost: far.example\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		cl("GET /"+strings.Repeat("l", 3000)+" HTTP/1.1\r\nHost: h\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, calls, 5)
	checkCall(t, calls[0], "GET", "/p/q?r=1", "target.example:81", 200)
	checkCall(t, calls[1], "OPTIONS", "*", "h", 200)
	checkCall(t, calls[2], "GET", "/", "bare.example", 200)
	checkCall(t, calls[3], "GET", "/", "far.example", 200)
	if len(calls[4].Path) != DefaultMaxFieldBytes {
		t.Fatalf("a path of %d bytes kept", len(calls[4].Path))
	}
}

func TestNeverAnswered(t *testing.T) {
	calls, st := run(t, h2.RoleServer,
		cl("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"),
		sv("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
	wantCalls(t, calls, 2)
	for i, c := range calls {
		if !c.Has(h2.FlagConnClosed) || c.Has(h2.FlagGap) {
			t.Fatalf("call %d: %+v", i, c)
		}
	}
	// the first had its response's head: its status is known, its end not
	if calls[0].HTTPStatus != 200 || calls[1].HTTPStatus != 0 || st.CallsConnClosed != 2 {
		t.Fatalf("%+v; %+v", calls, st)
	}
}

func TestSlowloris(t *testing.T) {
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, h2.RoleServer)
	req := "GET /slow HTTP/1.1\r\nHost: h\r\nUser-Agent: " + strings.Repeat("s", 500) + "\r\n\r\n"
	cp.calls(h2.Ingress, []byte(req), 1)
	cp.call(h2.Egress, []byte("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, rec.calls, 1)
	checkCall(t, rec.calls[0], "GET", "/slow", "h", 408)
	if st := tr.Stats(); st.BytesParsed != uint64(len(req)+len("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")) {
		t.Fatalf("%+v", st)
	}
}

func TestChunkedHoles(t *testing.T) {
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, h2.RoleServer)
	// one call: many chunks, their size lines in the hole; the call's tail
	// ends the body
	cp.call(h2.Ingress, []byte("GET /big HTTP/1.1\r\nHost: h\r\n\r\n"))
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, c := range chunkedCalls(200<<10, 4000) {
		b.Write(c)
	}
	cp.call(h2.Egress, b.Bytes())
	// each chunk a call: every size line seen
	cp.call(h2.Ingress, []byte("GET /many HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.call(h2.Egress, []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
	for _, c := range chunkedCalls(100<<10, 3000) {
		cp.call(h2.Egress, c)
	}
	// calls of 64 KiB: size lines in holes, the end in the last call's tail
	cp.call(h2.Ingress, []byte("GET /seek HTTP/1.1\r\nHost: h\r\n\r\n"))
	b.Reset()
	b.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, c := range chunkedCalls(300<<10, 4000) {
		b.Write(c)
	}
	cp.calls(h2.Egress, b.Bytes(), 64<<10)
	// the same, the last call lost: the end is not found, the sync is lost
	cp.call(h2.Ingress, []byte("GET /lost HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.calls(h2.Egress, b.Bytes()[:256<<10], 64<<10)
	cp.off[h2.Egress] += uint64(b.Len() - 256<<10)
	// found again at the next response
	cp.call(h2.Ingress, []byte("GET /after HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.call(h2.Egress, []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, rec.calls, 5)
	st := tr.Stats()
	for i, p := range []string{"/big", "/many", "/seek", "/lost", "/after"} {
		checkCall(t, rec.calls[i], "GET", p, "h", 200)
		if rec.calls[i].Has(h2.FlagGap) != (p == "/lost") {
			t.Fatalf("call %d: %+v", i, rec.calls[i])
		}
	}
	if rec.calls[1].RespDataBytes != 100<<10 || st.ChunkedSeeks != 3 || st.ChunkedEndsFound != 2 || st.SyncLost[LostHole] != 1 {
		t.Fatalf("%+v; %+v", rec.calls, st)
	}
}

func TestLostCalls(t *testing.T) {
	// a response's call lost: its request is emitted with FlagGap and no
	// status; the next request's response is the next one
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, h2.RoleClient)
	cp.call(h2.Egress, []byte("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.off[h2.Ingress] += 50 // a response's call lost
	cp.call(h2.Egress, []byte("GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.call(h2.Ingress, []byte("HTTP/1.1 202 OK\r\nContent-Length: 0\r\n\r\n"))
	cp.call(h2.Egress, []byte("GET /3 HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.call(h2.Ingress, []byte("HTTP/1.1 203 OK\r\nContent-Length: 0\r\n\r\n"))
	// a request's call lost: its response is not paired with the next
	cp.off[h2.Egress] += 40
	cp.call(h2.Ingress, []byte("HTTP/1.1 204 OK\r\n\r\n"))
	cp.call(h2.Egress, []byte("GET /5 HTTP/1.1\r\nHost: h\r\n\r\n"))
	cp.call(h2.Ingress, []byte("HTTP/1.1 205 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, rec.calls, 4)
	for i, w := range []struct {
		p      string
		status int
		gap    bool
	}{{"/1", 0, true}, {"/2", 202, false}, {"/3", 203, false}, {"/5", 205, false}} {
		c := rec.calls[i]
		checkCall(t, c, "GET", w.p, "h", w.status)
		if c.Has(h2.FlagGap) != w.gap {
			t.Fatalf("call %d: %+v", i, c)
		}
	}
	if st := tr.Stats(); st.ResponsesUnmatched != 1 || st.SyncLost[LostHole] != 2 || st.CallsGap != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestMidStream(t *testing.T) {
	var now uint64
	tr, rec := newTestTracker(Config{})
	// a connection predating the capture: no ConnOpen, offsets arbitrary
	cp := &capture{t: t, tr: tr, id: 9, now: &now, off: [2]uint64{77777, 1 << 40}}
	cp.call(h2.Ingress, []byte("dy of an earlier response")) // not a call's start line
	cp.call(h2.Ingress, []byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate"))
	cp.call(h2.Egress, []byte("POST /m HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"))
	cp.call(h2.Ingress, []byte("HTTP/1.1 201 OK\r\nContent-Length: 0\r\n\r\n"))
	wantCalls(t, rec.calls, 1)
	checkCall(t, rec.calls[0], "POST", "/m", "h", 201)
	st := tr.Stats()
	if rec.calls[0].Side != h2.SideClient || rec.calls[0].StreamID != uint32(77777) || st.ConnsWithoutOpen != 1 || st.ResponsesUnmatched != 1 || st.ChunksUnsynced != 1 {
		t.Fatalf("%+v; %+v", rec.calls[0], st)
	}
}

// TestMalformed: what is not HTTP/1.x loses the sync (counted by reason),
// and the next call's start line finds it again.
func TestMalformed(t *testing.T) {
	ok := sv("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	bad := sv("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
	for _, tc := range []struct {
		name  string
		steps []step
		lost  LostReason
		calls int
	}{
		{"long_method", []step{cl(strings.Repeat("G", maxMethodLen+1) + " / HTTP/1.1\r\n\r\n")}, LostBadStart, 0},
		{"bad_version", []step{cl("GET / HTTP/2.0\r\n\r\n")}, LostBadStart, 0},
		{"bad_target", []step{cl("GET x HTTP/1.1\r\n\r\n")}, LostBadStart, 0},
		{"bad_status", []step{cl("GET / HTTP/1.1\r\n\r\n"), sv("HTTP/1.1 2x0 OK\r\n\r\n")}, LostBadStart, 1},
		{"space_before_colon", []step{cl("GET / HTTP/1.1\r\nHost : h\r\n\r\n")}, LostBadField, 0},
		{"content_lengths", []step{cl("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc")}, LostBadFraming, 0},
		{"request_gzip_only", []step{cl("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")}, LostBadFraming, 0},
		// a request whose head was whole stays queued (FlagGap) for its response
		{"bad_chunk_size", []step{cl("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), bad}, LostBadChunk, 1},
		{"chunk_without_crlf", []step{cl("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"), bad}, LostBadChunk, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := append(tc.steps, cl("GET /next HTTP/1.1\r\nHost: n\r\n\r\n"), ok)
			calls, st := run(t, h2.RoleServer, steps...)
			if st.SyncLost[tc.lost] != 1 || st.SyncLostTotal() != 1 || st.Resyncs != 1 {
				t.Fatalf("%+v", st)
			}
			wantCalls(t, calls, tc.calls+1)
			checkCall(t, calls[tc.calls], "GET", "/next", "n", 200)
			if tc.calls > 0 && (!calls[0].Has(h2.FlagGap) || (tc.lost == LostBadChunk) != (calls[0].HTTPStatus == 400)) {
				t.Fatalf("%+v", calls[0])
			}
		})
	}
	// obs-fold lines are continuations, passed over
	calls, st := run(t, h2.RoleServer, cl("GET /f HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n  b\r\n\r\n"), ok)
	wantCalls(t, calls, 1)
	checkCall(t, calls[0], "GET", "/f", "h", 200)
	if st.FoldedLines != 1 || st.SyncLostTotal() != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestParseContentLength(t *testing.T) {
	for in, want := range map[string]int64{
		"42": 42, " 42\t": 42, "42, 42": 42, "42 ,42 ,\t42": 42, "0": 0, "123456789012345678": 123456789012345678,
		"": -1, ",": -1, "42,": -1, ",42": -1, "42, 43": -1, "4 2": -1, "42x": -1, "-1": -1, "1234567890123456789": -1,
	} {
		n, ok := parseContentLength([]byte(in))
		if !ok {
			n = -1
		}
		if n != want {
			t.Errorf("%q: %d, want %d", in, n, want)
		}
	}
}
