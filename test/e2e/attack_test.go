// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// TestAttack is the attack suite (docs/tests.md, "The attack suite"; `make
// test-attack`): the built collector, as root, under (a) the shipped agent
// config (deploy/agent.yaml without k8sattributes, its exporter pointed at
// an OTLP sink of the test) and (b) the shipped config/grpc.yaml with TLS
// on, against what an unprivileged user (seqattack) can do. Each case
// asserts: the collector is alive (and became ready), its peak RSS within
// the agent's 300 MiB, its CPU within attackCPURatio of a benign control of
// the same bytes run in the same case, and another user's (seqcanary)
// canary, run beside the attack, all exported. A line "ATTACK <case>: ..."
// gives the figures of each case.
func TestAttack(t *testing.T) {
	testutil.RequireRoot(t)
	collectorBin(t)
	w := buildWorkloads(t)
	t.Run("agent", func(t *testing.T) {
		t.Run("exec-loop-long-argv", func(t *testing.T) { attackExecLoop(t, w) })
	})
	t.Run("grpc-tls", func(t *testing.T) {
		t.Run("sparse-and-lying-elf", func(t *testing.T) { attackSparseELF(t, w) })
		t.Run("frame-floods", func(t *testing.T) { attackFrameFloods(t, w) })
		t.Run("huge-writes", func(t *testing.T) { attackHugeWrites(t, w) })
		t.Run("preface-only-connections", func(t *testing.T) { attackPrefaces(t, w) })
		t.Run("pid-reuse-and-exec-after-setup", func(t *testing.T) { attackPidReuse(t, w) })
	})
	// A failure's figures again, last: a CI log shows the end of a test.
	if t.Failed() {
		for _, l := range attackRecap {
			t.Log("recap: " + l)
		}
	}
}

// attackRecap holds each case's figures and what a failing case lost, for
// TestAttack's recap.
var attackRecap []string

// startAttackAgent runs deploy/agent.yaml as the DaemonSet would, less
// k8sattributes (no API server here), exporting to sink.
func startAttackAgent(t *testing.T, sink *otlpSink) (*watched, error) {
	env := append(daemonSetEnv(t), "HEALTH_ENDPOINT="+freePort(t), "K8S_NODE_NAME=e2e")
	return startWatched(t, env,
		"--config", filepath.Join(repoRoot(t), "deploy", "agent.yaml"),
		"--config", "yaml:service::pipelines::logs::processors: [memory_limiter]",
		"--config", "yaml:service::pipelines::traces::processors: [memory_limiter]",
		"--config", "yaml:exporters::loadbalancing::resolver: {dns: null, static: {hostnames: ["+sink.addr+"]}}",
		"--config", "yaml:service::telemetry::metrics: {level: detailed, readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: "+agentMetricsPort+"}}}}]}")
}

// agentMetricsPort serves the agent's own metrics in the attack suite: what
// it dropped, and where, is logged beside a missing canary.
const agentMetricsPort = "18899"

// agentDrops is the agent's counters of what it lost, dropped or refused.
func agentDrops() string {
	resp, err := http.Get("http://127.0.0.1:" + agentMetricsPort + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") && (strings.Contains(l, "lost") || strings.Contains(l, "refused") || strings.Contains(l, "failed") ||
			strings.Contains(l, "dropped") || strings.Contains(l, "shed")) && !strings.HasSuffix(l, " 0") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// daemonSetEnv is the environment the DaemonSet gives the agent
// (deploy/kubernetes/agent-daemonset.yaml: GOMEMLIMIT, GOGC,
// MEMORY_LIMIT_MIB...), its literal values: the agent as deployed.
func daemonSetEnv(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "kubernetes", "agent-daemonset.yaml"))
	require.NoError(t, err)
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string
						Env  []struct {
							Name  string
							Value *string
						}
					}
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &ds))
	var env []string
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Value != nil { // valueFrom: the downward API, set by the test
				env = append(env, e.Name+"="+*e.Value)
			}
		}
	}
	require.Contains(t, strings.Join(env, " "), "GOMEMLIMIT=", "the DaemonSet's env")
	return env
}

