// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// A long-lived gRPC connection, then thousands of connections that only
// look like HTTP/2 (the client preface and a SETTINGS frame, never a
// call), far more than the kernel keeps HTTP/2 connections (MaxConns 16),
// then calls on the first connection: they are all captured on the same
// connection id. The flood stays on probation in h2_pending and evicts its
// own kind only; before, each was admitted into h2_conns at its preface and
// pushed the live connection's state out (its later calls seen as a new,
// mid-stream connection).
func TestCapturePrefaceFlood(t *testing.T) {
	testutil.RequireRoot(t)
	c, err := Open(Options{Hook: hooksHere(t)[0], RingSlots: 1 << 16, MaxConns: 16, HeaderCap: 16384})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	srv, client := grpctest.StartDialed(t)
	const before, after = 50, 50
	// 3000 connections, two descriptors each here, or as many as the
	// process may open (a guest's limit is lower), still far more than
	// MaxConns.
	var nofile syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile))
	flood := min(3000, (int(nofile.Cur)-256)/2)
	require.Greater(t, flood, 10*16, "open files allowed: %d", nofile.Cur)
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, before, 2)(), "failed calls")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer s.Close()
				buf := make([]byte, len(clientStart))
				_, _ = io.ReadFull(s, buf)
				_, _ = io.Copy(io.Discard, s) // held open until the client closes
			}()
		}
	}()
	var conns []net.Conn
	defer func() {
		for _, cl := range conns {
			_ = cl.Close()
		}
	}()
	for range flood {
		cl, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		conns = append(conns, cl)
		_, err = cl.Write(clientStart)
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond) // the server ends read the prefaces
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, after, 2)(), "failed calls")

	rec := newRecorder()
	dec := NewDecoder(rec)
	drain(c, dec)
	cnt, err := c.Counters()
	require.NoError(t, err)
	t.Logf("conns_http2 %d conns_confirmed %d predating %d", cnt.ConnsH2, cnt.ConnsConfirmed, cnt.ConnsPredating)
	assert.GreaterOrEqual(t, cnt.ConnsH2, uint64(flood), "the flood's connections taken for HTTP/2")
	assert.Less(t, cnt.ConnsConfirmed, uint64(flood), "... but never admitted into h2_conns")
	p := port(t, srv.Addr)
	n := 0
	for _, o := range rec.opens {
		if (o.Remote.Port == p && o.Role == h2.RoleClient) || (o.Local.Port == p && o.Role == h2.RoleServer) {
			n++
			_, _, exact := checkSession(t, rec, o, before+after, 0)
			assert.True(t, exact, "role %d: every call on the long-lived connection", o.Role)
		}
	}
	assert.Equal(t, 2, n, "the long-lived connection's two sockets, each opened once")
}
