// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/multiarch"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

var grpctlsBin struct {
	once sync.Once
	path string
	err  error
}

// buildGRPCTLS builds test/grpctest/cmd/grpctls once per run, or takes
// $GRPCTLS_BIN (built outside: the kernel matrix's guests do not build).
func buildGRPCTLS(t *testing.T) string {
	t.Helper()
	grpctlsBin.once.Do(func() {
		if grpctlsBin.path = os.Getenv("GRPCTLS_BIN"); grpctlsBin.path != "" {
			return
		}
		dir, err := os.MkdirTemp("", "grpctls")
		if err != nil {
			grpctlsBin.err = err
			return
		}
		grpctlsBin.path = filepath.Join(dir, "grpctls")
		grpctlsBin.err = grpctest.BuildTLSProgram(grpctlsBin.path)
	})
	require.NoError(t, grpctlsBin.err)
	return grpctlsBin.path
}

// runGRPCTLS runs grpctls to its end.
func runGRPCTLS(t *testing.T, bin string, args ...string) grpctest.TLSResult {
	t.Helper()
	p, err := grpctest.StartTLSProgram(bin, args...)
	require.NoError(t, err)
	res, err := p.Result()
	require.NoError(t, err)
	return res
}

// tee hands the decoded records to the recorder and to a tracker.
type tee struct {
	rec *recorder
	tr  *h2.Tracker
}

func (x tee) ConnOpen(o *h2.ConnOpen)   { x.rec.ConnOpen(o); x.tr.ConnOpen(o) }
func (x tee) Chunk(c *h2.Chunk)         { x.rec.Chunk(c); x.tr.Chunk(c) }
func (x tee) ConnClose(c *h2.ConnClose) { x.rec.ConnClose(c); x.tr.ConnClose(c) }
func (x tee) Lost(l *h2.Lost)           { x.rec.Lost(l); x.tr.Lost(l) }

// callKey counts the tracker's calls by process, side, method and status.
type callKey struct {
	pid    int
	side   h2.Side
	method string
	status int
}

// trackCalls decodes into rec and into a tracker whose calls are counted.
func trackCalls(rec *recorder) (*Decoder, *h2.Tracker, map[callKey]int) {
	calls := map[callKey]int{}
	tr := h2.NewTracker(h2.Config{}, func(c *h2.Call) {
		calls[callKey{int(c.Proc.PID), c.Side, c.Service + "/" + c.RPC, c.GRPCStatus}]++
	}, nil)
	return NewDecoder(tee{rec, tr}), tr, calls
}

// unaryCalls is what a tracker should count for ok UnaryCall calls and one
// NOT_FOUND, from client to server.
func unaryCalls(client, server, ok int) map[callKey]int {
	method := grpctest.Service + "/UnaryCall"
	return map[callKey]int{
		{client, h2.SideClient, method, 0}: ok, {server, h2.SideServer, method, 0}: ok,
		{client, h2.SideClient, method, 5}: 1, {server, h2.SideServer, method, 5}: 1,
	}
}

// only keeps the counts of the processes pids.
func only(calls map[callKey]int, pids ...int) map[callKey]int {
	out := map[callKey]int{}
	for k, n := range calls {
		if slices.Contains(pids, k.pid) {
			out[k] = n
		}
	}
	return out
}