// startGRPC runs config/grpc.yaml with TLS on (a rescan every second, the
// least allowed, so that the suite is short), spans to files in dir.
func startGRPC(t *testing.T, dir string) (*watched, string, error) {
	out := filepath.Join(dir, "grpc.jsonl")
	w, err := startWatched(t, []string{"GRPC_OUTPUT=" + out, "SEQ_OUTPUT=" + filepath.Join(dir, "seq.jsonl")},
		"--config", filepath.Join(repoRoot(t), "config", "grpc.yaml"),
		"--config", "yaml:receivers::grpc::tls: {enabled: true, rescan_interval: 1s}",
		"--config", "yaml:service::telemetry::metrics::level: none")
	return w, out, err
}

// envInt is an integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// (a) Exec loops with long argv: SEQ_ATTACK_PROCS (150) processes that each
// exec themselves 130 times with 510 short arguments unique to the exec,
// pause, then are killed together. The control: the same execs with the same
// argument bytes made by ordinary processes that exec once and exit.
func attackExecLoop(t *testing.T, w *workloads) {
	procs, execs, nargs := envInt("SEQ_ATTACK_PROCS", 150), 130, 510
	sink := newOTLPSink(t)
	c, err := startAttackAgent(t, sink)
	require.NoError(t, err)
	tag := fmt.Sprintf("%x", rand.Uint32())
	// The sink stands for a gateway on another node: this node's workload
	// must not starve it (at nice 0 beside 150 exec loops it fell behind,
	// and the agent's exports to it failed: a slow backend, not the attack
	// on the receiver). So this test runs at the collector's nice; the
	// workloads it starts are put back at 0 (a child takes its parent's).
	niceSelf(t, -10)

	settle := func(markers func() []string) []string {
		ms := markers()
		// Long enough for the backlog the attack leaves in the exporter on
		// a loaded 2-core machine: a late canary is no lost one.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if e, s := sink.missing(ms); len(e)+len(s) == 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second)
		return ms
	}

	// The control: procs*execs processes, 4 spawners at a time.
	var ctlMarkers []string
	control := c.window(func() {
		stop := make(chan struct{})
		markers := execCanary(t, w, tag+"c", 100*time.Millisecond, stop)
		start := time.Now()
		var cmds []*exec.Cmd
		for s := range 4 {
			// sh -c: a plain loop of fork and exec, as any script does.
			script := fmt.Sprintf(`i=%d; while [ $i -lt %d ]; do %s $i 1 %d once; i=$((i+4)); done`, s, procs*execs, w.execloop, nargs)
			cmd := as(w.attacker, "/bin/sh", "-c", script)
			require.NoError(t, cmd.Start())
			atNiceZero(cmd.Process.Pid)
			cmds = append(cmds, cmd)
		}
		for _, cmd := range cmds {
			require.NoError(t, cmd.Wait())
		}
		t.Logf("control: %d processes, one exec of %d arguments each, in %v", procs*execs, nargs, time.Since(start).Round(time.Second))
		close(stop)
		ctlMarkers = settle(markers)
	})

	var atkMarkers []string
	attack := c.window(func() {
		stop := make(chan struct{})
		markers := execCanary(t, w, tag+"a", 100*time.Millisecond, stop)
		start := time.Now()
		r, wr, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		var cmds []*exec.Cmd
		pgid := 0
		for p := range procs {
			cmd := as(w.attacker, w.execloop, strconv.Itoa(p), strconv.Itoa(execs), strconv.Itoa(nargs), "loop")
			cmd.SysProcAttr.Pgid = pgid
			cmd.ExtraFiles = []*os.File{wr}
			require.NoError(t, cmd.Start())
			atNiceZero(cmd.Process.Pid)
			if pgid == 0 {
				pgid = cmd.Process.Pid
			}
			cmds = append(cmds, cmd)
		}
		wr.Close()
		defer func() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			for _, cmd := range cmds {
				_ = cmd.Wait()
			}
		}()
		_ = r.SetReadDeadline(time.Now().Add(3 * time.Minute))
		n, err := io.ReadFull(r, make([]byte, procs))
		require.NoError(t, err, "%d of %d exec loops done", n, procs)
		rss, _, _ := readMem(c.pid)
		t.Logf("attack: %d processes x %d execs x %d arguments in %v; collector RSS %d MiB while they pause",
			procs, execs, nargs, time.Since(start).Round(time.Second), rss>>20)
		time.Sleep(3 * time.Second)
		// All die at once: every span is finished together.
		require.NoError(t, syscall.Kill(-pgid, syscall.SIGKILL))
		for _, cmd := range cmds {
			_ = cmd.Wait()
		}
		cmds = nil
		time.Sleep(2 * time.Second)
		close(stop)
		atkMarkers = settle(markers)
	})

	ce, cs := sink.missing(ctlMarkers)
	ae, as := sink.missing(atkMarkers)
	canary := fmt.Sprintf("control %d runs, %d exec records and %d spans missing; attack %d runs, %d exec records and %d spans missing",
		len(ctlMarkers), len(ce), len(cs), len(atkMarkers), len(ae), len(as))
	checkBounds(t, c, "agent/exec-loop-long-argv", attack, control, canary)
	if len(ae)+len(as) > 0 {
		drops := agentDrops()
		t.Logf("the agent's drops:\n%s", drops)
		attackRecap = append(attackRecap, fmt.Sprintf("agent/exec-loop-long-argv: canary missing during the attack: %d exec records, %d spans of %d runs; the agent's drops: %s",
			len(ae), len(as), len(atkMarkers), strings.ReplaceAll(drops, "\n", "; ")))
	}
	assert.Zero(t, len(ae), "agent/exec-loop-long-argv: %d of the canary's %d exec records missing during the attack (sink: %s)", len(ae), len(atkMarkers), sink)
	assert.Zero(t, len(as), "agent/exec-loop-long-argv: %d of the canary's %d process spans missing during the attack (sink: %s)", len(as), len(atkMarkers), sink)
	assert.NotEmpty(t, atkMarkers, "the canary ran")
}

