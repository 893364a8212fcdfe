// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// TestCaptureHTTP1 runs Go's net/http server and client (keep-alive
// requests, a request body and a chunked response larger than what a call's
// head copy takes) and three requests pipelined in one write, and checks the
// contract of HTTP/1.x records (bpf/h2/h2.h): both ends opened as HTTP/1.x
// with their roles; every request and status line at the start of a copied
// call (H2_F_CALL_START); of each call its first bytes and its last; each
// direction's copied bytes ending where the connection's total ends.
func TestCaptureHTTP1(t *testing.T) {
	testutil.RequireRoot(t)
	if p, err := Preflight(HookAuto, false); err == nil && p.NoFetch {
		// A kernel without BPF atomic fetch (5.10): the h2nf programs on
		// raw_syscalls are all it takes.
		t.Run("auto_nofetch", func(t *testing.T) { testCaptureHTTP1(t, HookAuto, false, false) })
		return
	}
	for _, hook := range hooksHere(t) {
		t.Run(string(hook), func(t *testing.T) { testCaptureHTTP1(t, hook, false, false) })
	}
	// What kernels without bpf_loop (5.15, 5.16) and without BPF atomic
	// fetch (5.10) get, on this one.
	t.Run("raw_syscalls_bounded_loop", func(t *testing.T) { testCaptureHTTP1(t, HookRawSyscalls, true, false) })
	t.Run("raw_syscalls_nofetch", func(t *testing.T) { testCaptureHTTP1(t, HookRawSyscalls, false, true) })
}

