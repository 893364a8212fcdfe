// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// TestReceiverHTTP1 runs the receiver with its default config (HTTP/1.x on,
// the kernel's shares on) on each hook against Go's net/http: keep-alive
// GETs, POSTs with bodies larger than a call's head copy, chunked
// responses, HEAD, a 404, a slow handler and three requests pipelined in
// one write. Each request must be one CLIENT and one SERVER span with its
// method, path, status and user agent, the server span the client span's
// child, the slow one lasting its handler's sleep.
func TestReceiverHTTP1(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range []string{HookSocket, HookSyscalls, HookRawSyscalls} {
		t.Run(hook, func(t *testing.T) { testReceiverHTTP1(t, hook) })
	}
}

func testReceiverHTTP1(t *testing.T, hook string) {
	sink, stop := startReceiver(t, func(c *Config) { c.Hook = hook })
	defer stop()

	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/stream":
			for range 4 {
				_, _ = w.Write(big[:20<<10])
				w.(http.Flusher).Flush()
			}
		case r.URL.Path == "/slow":
			time.Sleep(150 * time.Millisecond)
		case strings.HasPrefix(r.URL.Path, "/missing"):
			http.NotFound(w, r)
		default:
			_, _ = fmt.Fprintf(w, "hello %s", r.URL.Path)
		}
	}))
	defer srv.Close()
	port := int64(port(t, srv.Listener.Addr().String()))

	type key struct {
		method, path string
		status       int
	}
	want := map[key]int{}
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	do := func(method, path string, body []byte, status int) time.Duration {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("User-Agent", "seq-test/1.0")
		start := time.Now()
		resp, err := cl.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		require.Equal(t, status, resp.StatusCode, "%s %s", method, path)
		want[key{method, path, status}]++
		return took
	}
	const gets = 300
	for i := range gets {
		do("GET", fmt.Sprintf("/items/%d", i%50), nil, 200)
	}
	for range 20 {
		do("POST", "/upload", big, 200)
	}
	for range 10 {
		do("GET", "/stream", nil, 200)
	}
	do("HEAD", "/items/1", nil, 200)
	do("GET", "/missing", nil, 404)
	slow := do("GET", "/slow", nil, 200)
	cl.CloseIdleConnections()

	// Three requests in one write; the server answers them in order.
	pc, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	var pipe strings.Builder
	for i := range 3 {
		fmt.Fprintf(&pipe, "GET /pipelined/%d HTTP/1.1\r\nHost: %s\r\nUser-Agent: seq-test/1.0\r\n\r\n", i, srv.Listener.Addr())
		want[key{"GET", fmt.Sprintf("/pipelined/%d", i), 200}]++
	}
	_, err = pc.Write([]byte(pipe.String()))
	require.NoError(t, err)
	br := bufio.NewReader(pc)
	for range 3 {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	require.NoError(t, pc.Close())

	n := 0
	for _, c := range want {
		n += c
	}
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*n }, 30*time.Second, 50*time.Millisecond,
		"spans seen: %d of %d", len(spansOf(sink, port)), 2*n)

	got := map[ptrace.SpanKind]map[key]int{ptrace.SpanKindClient: {}, ptrace.SpanKindServer: {}}
	byTrace := map[[16]byte][]ptrace.Span{}
	for _, s := range spansOf(sink, port) {
		a := s.Attributes().AsRaw()
		status, _ := a["http.response.status_code"].(int64)
		path, _ := a["url.path"].(string)
		got[s.Kind()][key{attr(s, "http.request.method"), path, int(status)}]++
		assert.Equal(t, attr(s, "http.request.method"), s.Name())
		assert.Equal(t, "1.1", a["network.protocol.version"])
		assert.Equal(t, "seq-test/1.0", a["user_agent.original"])
		byTrace[s.TraceID()] = append(byTrace[s.TraceID()], s)
		if path == "/slow" {
			d := s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime())
			assert.GreaterOrEqual(t, d, 150*time.Millisecond, "the slow request's %s span", s.Kind())
			assert.LessOrEqual(t, d, slow, "the slow request's %s span", s.Kind())
		}
	}
	assert.Equal(t, want, got[ptrace.SpanKindClient], "client spans by method, path and status")
	assert.Equal(t, want, got[ptrace.SpanKindServer], "server spans by method, path and status")
	// Both ends of a request share its trace; the server's span is the client's child.
	assert.Len(t, byTrace, n)
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

// The tests' clients and servers run in the test binary, which the
// receiver would skip as its own process (capture.Options.SkipPID) but for
// this; TestReceiverSkipsItself turns it back off.
func init() { captureSelf = true }

// TestReceiverSkipsItself: as the collector runs it, the receiver skips
// its own process's calls (its exports never become spans it exports
// again), and still sees another process's on the same server: curl's
// request to a server in this process is a CLIENT span (curl's) and no
// SERVER span (this process's), counted in self_calls.
func TestReceiverSkipsItself(t *testing.T) {
	testutil.RequireRoot(t)
	captureSelf = false
	defer func() { captureSelf = true }()
	sink, stop := startReceiver(t, nil)
	defer stop()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hi")) }))
	defer srv.Close()
	port := int64(port(t, srv.Listener.Addr().String()))
	for range 5 {
		resp, err := http.Get(srv.URL + "/self")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", srv.URL+"/curl").CombinedOutput()
	require.NoError(t, err, "curl: %s", out)
	require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 1 }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // what else would come
	spans := spansOf(sink, port)
	require.Len(t, spans, 1, "curl's CLIENT span only")
	assert.Equal(t, ptrace.SpanKindClient, spans[0].Kind())
	assert.Equal(t, "/curl", attr(spans[0], "url.path"))
}

// TestReceiverHTTP1Userinfo: a client that writes its credentials into an
// absolute-form request-target (as for a proxy), real sockets to Go's
// net/http: both spans name the server by its host and port alone, no
// attribute carries the user or the password (server.address was
// "alice:s3cret@127.0.0.1:port", and no server.port).
func TestReceiverHTTP1Userinfo(t *testing.T) {
	testutil.RequireRoot(t)
	sink, stop := startReceiver(t, nil)
	defer stop()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hi")) }))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET http://alice:s3cret@%s/userinfo HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	byPath := func() []ptrace.Span {
		var out []ptrace.Span
		for _, td := range sink.AllTraces() {
			rs := td.ResourceSpans()
			for i := range rs.Len() {
				for j := range rs.At(i).ScopeSpans().Len() {
					ss := rs.At(i).ScopeSpans().At(j).Spans()
					for k := range ss.Len() {
						if attr(ss.At(k), "url.path") == "/userinfo" {
							out = append(out, ss.At(k))
						}
					}
				}
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(byPath()) >= 2 }, 10*time.Second, 50*time.Millisecond)
	for _, s := range byPath() {
		a := s.Attributes().AsRaw()
		assert.Equal(t, "127.0.0.1", a["server.address"], "%s span", s.Kind())
		assert.Equal(t, int64(port(t, addr)), a["server.port"], "%s span", s.Kind())
		for k, v := range a {
			assert.NotContains(t, fmt.Sprint(v), "s3cret", "%s span: %s", s.Kind(), k)
			assert.NotContains(t, fmt.Sprint(v), "alice", "%s span: %s", s.Kind(), k)
		}
	}
}
