// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// A local user floods the host with TCP connections that are not HTTP/2
// (far more than the kernel tracks HTTP/2 connections: MaxConns 16) while
// gRPC calls run on a connection established before the flood and on one
// established after it: every call is still captured exactly. The flood's
// connections are classified not HTTP/2 (counted) and keep no state that
// could push out an HTTP/2 connection's.
func TestCaptureConnectionFlood(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range hooksHere(t) {
		t.Run(string(hook), func(t *testing.T) { testCaptureConnectionFlood(t, hook, false) })
	}
}

// The same flood with HTTP/1.x on, each connection's first bytes a request
// line: the kernel admits every one as HTTP/1.x (a request line is as cheap
// as nothing), into a map of its own, so the HTTP/2 connections are never
// evicted and every call is still captured exactly. Before that map they
// shared HTTP/2's LRU: the attack suite's preface case lost the method of
// half its canary calls.
func TestCaptureHTTP1FloodKeepsHTTP2(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range hooksHere(t) {
		t.Run(string(hook), func(t *testing.T) { testCaptureConnectionFlood(t, hook, true) })
	}
}

const floodConns = 1000

func testCaptureConnectionFlood(t *testing.T, hook Hook, http1 bool) {
	c, err := Open(Options{Hook: hook, RingSlots: 1 << 16, MaxConns: 16, HeaderCap: 16384, HTTP1: http1})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	srv, err := grpctest.Start()
	require.NoError(t, err)
	defer srv.Stop()
	ccA, clientA, err := grpctest.Dial(srv.Addr)
	require.NoError(t, err)
	defer ccA.Close()

	const before, during, after = 100, 200, 100
	require.Zero(t, grpctest.UnaryConcurrently(ctx, clientA, before, 4)(), "failed calls")

	// The flood: plain bytes both ways on every connection, all kept open
	// until the end, while calls run on A.
	waitDuring := grpctest.UnaryConcurrently(ctx, clientA, during, 4)
	line := "hello\n"
	if http1 {
		line = "GET / HTTP/1.1\r\n"
	}
	closeFlood := flood(t, floodConns, line)
	defer closeFlood()
	require.Zero(t, waitDuring(), "failed calls")

	require.Zero(t, grpctest.UnaryConcurrently(ctx, clientA, after, 4)(), "failed calls")
	ccB, clientB, err := grpctest.Dial(srv.Addr)
	require.NoError(t, err)
	defer ccB.Close()
	require.Zero(t, grpctest.UnaryConcurrently(ctx, clientB, after, 4)(), "failed calls")

	rec := newRecorder()
	dec := NewDecoder(rec)
	drain(c, dec)
	cnt, lostCalls := checkCounters(t, c, rec, dec, hook)

	// Both connections, both ends, from their start: every call.
	p := port(t, srv.Addr)
	var sessions []h2.ConnOpen
	for _, o := range rec.opens {
		if (o.Remote.Port == p && o.Role == h2.RoleClient) || (o.Local.Port == p && o.Role == h2.RoleServer) {
			sessions = append(sessions, o)
		}
	}
	for id, o := range rec.opens {
		n := [2]int{}
		if ch := rec.chunks[id]; ch != nil {
			n = [2]int{len(ch[0]), len(ch[1])}
		}
		t.Logf("open %d: role %d %v -> %v, chunks egress %d ingress %d", id, o.Role, o.Local, o.Remote, n[0], n[1])
	}
	require.Len(t, sessions, 4, "the client and server sockets of A and B, each opened once: %+v", sessions)
	// A's client is the one established first; a server socket's peer is a client's local end.
	var portA uint16
	var firstNs uint64
	for _, o := range sessions {
		if o.Role == h2.RoleClient && (portA == 0 || o.TimeNs < firstNs) {
			portA, firstNs = o.Local.Port, o.TimeNs
		}
	}
	for _, o := range sessions {
		want := after // B
		if (o.Role == h2.RoleClient && o.Local.Port == portA) || (o.Role == h2.RoleServer && o.Remote.Port == portA) {
			want = before + during + after
		}
		fs, _, exact := checkSession(t, rec, o, want, lostCalls)
		t.Logf("role %d conn %d: %d calls captured (want %d; exact %v)", o.Role, o.Conn, len(fs.headers), want, exact)
	}
	if http1 {
		assert.GreaterOrEqual(t, cnt.ConnsH1, uint64(2*floodConns), "the flood's sockets found HTTP/1.x")
		return
	}
	assert.GreaterOrEqual(t, cnt.ConnsNotH2, uint64(2*floodConns), "the flood's sockets found not HTTP/2")
	assert.GreaterOrEqual(t, cnt.NotH2Calls, uint64(2*floodConns), "later calls on them: skipped at one lookup")
}

// flood opens n loopback TCP connections, writes line each way on each and
// reads it, then a second time (a call on a connection already
// classified); they stay open until the returned func.
func flood(t *testing.T, n int, line string) func() {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, s)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, len(line))
				for range 2 {
					if _, err := io.ReadFull(s, buf); err != nil {
						return
					}
					if _, err := s.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	var clients []net.Conn
	for range n {
		cl, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		clients = append(clients, cl)
	}
	buf := make([]byte, len(line))
	for round := range 2 {
		for _, cl := range clients {
			_, err := cl.Write([]byte(line))
			require.NoError(t, err, "round %d", round)
		}
		for _, cl := range clients {
			_, err := io.ReadFull(cl, buf)
			require.NoError(t, err, "round %d", round)
		}
	}
	wg.Wait()
	return func() {
		for _, cl := range clients {
			_ = cl.Close()
		}
		mu.Lock()
		for _, s := range conns {
			_ = s.Close()
		}
		mu.Unlock()
		_ = ln.Close()
	}
}
