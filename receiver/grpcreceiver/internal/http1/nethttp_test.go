// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// sysLog records the system calls of one end of a connection, in order:
// a write before the bytes leave (so that it precedes what answers it), a
// read once its bytes are in.
type sysLog struct {
	mu  sync.Mutex
	evs []sysCall
}

type sysCall struct {
	dir h2.Dir
	b   []byte
}

func (l *sysLog) add(d h2.Dir, b []byte) {
	l.mu.Lock()
	l.evs = append(l.evs, sysCall{d, append([]byte(nil), b...)})
	l.mu.Unlock()
}

// recConn is a net.Conn whose calls are logged.
type recConn struct {
	net.Conn
	log *sysLog
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.log.add(h2.Ingress, p[:n])
	}
	return n, err
}

func (c *recConn) Write(p []byte) (int, error) {
	c.log.add(h2.Egress, p)
	return c.Conn.Write(p)
}

// recListener logs the calls of the connections it accepts.
type recListener struct {
	net.Listener
	mu   sync.Mutex
	logs []*sysLog
}

func (l *recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lg := &sysLog{}
	l.mu.Lock()
	l.logs = append(l.logs, lg)
	l.mu.Unlock()
	return &recConn{c, lg}, nil
}

// replay feeds an end's calls to a tracker through the capture's
// imitation and returns the calls.
func replay(t *testing.T, evs []sysCall, role h2.Role, seq [2]uint32) ([]h2.Call, Stats) {
	t.Helper()
	var now uint64
	tr, rec := newTestTracker(Config{})
	cp := newCapture(t, tr, 1, &now, role)
	cp.seq = seq
	for _, e := range evs {
		cp.call(e.dir, e.b)
	}
	cp.close()
	return rec.calls, tr.Stats()
}

// TestNetHTTP runs Go's net/http client and server on one keep-alive
// connection, logs each end's reads and writes, and replays them: both
// ends give the same calls, joined by their ids.
func TestNetHTTP(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/chunked":
			for i := 0; i < len(big); i += 8 << 10 {
				_, _ = io.WriteString(w, big[i:i+8<<10])
				w.(http.Flusher).Flush()
			}
		case "/big":
			w.Header().Set("Content-Length", "131072")
			_, _ = io.WriteString(w, big)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/cached":
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "hello "+r.Method)
		}
	}))
	ln := &recListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	clientLog := &sysLog{}
	tp := &http.Transport{
		MaxConnsPerHost:       1,
		ExpectContinueTimeout: 5 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &recConn{c, clientLog}, nil
		},
	}
	client := &http.Client{Transport: tp}
	type want struct {
		method, path string
		status       int
		reqBody      int
		respBody     int
	}
	var wants []want
	do := func(method, path string, body string, hdr ...string) {
		t.Helper()
		var rb io.Reader
		if body != "" {
			rb = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rb)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "nethttp-test")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		n := len(b)
		if method == http.MethodHead {
			n = 0
		}
		wants = append(wants, want{method, path, resp.StatusCode, len(body), n})
	}
	do("GET", "/small?q=1", "")
	do("GET", "/chunked", "")
	do("GET", "/big", "")
	do("POST", "/upload", big)
	do("PUT", "/continue", big, "Expect", "100-continue")
	do("HEAD", "/big", "")
	do("GET", "/empty", "")
	do("GET", "/cached", "")
	do("DELETE", "/last", "")
	tp.CloseIdleConnections()
	srv.Close()
	if len(ln.logs) != 1 {
		t.Fatalf("%d connections", len(ln.logs))
	}
	cliCalls, cst := replay(t, clientLog.evs, h2.RoleClient, [2]uint32{100, 900})
	srvCalls, sst := replay(t, ln.logs[0].evs, h2.RoleServer, [2]uint32{900, 100})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, calls := range [][]h2.Call{cliCalls, srvCalls} {
		if len(calls) != len(wants) {
			t.Fatalf("%d calls, want %d: %+v\nclient %+v\nserver %+v", len(calls), len(wants), calls, cst, sst)
		}
		for i, w := range wants {
			c := calls[i]
			path, _, _ := strings.Cut(w.path, "?")
			if !strings.HasPrefix(c.Path, path) {
				t.Fatalf("call %d: path %q, want %q", i, c.Path, w.path)
			}
			checkCall(t, c, w.method, c.Path, host, w.status)
			// a chunked body whose size lines fell in holes: those seen
			chunkedSeek := w.path == "/chunked" && c.RespDataBytes > 0 && c.RespDataBytes < uint64(w.respBody)
			if c.ReqDataBytes != uint64(w.reqBody) || (c.RespDataBytes != uint64(w.respBody) && !chunkedSeek) || c.UserAgent != "nethttp-test" ||
				c.Has(h2.FlagGap) || c.Has(h2.FlagConnClosed) || c.EndNs <= c.StartNs {
				t.Fatalf("call %d: %+v, want %+v", i, c, w)
			}
		}
	}
	for i := range wants {
		c, s := cliCalls[i], srvCalls[i]
		if c.Side != h2.SideClient || s.Side != h2.SideServer || c.StreamID != s.StreamID || c.ReqSeq != s.ReqSeq || c.RespSeq != s.RespSeq {
			t.Fatalf("call %d: client %+v, server %+v", i, c, s)
		}
	}
	for _, st := range []Stats{cst, sst} {
		if st.SyncLostTotal() != 0 || st.ResponsesUnmatched != 0 || st.CallsEmitted != uint64(len(wants)) {
			t.Fatalf("%+v", st)
		}
	}
	if !bytes.Contains(ln.logs[0].evs[0].b, []byte("GET /small?q=1 HTTP/1.1")) {
		t.Fatalf("first server call %q", ln.logs[0].evs[0].b)
	}
}