// niceSelf sets every thread of the test process to nice n (threads
// started later inherit it), and back to 0 at the test's end.
func niceSelf(t *testing.T, n int) {
	set := func(n int) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				_ = unix.Setpriority(unix.PRIO_PROCESS, tid, n) // a thread may have exited
			}
		}
	}
	set(n)
	t.Cleanup(func() { set(0) })
}

// atNiceZero puts a workload process the test started back at nice 0 (its
// own children and execs keep it).
func atNiceZero(pid int) { _ = unix.Setpriority(unix.PRIO_PROCESS, pid, 0) }

// sectionHeader is the file offset of section i's header.
func sectionHeader(f *elf.File, b []byte, i int) int {
	shoff := f.ByteOrder.Uint64(b[0x28:])
	shentsize := int(f.ByteOrder.Uint16(b[0x3a:]))
	return int(shoff) + i*shentsize
}

// lieSectionNames points the section-name table (e_shstrndx's section) at
// off with size bytes.
func lieSectionNames(t *testing.T, b []byte, off, size uint64) {
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, elf.ELFCLASS64, f.Class)
	shstrndx := int(f.ByteOrder.Uint16(b[0x3e:]))
	h := sectionHeader(f, b, shstrndx)
	f.ByteOrder.PutUint64(b[h+0x18:], off)
	f.ByteOrder.PutUint64(b[h+0x20:], size)
}