// Go crypto/tls (opt-in TLS): grpctls, a separate Go executable, runs a
// grpc-go server and client over TLS in one process. It is started before
// the capture, which finds it among the running processes' executables and
// probes (*tls.Conn).Write, and Read at its entry and every RET; then the
// client makes its calls, 8 at a time on one connection, and one NOT_FOUND.
// The plaintext of both ends is captured: two sessions of that process, a
// client and a server, the preface at offset 0, every frame header and
// header block and no DATA payload byte, the close totals equal to the
// streams' lengths; the tracker makes exactly one client and one server
// call per RPC with the method and the status. The TCP sockets under them
// carry ciphertext: found not HTTP/2, never reported.
func TestCaptureTLSGo(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildGRPCTLS(t)
	const calls = 400
	p, err := grpctest.StartTLSProgram(bin, "-wait", "-calls", fmt.Sprint(calls), "-workers", "8")
	require.NoError(t, err)
	t.Cleanup(p.Kill) // if the test fails before its end
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384, TLS: true})
	defer c.Close()
	var found *GoBinary
	for _, b := range c.GoBinaries() {
		if b.Path == bin {
			found = &b
		}
	}
	require.NotNil(t, found, "grpctls not found among the running Go executables: %+v (skipped: %v)", c.GoBinaries(), c.GoSkipped())
	t.Logf("probed: %+v; skipped: %v", *found, c.GoSkipped())
	require.NoError(t, p.Go())
	res, err := p.Result()
	require.NoError(t, err)

	rec := newRecorder()
	dec, tr, tracked := trackCalls(rec)
	mine := func() []h2.ConnOpen {
		var out []h2.ConnOpen
		for _, o := range rec.opens {
			if int(o.Proc.PID) == res.PID {
				out = append(out, o)
			}
		}
		return out
	}
	// (*tls.Conn).Close ends both sessions.
	require.Eventually(t, func() bool {
		drain(c, dec)
		n := 0
		for _, o := range mine() {
			if _, ok := rec.closes[o.Conn]; ok {
				n++
			}
		}
		return n >= 2
	}, 20*time.Second, 50*time.Millisecond, "sessions of grpctls: %+v", mine())

	cnt, err := c.Counters()
	require.NoError(t, err)
	t.Logf("%+v decoder %+v tracker %+v", cnt, dec.Stats(), tr.Stats())
	require.Zero(t, rec.lost)
	require.Zero(t, dec.Stats().Malformed)
	lostCalls := int(cnt.Busy + cnt.ProgMisses)
	sessions := mine()
	require.Len(t, sessions, 2, "one client and one server session: %+v", sessions)
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].Role < sessions[j].Role })
	require.Equal(t, h2.RoleClient, sessions[0].Role)
	require.Equal(t, h2.RoleServer, sessions[1].Role)
	for _, o := range sessions {
		assert.True(t, o.ISN.Known, "the TCP socket under the session found")
		_, _, _ = checkSession(t, rec, o, calls+1, lostCalls)
		for dir := range 2 {
			for _, ch := range rec.chunks[o.Conn][dir] {
				require.False(t, ch.SeqKnown, "%v dir %d: plaintext at offset %d with a TCP sequence number", o.Role, dir, ch.Offset)
			}
		}
	}
	if lostCalls == 0 {
		assert.Equal(t, unaryCalls(res.PID, res.PID, calls), only(tracked, res.PID), "calls by side, method and status")
	}
	sameISN(t, sessions[0], sessions[1])
	assert.Equal(t, port(t, p.Addr), sessions[0].Remote.Port, "the client session's endpoints are its socket's")
	assert.Equal(t, port(t, p.Addr), sessions[1].Local.Port, "the server session's endpoints are its socket's")
	assert.Positive(t, cnt.GoTLSCalls)
	for _, o := range rec.opens {
		if !o.ISN.Known {
			assert.NotEqual(t, port(t, p.Addr), o.Remote.Port, "a ciphertext socket taken for HTTP/2")
			assert.NotEqual(t, port(t, p.Addr), o.Local.Port, "a ciphertext socket taken for HTTP/2")
		}
	}
}

// sameISN checks that the two ends of one TLS connection, a client session
// and a server session, each found the TCP socket under it (two sockets, in
// two processes or one) and derive the same pair of initial sequence
// numbers from it: what the TLS call ids are made of (spanmap).
func sameISN(t *testing.T, client, server h2.ConnOpen) {
	t.Helper()
	require.True(t, client.ISN.Known, "the client session's socket found: %+v", client)
	require.True(t, server.ISN.Known, "the server session's socket found: %+v", server)
	assert.Equal(t, [2]h2.Endpoint{client.Local, client.Remote}, [2]h2.Endpoint{server.Remote, server.Local},
		"the endpoints of the sockets under the sessions (no NAT here)")
	cc, cs := client.ISN.ClientServer(h2.SideClient)
	sc, ss := server.ISN.ClientServer(h2.SideServer)
	t.Logf("ISNs: client end %#x/%#x (raw %+v), server end %#x/%#x (raw %+v)", cc, cs, client.ISN, sc, ss, server.ISN)
	assert.Equal(t, [2]uint32{cc, cs}, [2]uint32{sc, ss}, "the (client, server) ISNs both ends derive")
}

