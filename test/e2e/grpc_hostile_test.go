// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// hostileConfig: the grpc receiver with TLS probing on and a small
// connection limit, spans to a file.
const hostileConfig = `
receivers:
  grpc:
    max_connections: 16
    # The flood and the ordinary calls are made by this one process: a share
    # per user (or, for uid 0, per cgroup) charges them together, by design.
    # This test holds the per-connection share; the per-user one is held
    # against another user's calls by TestAttack and TestCaptureFrameShare.
    max_capture_rate_per_user: 0
    tls: {enabled: true, rescan_interval: 1s}
exporters:
  file:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [grpc]
      exporters: [file]
`

// What any local user can do to the grpc receiver, all at once, against the
// built collector: a Go TLS program whose symbol table lies (running when
// the collector starts: it used to kill the collector), connections that
// are not HTTP/2 (they used to take the tracker's slots), an HPACK flood
// (a peer announcing a 4 GiB header table, then 64 MiB of header blocks of
// tiny insertions, as fast as loopback takes them: it used to grow the heap
// by gigabytes, and, its header blocks all copied, lap the capture ring
// with every other connection's records). Ordinary gRPC calls made meanwhile all become spans, the
// collector's memory stays under the agent's 300 MiB and it stops within
// 5 s of SIGTERM. The figures are logged (peak RSS, CPU).
func TestGRPCHostileInputs(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()

	crafted := filepath.Join(dir, "liar")
	require.NoError(t, grpctest.BuildTLSProgram(crafted))
	require.NoError(t, grpctest.PatchFileSymbolSize(crafted, "crypto/tls.(*Conn).Write", 1<<62))
	liar, err := grpctest.StartTLSProgram(crafted, "-wait")
	require.NoError(t, err)
	defer liar.Kill()

	out := filepath.Join(dir, "spans.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(hostileConfig, out)), 0o600))
	c := startCollector(t, nil, "--config", cfg)
	pid := c.cmd.Process.Pid
	assert.Contains(t, c.log(), "crypto/tls", "the lying executable is named in the log")

	idle := openIdleConns(t, 64)
	defer closeAll(idle)

	srv, client := grpctest.StartDialed(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flooded := make(chan int64, 1)
	go func() {
		if os.Getenv("NOFLOOD") != "" {
			flooded <- 64 << 20
			return
		}
		flooded <- grpctest.HPACKFlood(ctx, 64<<20)
	}()

	const calls = 50
	wait := grpctest.UnaryConcurrently(ctx, client, calls, 2)
	require.Zero(t, wait(), "ordinary calls failed")
	sent := <-flooded
	t.Logf("HPACK flood: %d bytes of header blocks sent", sent)
	require.GreaterOrEqual(t, sent, int64(32<<20), "the flood did not get out")

	_, port, _ := strings.Cut(srv.Addr, ":")
	unary := grpctest.Service + "/UnaryCall"
	ours := func() map[string]int {
		n := map[string]int{}
		for _, s := range readSpans(t, out) {
			if p, ok := s.Attributes().Get("server.port"); ok && p.AsString() == port {
				m, _ := s.Attributes().Get("rpc.method")
				n[s.Kind().String()+" "+m.Str()]++
			}
		}
		return n
	}
	want := map[string]int{"Client " + unary: calls, "Server " + unary: calls}
	assert.Eventually(t, func() bool { return ours()["Server "+unary] >= calls && ours()["Client "+unary] >= calls },
		60*time.Second, 200*time.Millisecond, "spans of the ordinary calls: %v\n%s", ours(), tail(c.log(), 3000))

	rss, cpu := peakRSS(t, pid), cpuTime(t, pid)
	t.Logf("collector: peak RSS %d MiB, CPU %s", rss>>20, cpu)
	assert.Less(t, rss, int64(300<<20), "peak RSS over the agent's 300 MiB")

	start := time.Now()
	c.stop(t)
	took := time.Since(start)
	t.Logf("collector stopped %s after SIGTERM", took)
	if i := strings.Index(c.log(), "grpc receiver: stopped"); i >= 0 {
		t.Log(tail(c.log()[i:], 600))
	}
	assert.Less(t, took, 5*time.Second, "SIGTERM to exit")
	assert.Equal(t, want, ours(), "the collector's log ends:\n%s", tail(c.log(), 1500))
	assert.NotContains(t, c.log(), "panic")
}

// openIdleConns opens n TCP connections to a listener of its own and sends
// a line of HTTP/1.1 on each, then leaves them open and idle.
func openIdleConns(t *testing.T, n int) []net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var conns []net.Conn
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, s) }()
		}
	}()
	for range n {
		cn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = cn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		require.NoError(t, err)
		conns = append(conns, cn)
	}
	return conns
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// peakRSS is VmHWM of a process.
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// cpuTime is a process's user and system time.
func cpuTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ 100
}