func testCaptureHTTP1(t *testing.T, hook Hook, bounded, noFetch bool) {
	c, err := Open(Options{Hook: hook, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384, HTTP1: true, BoundedLoop: bounded, NoFetch: noFetch})
	require.NoError(t, err)
	defer c.Close()

	// The ring read while the traffic runs: other tests' floods on the
	// host (packages run in parallel) must not lap it.
	rec := newRecorder()
	dec := NewDecoder(rec)
	stopReading := make(chan struct{})
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for {
			drain(c, dec)
			select {
			case <-stopReading:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // 200 KiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/chunked" {
			// Flushed in pieces: chunked transfer coding.
			for i := 0; i < len(big); i += 32 << 10 {
				_, _ = w.Write(big[i:min(i+32<<10, len(big))])
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("hello " + r.URL.Path))
	}))
	defer srv.Close()
	srvPort := port(t, srv.Listener.Addr().String())

	const gets = 20
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var sent []string
	do := func(method, path string, body []byte) {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("User-Agent", "capture-test/1")
		resp, err := cl.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sent = append(sent, method+" "+path+" HTTP/1.1")
	}
	for i := range gets {
		do("GET", fmt.Sprintf("/items/%d", i), nil)
	}
	do("POST", "/upload", big[:100<<10])
	do("GET", "/chunked", nil)
	cl.CloseIdleConnections()

	// Three requests pipelined in one write, on a connection of its own.
	pc, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	var pipe strings.Builder
	for i := range 3 {
		fmt.Fprintf(&pipe, "GET /pipelined/%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
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
	pcPort := port(t, pc.LocalAddr().String())
	require.NoError(t, pc.Close())
	srv.CloseClientConnections()

	close(stopReading)
	<-reading
	var ends [2]h2.ConnOpen // the keep-alive connection's client and server sockets
	var pipeServer h2.ConnOpen
	require.Eventually(t, func() bool {
		drain(c, dec)
		for id, o := range rec.opens {
			if _, ok := rec.closes[id]; !ok {
				continue
			}
			switch {
			case o.Role == h2.RoleClient && o.Remote.Port == srvPort && o.Local.Port != pcPort:
				ends[0] = o
			case o.Role == h2.RoleServer && o.Local.Port == srvPort && o.Remote.Port != pcPort:
				ends[1] = o
			case o.Role == h2.RoleServer && o.Remote.Port == pcPort:
				pipeServer = o
			}
		}
		return ends[0].Conn != 0 && ends[1].Conn != 0 && pipeServer.Conn != 0
	}, 20*time.Second, 50*time.Millisecond, "opens: %+v", rec.opens)
	cnt, err := c.Counters()
	require.NoError(t, err)
	t.Logf("%s: conns_http1 %d http1_calls %d records %d busy %d throttled %d, lost %d", hook, cnt.ConnsH1, cnt.H1Calls, cnt.Records, cnt.Busy, cnt.Throttled, rec.lost)
	require.Zero(t, rec.lost, "no ring gap: the ring is read as the traffic runs")

	for i, o := range ends {
		assert.True(t, o.HTTP1, "%v: opened as HTTP/1.x", o.Role)
		reqDir := h2.Egress // the client writes the requests
		if i == 1 {
			reqDir = h2.Ingress
		}
		ch := rec.chunks[o.Conn]
		require.NotNil(t, ch, "%v: no chunks", o.Role)
		// Every request line and status line, in order, in the runs of
		// contiguous copied bytes (a head may be split over calls: Go's
		// server reads a request's first byte alone).
		var lines [2][]string
		for d := range 2 {
			for _, k := range ch[d] {
				assert.True(t, k.HTTP1, "chunks of HTTP/1.x")
				if !k.CallStart {
					assert.LessOrEqual(t, len(k.Data), 64, "a call's last bytes: at most H1_TAIL")
				}
			}
			rs := runs(ch[d])
			for _, r := range rs {
				for _, l := range msgLine.FindAll(r.data, -1) {
					lines[d] = append(lines[d], string(l))
				}
			}
			if testing.Verbose() {
				for _, k := range ch[d] {
					t.Logf("%v dir %d off %d len %d start %v %.40q", o.Role, d, k.Offset, len(k.Data), k.CallStart, k.Data)
				}
			}
			// Each direction's copy ends at the connection's last byte (its
			// tail): the tracker sees where every message ends.
			last := rs[len(rs)-1]
			assert.Equal(t, rec.closes[o.Conn].Total[d], last.off+uint64(len(last.data)), "%v dir %d: the last copied byte is the last byte", o.Role, d)
			if d == int(1-reqDir) {
				// The chunked response ends with its last chunk, in a tail.
				assert.True(t, bytes.HasSuffix(last.data, []byte("0\r\n\r\n")), "%v: the chunked body's end copied: %q", o.Role, last.data)
			}
		}
		assert.Equal(t, sent, lines[reqDir], "%v: request lines", o.Role)
		require.Len(t, lines[1-reqDir], len(sent), "%v: status lines", o.Role)
		for _, l := range lines[1-reqDir] {
			assert.Equal(t, "HTTP/1.1 200 OK", l)
		}
	}
	// The pipelined requests: one read at the server, all three in its head.
	rs := runs(rec.chunks[pipeServer.Conn][h2.Ingress])
	require.NotEmpty(t, rs)
	assert.Equal(t, pipe.String(), string(rs[0].data), "the pipelined requests, whole")
	assert.GreaterOrEqual(t, cnt.ConnsH1, uint64(4), "both ends of both connections found HTTP/1.x")
}

// msgLine is a request line or a status line of the test's messages.
var msgLine = regexp.MustCompile(`(GET|POST) /[^ ]* HTTP/1\.1|HTTP/1\.1 [0-9]{3} [A-Za-z ]+`)

// run is bytes of a direction copied without a hole.
type run struct {
	off  uint64
	data []byte
}

// runs joins a direction's chunks into runs of contiguous bytes.
func runs(chunks []h2.Chunk) []run {
	var rs []run
	for _, k := range chunks {
		if n := len(rs); n > 0 && rs[n-1].off+uint64(len(rs[n-1].data)) == k.Offset {
			rs[n-1].data = append(rs[n-1].data, k.Data...)
			continue
		}
		rs = append(rs, run{off: k.Offset, data: append([]byte(nil), k.Data...)})
	}
	return rs
}

// TestCaptureHTTP1CallShare: a client sends a request whose body it writes
// a byte a call (each call a record, each record the tracker's work): what
// the kernel delivers of it is bounded by the connection's share counted
// in calls (each costs its bytes and FrameCost, as an HTTP/2 frame does).
// Before HTTP/1.x calls were charged, a one-byte call cost one token: the
// share let Rate calls a second through (every call sent, here: 312 000
// in 2 s, 35 times the bound; read only at the end, they lapped a ring
// of 65 536 slots).
func TestCaptureHTTP1CallShare(t *testing.T) {
	testutil.RequireRoot(t)
	hook := hooksHere(t)[0]
	const (
		rate      = 1 << 20
		frameCost = 256
		ringSlots = 1 << 16
		floodFor  = 2 * time.Second
	)
	c, err := Open(Options{Hook: hook, RingSlots: ringSlots, MaxConns: 64, HeaderCap: 16384, HTTP1: true,
		Rate: rate, FrameCost: frameCost})
	require.NoError(t, err)
	defer c.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_, _ = io.Copy(io.Discard, s)
	}()
	// Read as the receiver does, all along: the host's other traffic
	// must not lap the ring while the flood runs.
	rec := newRecorder()
	dec := NewDecoder(rec)
	stop, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-stop:
				drain(c, dec)
				return
			default:
				drain(c, dec)
				time.Sleep(time.Millisecond)
			}
		}
	}()
	cl, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	_, err = fmt.Fprintf(cl, "POST /drip HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", 1<<40)
	require.NoError(t, err)
	start := time.Now()
	sent := 0
	for time.Since(start) < floodFor {
		for range 1000 {
			_, err := cl.Write([]byte{'x'})
			require.NoError(t, err)
			sent++
		}
	}
	took := time.Since(start).Seconds()
	require.NoError(t, cl.Close())
	close(stop)
	<-drained
	cnt, err := c.Counters()
	require.NoError(t, err)
	require.Zero(t, rec.lost, "ring records lost: %d one-byte calls sent lapped the ring; tickets %d, throttled %d, frame_tokens %d, h1_calls %d",
		sent, cnt.Tickets, cnt.Throttled, cnt.FrameTokens, cnt.H1Calls)
	fport := port(t, ln.Addr().String())
	bound := (float64(burst(rate, ringSlots*ring.SlotSize))+rate*took)/(1+frameCost) + 100
	for id, o := range rec.opens {
		if o.Remote.Port != fport || o.Role != h2.RoleClient {
			continue
		}
		calls := 0
		if ch := rec.chunks[id]; ch != nil {
			calls = len(ch[h2.Egress])
		}
		t.Logf("hook %s: %d one-byte calls sent in %.1fs, %d delivered (bound %.0f); throttled %d, frame_tokens %d",
			hook, sent, took, calls, bound, cnt.Throttled, cnt.FrameTokens)
		require.Greater(t, float64(sent), 2*bound, "the flood outran its share")
		assert.LessOrEqual(t, float64(calls), bound, "the client socket's calls: within its connection's share")
		return
	}
	t.Fatalf("the client socket was not captured: %d opens, %d records lost, %d one-byte calls sent; %+v", len(rec.opens), rec.lost, sent, cnt)
}