// What the Go TLS probes cost per RPC: grpctls runs the same calls (one at
// a time, then 8 at a time) under a capture without TLS and under one with
// it (grpctls named in GoBinaries: its processes start after the probes),
// alternately, GOTLS_COST_ROUNDS times (1). Logged: wall and CPU time per
// RPC (the process's user+system time over the calls: the uprobe traps are
// charged there), the uprobe hits per RPC (the programs' run counts, both
// ends of each call; other processes' Go TLS calls on the host, if any,
// count too) and the programs' own run time per hit. Figures in the
// receiver/grpcreceiver/README.md, "What TLS costs".
func TestCaptureTLSGoCost(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildGRPCTLS(t)
	rounds := 1
	if v := os.Getenv("GOTLS_COST_ROUNDS"); v != "" {
		_, err := fmt.Sscan(v, &rounds)
		require.NoError(t, err)
	}
	const calls = 2000
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(t, err)
	defer stats.Close()
	type sample struct{ wall, cpu, hits, bpfNs float64 }
	results := map[string][]sample{}
	for range rounds {
		for _, workers := range []int{1, 8} {
			for _, tls := range []bool{false, true} {
				o := Options{Hook: HookAuto, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384, TLS: tls}
				if tls {
					o.GoBinaries = []string{bin}
				}
				c := mustOpen(t, o)
				res := runGRPCTLS(t, bin, "-calls", fmt.Sprint(calls), "-workers", fmt.Sprint(workers))
				var runs uint64
				var bpf time.Duration
				for name, prog := range c.coll.Programs {
					if !strings.HasPrefix(name, "h2_go_") {
						continue
					}
					st, err := prog.Stats()
					require.NoError(t, err)
					runs += st.RunCount
					bpf += st.Runtime
				}
				require.NoError(t, c.Close())
				n := float64(res.Timed)
				s := sample{wall: float64(res.WallNs) / n / 1e3, cpu: float64(res.CPUNs) / n / 1e3, hits: float64(runs) / float64(res.Calls)}
				if runs > 0 {
					s.bpfNs = float64(bpf) / float64(runs)
				}
				key := fmt.Sprintf("workers=%d tls=%v", workers, tls)
				results[key] = append(results[key], s)
				if tls {
					// Both ends: one hit per Write, two per Read (entry, RET).
					assert.Greater(t, s.hits, 1.0, key)
					assert.Less(t, s.hits, 16.0, key)
				} else {
					assert.Zero(t, runs, key)
				}
			}
		}
	}
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	for _, workers := range []int{1, 8} {
		off, on := results[fmt.Sprintf("workers=%d tls=false", workers)], results[fmt.Sprintf("workers=%d tls=true", workers)]
		wall0, wall1 := med(off, func(s sample) float64 { return s.wall }), med(on, func(s sample) float64 { return s.wall })
		cpu0, cpu1 := med(off, func(s sample) float64 { return s.cpu }), med(on, func(s sample) float64 { return s.cpu })
		hits, bpfNs := med(on, func(s sample) float64 { return s.hits }), med(on, func(s sample) float64 { return s.bpfNs })
		t.Logf("Go TLS probes, %d calls at a time, median of %d: wall %.1f -> %.1f µs/RPC (x%.2f), CPU %.1f -> %.1f µs/RPC (+%.1f µs), %.1f uprobe hits/RPC (+%.2f µs CPU per hit), BPF run time %.0f ns/hit",
			workers, rounds, wall0, wall1, wall1/wall0, cpu0, cpu1, cpu1-cpu0, hits, (cpu1-cpu0)/hits, bpfNs)
	}
}