// hostileFiles makes, in a fresh directory every user reads: a libssl.so.3
// (the host's) whose section-name table is declared as nearly 16 GiB inside
// a 16 GiB sparse file (no disk used), and a copy of /bin/sleep whose
// section-name table lies past its end; benign: the same files unpatched.
func hostileFiles(t *testing.T, benign bool) (libssl, sleep string) {
	dir, err := os.MkdirTemp("", "seq-attack-lib-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	lib, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libssl.so.3")
	require.NoError(t, err, "the host's libssl.so.3 (apt-get install libssl3)")
	sl, err := os.ReadFile("/bin/sleep")
	require.NoError(t, err)
	libssl, sleep = filepath.Join(dir, "libssl.so.3"), filepath.Join(dir, "sleep")
	if !benign {
		lieSectionNames(t, lib, 1<<20, 16<<30-2<<20)
		lieSectionNames(t, sl, uint64(len(sl))-64, 1<<40)
	}
	require.NoError(t, os.WriteFile(libssl, lib, 0o755))
	require.NoError(t, os.WriteFile(sleep, sl, 0o755))
	if !benign {
		require.NoError(t, os.Truncate(libssl, 16<<30))
	}
	return libssl, sleep
}

// startHolders maps libssl read-only and runs sleep, as the attacker.
func startHolders(t *testing.T, w *workloads, libssl, sleep string) {
	m := as(w.attacker, w.hostile, "map", libssl)
	in, err := m.StdinPipe()
	require.NoError(t, err)
	out, err := m.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, m.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	require.Equal(t, "ready\n", line, "the mapping process")
	s := as(w.attacker, sleep, "600")
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		in.Close()
		_ = m.Process.Kill()
		_ = s.Process.Kill()
		_ = m.Wait()
		_ = s.Wait()
	})
}

// (b) Sparse and lying ELF files: running when the collector starts (found
// by the scan at start) and started after (found by a rescan). The
// control: the same files, unpatched and not sparse.
func attackSparseELF(t *testing.T, w *workloads) {
	run := func(benign bool) (*watched, time.Duration, string, error) {
		dir := t.TempDir()
		lib, sl := hostileFiles(t, benign)
		startHolders(t, w, lib, sl)
		c, out, err := startGRPC(t, dir)
		if err != nil {
			return c, 0, "", err
		}
		lib2, sl2 := hostileFiles(t, benign)
		startHolders(t, w, lib2, sl2)
		g := startGRPCCanary(t, w, 50)
		time.Sleep(3 * time.Second) // three rescans
		g.rest(t)
		canary := waitCalls(t, out, g.port, grpctest.Service+"/UnaryCall", 100)
		return c, c.cpu(), canary, nil
	}
	ctl, control, _, err := run(true)
	require.NoError(t, err, "the control")
	ctl.stop(t)
	c, attack, canary, err := run(false)
	if err != nil {
		assert.Fail(t, "grpc-tls/sparse-and-lying-elf: the collector never became ready", "%v", err)
		checkBounds(t, c, "grpc-tls/sparse-and-lying-elf", attack, 0, "not run")
		return
	}
	checkBounds(t, c, "grpc-tls/sparse-and-lying-elf", attack, control, canary)
}

// floodBytes reads the byte count a hostile workload printed.
func floodBytes(t *testing.T, cmd *exec.Cmd) int {
	n, err := strconv.Atoi(runOut(t, cmd))
	require.NoError(t, err)
	return n
}

