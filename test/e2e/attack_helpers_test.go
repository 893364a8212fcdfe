// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the OTLP exporter's default compression
)

// The attack suite's bounds (docs/tests.md, "The attack suite").
const (
	// attackRSS is the agent's memory limit (deploy/daemonset.yaml: 300 MiB).
	attackRSS = 300 << 20
	// attackCPURatio: the collector's CPU under an attack over its CPU
	// under the benign control of the same bytes. Generous: the two runs
	// share a 2-core machine with the workloads themselves, CPU is read in
	// 10 ms ticks, and the bound is for the class of fault (a per-frame walk
	// of every stream, an unbounded parse: ten times and more), not a
	// benchmark.
	attackCPURatio = 3.0
	// cpuFloor: a control's CPU below it counts as it. Under a quarter of a
	// second over a window, the 10 ms ticks and the host's own noise decide
	// a ratio, not the collector.
	cpuFloor = 250 * time.Millisecond
	// watchdogRSS: the collector is killed above it, so that a failing case
	// cannot take the machine with it (a sparse file took it past 13 GB).
	watchdogRSS = 1536 << 20
)

// workloads are the attack suite's programs, built once into a directory
// every user can read.
type workloads struct {
	dir                        string
	execloop, hostile, grpctls string
	attacker, canary           *syscall.Credential
}

func buildWorkloads(t *testing.T) *workloads {
	t.Helper()
	dir, err := os.MkdirTemp("", "seq-attack-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	w := &workloads{dir: dir, execloop: filepath.Join(dir, "execloop"), hostile: filepath.Join(dir, "hostile"), grpctls: filepath.Join(dir, "grpctls")}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // the toolchain running this test
	for out, pkg := range map[string]string{
		w.execloop: "./testdata/execloop",
		w.hostile:  "./testdata/hostile",
		w.grpctls:  "github.com/otelcol-seq/otelcol-seq/test/grpctest/cmd/grpctls",
	} {
		b, err := exec.Command(gobin, "build", "-o", out, pkg).CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, b)
	}
	w.attacker = ensureUser(t, "seqattack")
	w.canary = ensureUser(t, "seqcanary")
	return w
}

// grpctlsCopy is a fresh copy of grpctls (a file of its own) in w.dir.
func (w *workloads) grpctlsCopy(t *testing.T) string {
	t.Helper()
	f, err := os.CreateTemp(w.dir, "grpctls-")
	require.NoError(t, err)
	f.Close()
	copyFile(t, w.grpctls, f.Name(), 0o755)
	require.NoError(t, os.Chmod(f.Name(), 0o755))
	return f.Name()
}

// ensureUser returns the credential of a system user of that name, made
// with useradd when missing: no home, no shell, no supplementary groups.
func ensureUser(t *testing.T, name string) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		require.NoError(t, err, "useradd %s: %s", name, out)
		u, err = user.Lookup(name)
		require.NoError(t, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// as is a command run as cred, in a process group of its own.
func as(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	// Pdeathsig: nothing outlives a test binary that timed out.
	c.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Dir = "/"
	c.Stderr = os.Stderr
	return c
}

// runOut runs cmd and returns its standard output, trimmed.
func runOut(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.Output()
	require.NoError(t, err, "%s", cmd.Args)
	return strings.TrimSpace(string(out))
}

// watched is a collector under a watchdog that kills it over watchdogRSS.
type watched struct {
	*collector
	pid      int
	killedAt atomic.Int64 // RSS when the watchdog killed it
	lastCPU  atomic.Int64 // the last CPU time read, kept once it is gone
	stopDog  chan struct{}
}

// startWatched starts the built collector with the watchdog running from
// the first moment (a hostile file is parsed before "ready") and waits up
// to a minute for it to be ready. not ready: an error, the collector killed.
func startWatched(t *testing.T, env []string, args ...string) (*watched, error) {
	t.Helper()
	c := &collector{ready: make(chan struct{}), done: make(chan error, 1)}
	c.cmd = exec.Command(collectorBin(t), args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr, c.cmd.Stdout = c, c
	require.NoError(t, c.cmd.Start())
	w := &watched{collector: c, pid: c.cmd.Process.Pid, stopDog: make(chan struct{})}
	go func() { c.done <- c.cmd.Wait() }()
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-w.stopDog:
				return
			case <-tk.C:
			}
			if rss, _, _ := readMem(w.pid); rss > watchdogRSS {
				w.killedAt.Store(rss)
				_ = c.cmd.Process.Kill()
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(w.stopDog)
		_ = c.cmd.Process.Kill()
	})
	select {
	case <-c.ready:
		return w, nil
	case err := <-c.done:
		c.done <- err
		if rss := w.killedAt.Load(); rss > 0 {
			return w, fmt.Errorf("the collector was never ready: the watchdog killed it at %d MiB RSS (over %d MiB)", rss>>20, watchdogRSS>>20)
		}
		return w, fmt.Errorf("the collector exited before it was ready (%v):\n%s", err, tail(c.log(), 3000))
	case <-time.After(60 * time.Second):
		rss, _, _ := readMem(w.pid)
		_ = c.cmd.Process.Kill()
		return w, fmt.Errorf("the collector was not ready after 60 s (RSS %d MiB)", rss>>20)
	}
}