// A process started after Open that maps a libssl from a path nobody named
// (as a container's would be): RescanTLS finds it among the new processes
// and probes it once; a later rescan probes nothing new.
func TestRescanTLSNewLibSSL(t *testing.T) {
	testutil.RequireRoot(t)
	sys := "/usr/lib/" + multiarch.Tuple() + "/libssl.so.3"
	if _, err := os.Stat(sys); err != nil {
		t.Fatalf("%s: the test copies Debian's libssl3 (installed with python3 and curl): %v", sys, err)
	}
	lib := filepath.Join(t.TempDir(), "libssl.so.3")
	b, err := os.ReadFile(sys)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lib, b, 0o644))

	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	for _, p := range c.LibSSL() {
		require.NotContains(t, p, lib, "not mapped by anyone at start")
	}
	py := exec.Command("python3", "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ok', flush=True); sys.stdin.read()", lib)
	in, err := py.StdinPipe()
	require.NoError(t, err)
	out, err := py.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, py.Start())
	defer func() { _ = in.Close(); _ = py.Wait() }()
	line := make([]byte, 3)
	_, err = io.ReadFull(out, line)
	require.NoError(t, err)

	got := c.RescanTLS(context.Background())
	want := filepath.Join("/proc", fmt.Sprint(py.Process.Pid), "root", lib)
	require.Equal(t, []string{want}, got.LibSSL, "failed: %v", got.Failed)
	require.Contains(t, c.LibSSL(), want)
	again := c.RescanTLS(context.Background())
	assert.Empty(t, again.LibSSL, "one file is probed once")
	require.NoError(t, c.Detach())
	assert.Empty(t, c.RescanTLS(context.Background()).LibSSL, "nothing after Detach")
}

// A Go Write after Close fails, but the probe at its entry has walked its
// bytes already: they must not open a session (mid-stream, bytes never
// sent); they are counted in tls_after_close. The test process's own
// crypto/tls is probed (a running Go executable; ProbeSelf: the collector
// never probes its own).
func TestGoTLSWriteAfterClose(t *testing.T) {
	testutil.RequireRoot(t)
	cert, err := grpctest.SelfSigned()
	require.NoError(t, err)
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true, ProbeSelf: true})
	defer c.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		s, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, s)
		_ = s.Close()
	}()
	cl, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // a test's own certificate
	require.NoError(t, err)
	settings := []byte{0, 0, 0, 4, 0, 0, 0, 0, 0}
	_, err = cl.Write(append([]byte(h2.Preface), settings...))
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	headers := []byte{0, 0, 1, 1, 4, 0, 0, 0, 1, 0x82} // HEADERS, stream 1, END_HEADERS, ":method: GET"
	_, err = cl.Write(headers)
	require.Error(t, err, "a write after Close fails")
	<-served

	rec := newRecorder()
	dec := NewDecoder(rec)
	var mine []h2.ConnOpen
	require.Eventually(t, func() bool {
		drain(c, dec)
		mine = nil
		for _, o := range rec.opens {
			if o.Proc.PID == uint32(os.Getpid()) && o.ISN.Known {
				mine = append(mine, o)
			}
		}
		return len(mine) >= 2
	}, 10*time.Second, 50*time.Millisecond, "the client and server sessions: %+v", rec.opens)
	time.Sleep(100 * time.Millisecond)
	drain(c, dec)
	cnt, err := c.Counters()
	require.NoError(t, err)
	roles := map[h2.Role]int{}
	for _, o := range rec.opens {
		if o.Proc.PID == uint32(os.Getpid()) && o.ISN.Known {
			roles[o.Role]++
		}
	}
	assert.Equal(t, map[h2.Role]int{h2.RoleClient: 1, h2.RoleServer: 1}, roles, "no session opened by the write after Close")
	assert.Positive(t, cnt.TLSAfterClose, "the write after Close counted")
}