// (b) Frame floods of every type, each on one connection for 4 s at 6 MiB
// a second (within the default capture share, 8 MiB a second), beside the
// canary's calls. The control: the same bytes at the same pace as the
// small DATA frames of one ordinary streaming call; the ratio is asserted
// per frame type.
func attackFrameFloods(t *testing.T, w *workloads) {
	const secs, size = 4, 4 * 6 << 20
	c, out, err := startGRPC(t, t.TempDir())
	require.NoError(t, err)
	g := startGRPCCanary(t, w, 50)
	flood := func(typ string) time.Duration {
		return c.window(func() {
			n := floodBytes(t, as(w.attacker, w.hostile, "flood", typ, strconv.Itoa(size), strconv.Itoa(secs)))
			require.GreaterOrEqual(t, n, size, "the %s flood got out", typ)
			if typ == "settings" {
				g.rest(t)
			}
			time.Sleep(time.Second)
		})
	}
	control := flood("stream")
	t.Logf("control: %d bytes of an ordinary stream's DATA frames in %d s; CPU %v", size, secs, control)
	var worst time.Duration
	var figures []string
	for _, typ := range []string{"rst", "ping", "settings", "window", "continuation"} {
		cpu := flood(typ)
		r := float64(cpu) / float64(max(control, cpuFloor))
		figures = append(figures, fmt.Sprintf("%s %v (%.2fx)", typ, cpu, r))
		assert.LessOrEqual(t, r, attackCPURatio, "grpc-tls/frame-floods: the %s flood's CPU %v is %.2f times the control's %v (bound %.1f)", typ, cpu, r, control, attackCPURatio)
		worst = max(worst, cpu)
	}
	canary := waitCalls(t, out, g.port, grpctest.Service+"/UnaryCall", 100)
	t.Logf("floods: %s", strings.Join(figures, ", "))
	checkBounds(t, c, "grpc-tls/frame-floods (worst type)", worst, control, canary)
}

// (b) A single 32 MiB write of request frames on one connection. The
// control: the same bytes in 16 KiB writes.
func attackHugeWrites(t *testing.T, w *workloads) {
	const size = 32 << 20
	c, out, err := startGRPC(t, t.TempDir())
	require.NoError(t, err)
	g := startGRPCCanary(t, w, 50)
	control := c.window(func() {
		floodBytes(t, as(w.attacker, w.hostile, "write", strconv.Itoa(size), strconv.Itoa(16<<10)))
		time.Sleep(time.Second)
	})
	attack := c.window(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			floodBytes(t, as(w.attacker, w.hostile, "write", strconv.Itoa(size), strconv.Itoa(size)))
		}()
		g.rest(t)
		<-done
		time.Sleep(time.Second)
	})
	canary := waitCalls(t, out, g.port, grpctest.Service+"/UnaryCall", 100)
	checkBounds(t, c, "grpc-tls/huge-writes", attack, control, canary)
}

// holdConns runs `hostile prefaces n kind` as the attacker until release.
func holdConns(t *testing.T, w *workloads, n int, kind string) (release func()) {
	cmd := as(w.attacker, w.hostile, "prefaces", strconv.Itoa(n), kind)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	require.Equal(t, "ready\n", line, "%d %s connections", n, kind)
	return func() { in.Close(); _ = cmd.Wait() }
}

// (b) 5000 connections that send the 24-byte HTTP/2 preface and 5000 that
// send its first 4 bytes (more than max_connections, 4096, and 20000
// sockets, more than the kernel's maps hold), then idle, while a long-lived channel (the
// canary's, opened before) makes its later calls, which must keep their
// method. The control: as many connections sending as many bytes of HTTP/1.1.
func attackPrefaces(t *testing.T, w *workloads) {
	const n = 5000
	c, out, err := startGRPC(t, t.TempDir())
	require.NoError(t, err)
	g := startGRPCCanary(t, w, 50)
	hold := func(a, b string) {
		r1, r2 := holdConns(t, w, n, a), holdConns(t, w, n, b)
		time.Sleep(3 * time.Second)
		r1()
		r2()
		time.Sleep(time.Second)
	}
	control := c.window(func() { hold("http1", "http1-4") })
	attack := c.window(func() {
		r1, r2 := holdConns(t, w, n, "full"), holdConns(t, w, n, "4")
		time.Sleep(2 * time.Second)
		g.rest(t)
		time.Sleep(time.Second)
		r1()
		r2()
		time.Sleep(time.Second)
	})
	canary := waitCalls(t, out, g.port, grpctest.Service+"/UnaryCall", 100)
	checkBounds(t, c, "grpc-tls/preface-only-connections", attack, control, canary)
}

// tlsProg is a grpctls run as the attacker, started by start (which
// returns the command whose stdout prints the address).
type tlsProg struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	port  string
}