// alive says whether the collector still runs; why when it does not.
func (w *watched) alive() (bool, string) {
	select {
	case err := <-w.done:
		w.done <- err
		if rss := w.killedAt.Load(); rss > 0 {
			return false, fmt.Sprintf("killed by the watchdog at %d MiB RSS", rss>>20)
		}
		return false, fmt.Sprintf("exited: %v", err)
	default:
		return true, ""
	}
}

// cpu is the collector's user and system time so far (the last read once
// it is gone).
func (w *watched) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.pid))
	if err != nil {
		return time.Duration(w.lastCPU.Load())
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	d := time.Duration(u+k) * 10 * time.Millisecond
	w.lastCPU.Store(int64(d))
	return d
}

// peak is VmHWM, or what the watchdog saw when it killed the collector.
func (w *watched) peak() int64 {
	if rss := w.killedAt.Load(); rss > 0 {
		return rss
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// window is the collector's CPU over a run of f.
func (w *watched) window(f func()) time.Duration {
	c0 := w.cpu()
	f()
	return w.cpu() - c0
}

// checkBounds asserts the suite's bounds for one case: alive, peak RSS
// within attackRSS, CPU within attackCPURatio of the control's (controls
// zero: not compared; below cpuFloor: cpuFloor), and logs the figures on one line.
func checkBounds(t *testing.T, w *watched, name string, attack, control time.Duration, canary string) {
	t.Helper()
	ok, why := w.alive()
	peak := w.peak()
	ratio := 0.0
	if control > 0 {
		ratio = float64(attack) / float64(max(control, cpuFloor))
	}
	line := fmt.Sprintf("ATTACK %s: alive %v %s; peak RSS %d MiB (budget %d); CPU %v under attack, %v under control, ratio %.2f (bound %.1f); canary %s",
		name, ok, why, peak>>20, attackRSS>>20, attack, control, ratio, attackCPURatio, canary)
	t.Log(line)
	attackRecap = append(attackRecap, line)
	assert.True(t, ok, "%s: the collector is not alive: %s\n%s", name, why, tail(w.log(), 2000))
	assert.Less(t, peak, int64(attackRSS), "%s: peak RSS (VmHWM) %d MiB over the agent's %d MiB budget", name, peak>>20, attackRSS>>20)
	if control > 0 {
		assert.LessOrEqual(t, ratio, attackCPURatio, "%s: CPU %v under attack is %.2f times the %v of its benign control of the same bytes (bound %.1f)",
			name, attack, ratio, control, attackCPURatio)
	}
}

// otlpSink is an OTLP/gRPC backend for logs and traces that looks for
// markers in exec records' arguments and process spans' attributes.
type otlpSink struct {
	plogotlp.UnimplementedGRPCServer
	traces  *otlpTraces
	addr    string
	mu      sync.Mutex
	records int
	execs   map[string]bool // markers seen in exec records
	spans   map[string]bool // markers seen in spans' process.command_args
}

type otlpTraces struct {
	ptraceotlp.UnimplementedGRPCServer
	s *otlpSink
}

func newOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	s := &otlpSink{execs: map[string]bool{}, spans: map[string]bool{}}
	s.traces = &otlpTraces{s: s}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = l.Addr().String()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256 << 20))
	plogotlp.RegisterGRPCServer(srv, s)
	ptraceotlp.RegisterGRPCServer(srv, s.traces)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return s
}

// markerOf is the marker in a canary's arguments ("seqcanary-..."), if any.
func markerOf(args string) string {
	i := strings.Index(args, "seqcanary-")
	if i < 0 {
		return ""
	}
	m := args[i:]
	if j := strings.IndexAny(m, ` "],`); j >= 0 {
		m = m[:j]
	}
	return m
}

