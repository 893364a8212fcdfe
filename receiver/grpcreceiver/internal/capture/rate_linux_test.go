// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// One process pair writes header blocks as fast as loopback takes them (the
// kernel copies them all) while gRPC calls run on another connection: with
// each connection's share of the ring (Options.Rate) the flood is throttled
// (counted) and no record is lost, so every call of the other connection is
// captured exactly. Without the share the flood laps the ring and takes the
// other connection's records with it.
func TestCaptureRateShare(t *testing.T) {
	testutil.RequireRoot(t)
	for _, hook := range hooksHere(t) {
		t.Run(string(hook), func(t *testing.T) { testCaptureRateShare(t, hook) })
	}
}

func testCaptureRateShare(t *testing.T, hook Hook) {
	// An 8 MiB ring, read only once everything is done: it must hold the
	// calls and what the flood may copy (a 64 KiB burst and 128 KiB a
	// second per socket: 2.5 MiB if the test takes 10 s, as under QEMU's
	// emulation), while the flood alone would lap it four times over.
	c, err := Open(Options{Hook: hook, RingSlots: 1 << 16, MaxConns: 64, HeaderCap: 16384, Rate: 128 << 10})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	srv, client := grpctest.StartDialed(t)
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, 10, 1)(), "failed calls")

	const calls = 300
	flooded := make(chan int64, 1)
	go func() { flooded <- grpctest.HPACKFlood(ctx, 32<<20) }()
	require.Zero(t, grpctest.UnaryConcurrently(ctx, client, calls, 4)(), "failed calls")
	sent := <-flooded
	require.GreaterOrEqual(t, sent, int64(16<<20), "the flood did not get out")

	rec := newRecorder()
	dec := NewDecoder(rec)
	drain(c, dec)
	cnt, err := c.Counters()
	require.NoError(t, err)
	t.Logf("hook %s: flood of %d bytes; %+v decoder %+v", hook, sent, cnt, dec.Stats())
	assert.Zero(t, rec.lost, "ring records lost")
	assert.Positive(t, cnt.Throttled, "the flood's calls throttled")
	assert.Less(t, cnt.BytesCopied, uint64(sent/2), "the flood's bytes mostly not copied")

	p := port(t, srv.Addr)
	n := 0
	for _, o := range rec.opens {
		if (o.Remote.Port == p && o.Role == h2.RoleClient) || (o.Local.Port == p && o.Role == h2.RoleServer) {
			n++
			_, _, exact := checkSession(t, rec, o, 10+calls, 0)
			assert.True(t, exact, "role %d: every call of the ordinary connection", o.Role)
		}
	}
	assert.Equal(t, 2, n, "the ordinary connection's two sockets")
}
