// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// reqBytes is a request as Go's net/http writes it.
func reqBytes(t testing.TB, method, url string, body []byte, hdr ...string) []byte {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// respSpec describes a response written by net/http's Response.Write.
type respSpec struct {
	status  int
	body    []byte
	chunked bool // Transfer-Encoding: chunked (else Content-Length)
	method  string
	hdr     []string
}

func respBytes(t testing.TB, s respSpec) []byte {
	t.Helper()
	method := s.method
	if method == "" {
		method = http.MethodGet
	}
	r := &http.Response{
		StatusCode: s.status, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Request: &http.Request{Method: method}, ContentLength: int64(len(s.body)),
	}
	for i := 0; i+1 < len(s.hdr); i += 2 {
		r.Header.Set(s.hdr[i], s.hdr[i+1])
	}
	if s.body != nil {
		r.Body = io.NopCloser(bytes.NewReader(s.body))
	}
	if s.chunked {
		r.ContentLength, r.TransferEncoding = -1, []string{"chunked"}
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// chunkedBody is a chunked body of n bytes in chunks of size k, as
// written one chunk a call (each call: size line, data, CRLF).
func chunkedCalls(n, k int) [][]byte {
	var out [][]byte
	for n > 0 {
		m := min(n, k)
		out = append(out, []byte(strconv.FormatInt(int64(m), 16)+"\r\n"+strings.Repeat("x", m)+"\r\n"))
		n -= m
	}
	return append(out, []byte("0\r\n\r\n"))
}

func newTestTracker(cfg Config) (*Tracker, *recorder) {
	r := &recorder{}
	return NewTracker(cfg, r.emit, nil), r
}

// checkCall compares the fields of a call that a test sets.
func checkCall(t *testing.T, c h2.Call, method, path, host string, status int) {
	t.Helper()
	if c.Method != method || c.Path != path || c.Authority != host || c.HTTPStatus != status || c.Protocol != h2.ProtoHTTP1 {
		t.Fatalf("call %s %s host %q status %d (proto %d), want %s %s %q %d; %+v", c.Method, c.Path, c.Authority, c.HTTPStatus, c.Protocol, method, path, host, status, c)
	}
}

func TestKeepAlive(t *testing.T) {
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, h2.RoleClient)
	big := bytes.Repeat([]byte("b"), 100<<10)
	cp.call(h2.Egress, reqBytes(t, "GET", "http://svc.local:8080/a?x=1", nil, "User-Agent", "ua/1", "Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
	cp.calls(h2.Ingress, respBytes(t, respSpec{status: 200, body: big}), 8<<10)
	post := bytes.Repeat([]byte("p"), 50<<10)
	cp.calls(h2.Egress, reqBytes(t, "POST", "http://svc.local:8080/upload", post, "Content-Type", "application/json"), 4<<10)
	resp := respBytes(t, respSpec{status: 201, chunked: true, body: bytes.Repeat([]byte("c"), 3000)})
	cp.call(h2.Ingress, resp)
	cp.call(h2.Egress, reqBytes(t, "DELETE", "http://svc.local:8080/x/y", nil))
	cp.call(h2.Ingress, respBytes(t, respSpec{status: 404, body: []byte("nope")}))
	if len(rec.calls) != 3 {
		t.Fatalf("%d calls: %+v; stats %+v", len(rec.calls), rec.calls, tr.Stats())
	}
	c := rec.calls[0]
	checkCall(t, c, "GET", "/a?x=1", "svc.local:8080", 200)
	if c.UserAgent != "ua/1" || c.Version != "1.1" || !c.TraceParent.Valid || c.RespDataBytes != uint64(len(big)) ||
		c.Side != h2.SideClient || c.StreamID != 0 || !c.ReqSeqKnown || c.ReqSeq != 1000 || c.RespSeq != 5000 || !c.RespSeqKnown ||
		!c.Has(h2.FlagRequestEnded|h2.FlagResponseHeaders) || c.Has(h2.FlagGap) {
		t.Fatalf("first call %+v", c)
	}
	if c.EndNs-c.StartNs != uint64(13*1000) { // the request's call, then 13 calls of the response
		t.Fatalf("first call from %d to %d", c.StartNs, c.EndNs)
	}
	c = rec.calls[1]
	checkCall(t, c, "POST", "/upload", "svc.local:8080", 201)
	if c.ReqDataBytes != uint64(len(post)) || c.RespDataBytes != 3000 || c.ContentType != "application/json" {
		t.Fatalf("second call %+v", c)
	}
	checkCall(t, rec.calls[2], "DELETE", "/x/y", "svc.local:8080", 404)
	if st := tr.Stats(); st.SyncLostTotal() != 0 || st.CallsEmitted != 3 || st.ResponsesUnmatched != 0 {
		t.Fatalf("stats %+v", st)
	}
	cp.close()
	if tr.MemoryUsed() != 0 || len(rec.calls) != 3 {
		t.Fatalf("after close: %d bytes, %d calls", tr.MemoryUsed(), len(rec.calls))
	}
}