func (s *otlpSink) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	ld := req.Logs()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records += ld.LogRecordCount()
	for i := range ld.ResourceLogs().Len() {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				if lr.EventName() != "process.exec" {
					continue
				}
				if v, ok := lr.Attributes().Get("process.command_args"); ok {
					if m := markerOf(v.AsString()); m != "" {
						s.execs[m] = true
					}
				}
			}
		}
	}
	return plogotlp.NewExportResponse(), nil
}

func (ts *otlpTraces) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	td := req.Traces()
	s := ts.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range td.ResourceSpans().Len() {
		rs := td.ResourceSpans().At(i)
		for j := range rs.ScopeSpans().Len() {
			sp := rs.ScopeSpans().At(j).Spans()
			for k := range sp.Len() {
				for _, attrs := range []map[string]any{sp.At(k).Attributes().AsRaw(), rs.Resource().Attributes().AsRaw()} {
					if v, ok := attrs["process.command_args"]; ok {
						if m := markerOf(fmt.Sprint(v)); m != "" {
							s.spans[m] = true
						}
					}
				}
			}
		}
	}
	return ptraceotlp.NewExportResponse(), nil
}

// missing returns the markers whose exec record or span the sink has not seen.
// String says what the sink received.
func (s *otlpSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d log records, %d canary exec records, %d canary spans", s.records, len(s.execs), len(s.spans))
}

func (s *otlpSink) missing(markers []string) (execs, spans []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range markers {
		if !s.execs[m] {
			execs = append(execs, m)
		}
		if !s.spans[m] {
			spans = append(spans, m)
		}
	}
	return execs, spans
}

// execCanary runs /bin/true with a marker as the canary user every
// interval until stop is closed, and returns the markers it ran.
func execCanary(t *testing.T, w *workloads, tag string, interval time.Duration, stop <-chan struct{}) func() []string {
	var markers []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			m := fmt.Sprintf("seqcanary-%s-%d", tag, i)
			if err := as(w.canary, "/bin/sh", "-c", "/bin/true "+m).Run(); err == nil {
				markers = append(markers, m)
			}
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	return func() []string { <-done; return markers }
}

// grpcCanary is `hostile canary N` run as the canary user: a cleartext
// gRPC server and client on one long-lived connection, N calls before the
// attack and N more during it.
type grpcCanary struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	port  string
	n     int
}

func startGRPCCanary(t *testing.T, w *workloads, n int) *grpcCanary {
	t.Helper()
	g := &grpcCanary{cmd: as(w.canary, w.hostile, "canary", strconv.Itoa(n)), n: n}
	var err error
	g.stdin, err = g.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := g.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, g.cmd.Start())
	t.Cleanup(func() { _ = g.cmd.Process.Kill(); _ = g.cmd.Wait() })
	g.out = bufio.NewReader(stdout)
	addr := g.line(t)
	_, g.port, _ = net.SplitHostPort(addr)
	require.Equal(t, "half", g.line(t), "the canary's first calls")
	return g
}

func (g *grpcCanary) line(t *testing.T) string {
	t.Helper()
	l, err := g.out.ReadString('\n')
	require.NoError(t, err, "the gRPC canary")
	return strings.TrimSpace(l)
}

// rest makes the canary's second half of calls and waits for them.
func (g *grpcCanary) rest(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(g.stdin, "go\n")
	require.NoError(t, err)
	assert.Equal(t, "0", g.line(t), "the canary's calls failed")
}

// spansByPort counts the spans in a file exporter's output whose
// server.port is port, by kind and method.
func spansByPort(t *testing.T, path, port string) map[string]int {
	n := map[string]int{}
	for _, s := range readSpans(t, path) {
		if p, ok := s.Attributes().Get("server.port"); ok && p.AsString() == port {
			m, _ := s.Attributes().Get("rpc.method")
			n[s.Kind().String()+" "+m.Str()]++
		}
	}
	return n
}

// waitCalls waits up to 30 s for want CLIENT and want SERVER spans of
// method on port, and says what is missing.
func waitCalls(t *testing.T, path, port, method string, want int) string {
	t.Helper()
	var got map[string]int
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = spansByPort(t, path, port)
		if got["Client "+method] >= want && got["Server "+method] >= want {
			return fmt.Sprintf("%d+%d of %d+%d calls as CLIENT+SERVER spans", got["Client "+method], got["Server "+method], want, want)
		}
		if time.Now().After(deadline) {
			assert.Fail(t, "canary calls missing", "port %s: want %d CLIENT and %d SERVER spans of %s, got %v", port, want, want, method, got)
			return fmt.Sprintf("MISSING: %v of %d+%d", got, want, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