func startTLSProg(t *testing.T, cmd *exec.Cmd) *tlsProg {
	p := &tlsProg{cmd: cmd}
	var err error
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p.out = bufio.NewReader(stdout)
	return p
}

// run waits for the address, lets three rescans look at it, makes its
// calls and checks their spans.
func (p *tlsProg) run(t *testing.T, out, name string) string {
	line, err := p.out.ReadString('\n')
	require.NoError(t, err, "%s: its address", name)
	_, p.port, _ = net.SplitHostPort(strings.TrimSpace(line))
	time.Sleep(3 * time.Second)
	_, err = io.WriteString(p.stdin, "go\n")
	require.NoError(t, err)
	line, err = p.out.ReadString('\n')
	require.NoError(t, err, "%s: its result", name)
	var res grpctest.TLSResult
	require.NoError(t, json.Unmarshal([]byte(line), &res))
	require.Zero(t, res.Failed, "%s: calls failed", name)
	_ = p.cmd.Wait()
	var got map[string]int
	ok := assert.Eventually(t, func() bool {
		got = map[string]int{}
		for k, v := range spansByPort(t, out, p.port) {
			got[strings.Fields(k)[0]] += v
		}
		return got["Client"] >= res.Calls+1 && got["Server"] >= res.Calls+1
	}, 20*time.Second, 300*time.Millisecond, "%s (pid %d): want %d CLIENT and %d SERVER spans, got %v", name, res.PID, res.Calls+1, res.Calls+1, got)
	return fmt.Sprintf("%s pid %d: %d+%d spans of %d+%d (ok %v)", name, res.PID, got["Client"], got["Server"], res.Calls+1, res.Calls+1, ok)
}

// (b) A Go TLS gRPC program (grpctls) at a pid a rescan had already seen
// held by another process (the pid counter set back with ns_last_pid, as a
// wrap would), and one exec'd by `sh -c 'sleep 3; exec grpctls'` after 3 s
// of set-up: their calls must become spans. The control: grpctls at a
// fresh pid.
func attackPidReuse(t *testing.T, w *workloads) {
	c, out, err := startGRPC(t, t.TempDir())
	require.NoError(t, err)
	g := startGRPCCanary(t, w, 50)
	// A copy of grpctls each: a probed file covers every later process of it.
	ctlBin, reusedBin, wrappedBin := w.grpctlsCopy(t), w.grpctlsCopy(t), w.grpctlsCopy(t)
	var ctl string
	control := c.window(func() {
		ctl = startTLSProg(t, as(w.attacker, ctlBin, "-wait")).run(t, out, "fresh pid")
	})
	var reused, wrapped string
	attack := c.window(func() {
		// a short-lived process the rescans see, at pid P
		holder := as(w.attacker, "/bin/sleep", "600")
		require.NoError(t, holder.Start())
		pid := holder.Process.Pid
		time.Sleep(2500 * time.Millisecond)
		_ = holder.Process.Kill()
		_ = holder.Wait()
		var p *tlsProg
		for try := 0; try < 50 && p == nil; try++ {
			require.NoError(t, os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644))
			cmd := as(w.attacker, reusedBin, "-wait")
			q := startTLSProg(t, cmd)
			if cmd.Process.Pid == pid {
				p = q
			} else {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}
		require.NotNil(t, p, "grpctls never got the reused pid %d", pid)
		reused = p.run(t, out, "reused pid")
		g.rest(t)
		wrapped = startTLSProg(t, as(w.attacker, "/bin/sh", "-c", "sleep 3; exec "+wrappedBin+" -wait")).run(t, out, "exec'd after 3 s of set-up")
	})
	canary := waitCalls(t, out, g.port, grpctest.Service+"/UnaryCall", 100)
	// The attack runs two programs to the control's one.
	checkBounds(t, c, "grpc-tls/pid-reuse-and-exec-after-setup", attack/2, control,
		strings.Join([]string{canary, ctl, reused, wrapped}, "; "))
}
