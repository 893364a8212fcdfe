// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// fakeEnv runs Runners on testdata/fakebpftrace.sh.
type fakeEnv struct {
	bin  string // the fake bpftrace
	dir  string // $FAKE_DIR
	logs *observer.ObservedLogs
	out  *sink
}

func newFakeEnv(t *testing.T) *fakeEnv {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/fakebpftrace.sh")
	require.NoError(t, err)
	bin := filepath.Join(dir, "bpftrace")
	require.NoError(t, os.WriteFile(bin, src, 0o755))
	t.Setenv("FAKE_DIR", dir)
	return &fakeEnv{bin: bin, dir: dir, out: &sink{}}
}

// runner returns a started Runner with short timings; it is shut down at
// the end of the test.
func (e *fakeEnv) runner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	if cfg.Binary == "" {
		cfg.Binary = e.bin
	}
	core, logs := observer.New(zap.DebugLevel)
	e.logs = logs
	r, err := New(cfg, zap.New(core), e.out)
	require.NoError(t, err)
	r.backoffMin, r.backoffMax = 50*time.Millisecond, 400*time.Millisecond
	r.grace = 2 * time.Second
	r.startupWindow = 100 * time.Millisecond
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r
}

// pids returns the pids of the fake's runs for a mode.
func (e *fakeEnv) pids(t *testing.T, mode string) []int {
	return readPids(t, filepath.Join(e.dir, mode+".pids"))
}

// children returns the pids of the children the fake's runs started.
func (e *fakeEnv) children(t *testing.T, mode string) []int {
	return readPids(t, filepath.Join(e.dir, mode+".children"))
}

func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		out = append(out, pid)
	}
	return out
}

// assertGone checks that the runs (the runner's children) are reaped
// already, and that what they started, killed with their process group, is
// gone too: it is reaped by init once its parent is gone, which may take a
// moment.
func assertGone(t *testing.T, runs, started []int) {
	t.Helper()
	require.NotEmpty(t, runs)
	for _, pid := range runs {
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "bpftrace (pid %d) still exists (%s)", pid, procState(pid))
	}
	for _, pid := range started {
		assert.Eventually(t, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }, 3*time.Second, 10*time.Millisecond,
			"pid %d, started by bpftrace, still exists (%s)", pid, procState(pid))
	}
}

// procState is the state letter in /proc/<pid>/stat ("Z": zombie).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

func sumValues(ms []pmetric.Metric) []int64 {
	var out []int64
	for _, m := range ms {
		for i := 0; i < m.Sum().DataPoints().Len(); i++ {
			out = append(out, m.Sum().DataPoints().At(i).IntValue())
		}
	}
	return out
}

func TestRunnerOutputAndShutdown(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{{
		Name:         "run",
		Program:      "// fake: run\nBEGIN { @c = count(); @internal = 1; }",
		PullInterval: 250 * time.Millisecond,
		Maps:         map[string]MapConfig{"@c": {Type: MapTypeSum}},
	}}})

	// printf + join: one line.
	eventually(t, 5*time.Second, func() bool {
		_, ok := e.out.findRecord(func(l logRec) bool { return l.body == "1234       42    /bin/true a b" })
		return ok
	}, "the printed line")
	line, _ := e.out.findRecord(func(l logRec) bool { return l.body == "1234       42    /bin/true a b" })
	assert.Equal(t, plog.SeverityNumberInfo, line.severity)
	assert.Equal(t, map[string]any{AttrScript: "run", AttrStream: "stdout"}, line.attrs)
	assert.NotZero(t, line.timestamp)

	eventually(t, 5*time.Second, func() bool { return len(e.out.metricsNamed("bpftrace.run.c")) > 0 }, "the @c metric")
	assert.Equal(t, []int64{3}, sumValues(e.out.metricsNamed("bpftrace.run.c")))
	// A map not listed but printed (plainly assigned: a Gauge) is exported too.
	internal := e.out.metricsNamed("bpftrace.run.internal")
	require.NotEmpty(t, internal, "a printed map no maps: entry names is exported")
	assert.Equal(t, pmetric.MetricTypeGauge, internal[0].Type())
	assert.Equal(t, int64(3), internal[0].Gauge().DataPoints().At(0).IntValue())

	eventually(t, 5*time.Second, func() bool {
		_, ok := e.out.findRecord(func(l logRec) bool { return l.event == "bpftrace.helper_error" })
		return ok && r.Counters()["run"].ParseErrors == 1
	}, "the rest of the output")
	lost, ok := e.out.findRecord(func(l logRec) bool { return l.event == EventLostEvents })
	require.True(t, ok)
	assert.Equal(t, plog.SeverityNumberWarn, lost.severity)
	assert.Equal(t, int64(5), lost.attrs[AttrLostEvents])
	helper, _ := e.out.findRecord(func(l logRec) bool { return l.event == "bpftrace.helper_error" })
	assert.Equal(t, "map_update_elem failed: argument list too long (-7) at 1:26", helper.body)
	garbage, ok := e.out.findRecord(func(l logRec) bool { return l.body == "garbage that is not JSON" })
	require.True(t, ok, "a line that is not JSON is passed on")
	assert.Equal(t, plog.SeverityNumberWarn, garbage.severity)

	memlock, ok := e.out.findRecord(func(l logRec) bool { return strings.Contains(l.body, "RLIMIT_MEMLOCK") })
	require.True(t, ok, "stderr lines are log records")
	assert.Equal(t, plog.SeverityNumberWarn, memlock.severity)
	assert.Equal(t, map[string]any{AttrScript: "run", AttrStream: "stderr"}, memlock.attrs)
	_, ok = e.out.findRecord(func(l logRec) bool { return l.body == "WARNING: something run said" })
	assert.True(t, ok, "the temporary program's path reads as the script's name")

	composed, err := os.ReadFile(filepath.Join(e.dir, "run.bt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(composed), "// fake: run\nBEGIN { @c = count(); @internal = 1; }\n"))
	assert.True(t, strings.HasSuffix(string(composed), "\ninterval:ms:250 { print(@c); }\n"), "%s", composed)

	pids := e.pids(t, "run")
	require.NoError(t, r.Shutdown(context.Background()))
	assertGone(t, pids, nil)

	// SIGINT: the END output is delivered before Shutdown returns.
	_, ok = e.out.findRecord(func(l logRec) bool { return l.body == "END block" })
	assert.True(t, ok, "END output")
	_, ok = e.out.findRecord(func(l logRec) bool { return l.body == "unterminated" })
	assert.True(t, ok, "a last line without newline")
	assert.Equal(t, []int64{3, 7}, sumValues(e.out.metricsNamed("bpftrace.run.c")))

	c := r.Counters()["run"]
	assert.Equal(t, Counters{LostEvents: 5, ParseErrors: 1}, c)
	assert.Positive(t, e.logs.FilterMessage("bpftrace script running").Len())
	assert.NoError(t, r.Shutdown(context.Background()), "Shutdown twice")
}

func TestRunnerFailuresAndRestarts(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{
		{Name: "broken", Program: "// fake: compile_error\nBEGIN { @a = 1; print(@nope); }"},
		{Name: "crash", Program: "// fake: crash\nBEGIN {}"},
		{Name: "run", Program: "// fake: run\nBEGIN { @c = count(); }"},
	}})
	eventually(t, 10*time.Second, func() bool {
		c := r.Counters()
		return c["broken"].StartFailures >= 3 && c["crash"].Restarts >= 2
	}, "failures are retried")
	c := r.Counters()
	assert.Zero(t, c["crash"].StartFailures, "it ran past the startup window: a restart, not a start failure")
	assert.GreaterOrEqual(t, c["broken"].Restarts, c["broken"].StartFailures-1)
	assert.Equal(t, Counters{LostEvents: 5, ParseErrors: 1}, c["run"], "the other scripts keep running")
	_, ok := e.out.findRecord(func(l logRec) bool { return l.body == "1234       42    /bin/true a b" })
	assert.True(t, ok)

	failed := e.logs.FilterMessage("bpftrace script failed to start; retrying").FilterField(zap.String("script", "broken")).All()
	require.NotEmpty(t, failed)
	msg := failed[0].ContextMap()["error"].(string)
	assert.Contains(t, msg, "bpftrace exited with status 1 before attaching its probes: broken:2:9-15: ERROR: Undefined map: @nope")
	assert.NotContains(t, msg, "RLIMIT_MEMLOCK", "the harmless memlock line is left out")
	ended := e.logs.FilterMessage("bpftrace script ended; restarting").FilterField(zap.String("script", "crash")).All()
	require.NotEmpty(t, ended)
	assert.Contains(t, ended[0].ContextMap()["error"], "exited with status 3")

	// Exponential backoff: 50, 100, 200, 400, 400ms... far fewer attempts
	// than a tight loop.
	time.Sleep(time.Second)
	assert.Less(t, r.Counters()["broken"].StartFailures, uint64(12))

	pids := append(e.pids(t, "run"), e.pids(t, "crash")...)
	require.NoError(t, r.Shutdown(context.Background()))
	assertGone(t, pids, nil)
}

func TestRunnerBinaryProblems(t *testing.T) {
	e := newFakeEnv(t)
	prog := []ScriptConfig{{Name: "a", Program: "// fake: run\nBEGIN {}"}}

	r := e.runner(t, Config{Binary: "no-such-bpftrace-here", Scripts: prog})
	eventually(t, 5*time.Second, func() bool { return r.Counters()["a"].StartFailures >= 2 }, "retried")
	err := e.logs.FilterMessage("bpftrace script failed to start; retrying").All()[0].ContextMap()["error"]
	assert.Equal(t, `bpftrace binary "no-such-bpftrace-here" not found on PATH; install bpftrace or set binary to its absolute path`, err)
	require.NoError(t, r.Shutdown(context.Background()))

	t.Setenv("FAKE_BPFTRACE_VERSION", "v0.12.1")
	r = e.runner(t, Config{Scripts: prog})
	eventually(t, 5*time.Second, func() bool { return r.Counters()["a"].StartFailures >= 1 }, "too old")
	err = e.logs.FilterMessage("bpftrace script failed to start; retrying").All()[0].ContextMap()["error"]
	assert.Equal(t, "bpftrace 0.12.1 at "+e.bin+" is too old: bpftrace >= 0.13.0 is needed for its JSON output (-f json); upgrade bpftrace or set binary to a newer one", err)
	require.NoError(t, r.Shutdown(context.Background()))
	assert.Empty(t, e.pids(t, "run"), "never started")
}

func TestRunnerKillsWhatIgnoresSIGINT(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{{Name: "s", Program: "// fake: stubborn\nBEGIN {}"}}})
	r.grace = 300 * time.Millisecond
	eventually(t, 5*time.Second, func() bool { return len(e.children(t, "stubborn")) == 1 }, "started")
	start := time.Now()
	require.NoError(t, r.Shutdown(context.Background()))
	assert.Less(t, time.Since(start), 3*time.Second)
	assertGone(t, e.pids(t, "stubborn"), e.children(t, "stubborn"))
	assert.Positive(t, e.logs.FilterMessage("bpftrace did not exit after SIGINT; killing it").Len())
}

func TestRunnerShutdownContext(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{{Name: "s", Program: "// fake: stubborn\nBEGIN {}"}}})
	r.grace = time.Minute
	eventually(t, 5*time.Second, func() bool { return len(e.children(t, "stubborn")) == 1 }, "started")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.Shutdown(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 3*time.Second)
	assertGone(t, e.pids(t, "stubborn"), e.children(t, "stubborn"))
}

func TestRunnerKillsLeftoverChildren(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{{Name: "o", Program: "// fake: orphan\nBEGIN {}"}}})
	eventually(t, 5*time.Second, func() bool { return r.Counters()["o"].Restarts >= 1 }, "it exited and was restarted")
	assertGone(t, e.pids(t, "orphan")[:1], e.children(t, "orphan")[:1]) // the first run, and the child it left
	require.NoError(t, r.Shutdown(context.Background()))
	assertGone(t, e.pids(t, "orphan"), e.children(t, "orphan"))
	ended := e.logs.FilterMessage("bpftrace script ended; restarting").All()
	require.NotEmpty(t, ended)
	assert.Contains(t, ended[0].ContextMap()["error"], "exited with status 0 (the script ended by itself)")
}

func TestRunnerBatches(t *testing.T) {
	e := newFakeEnv(t)
	r := e.runner(t, Config{Scripts: []ScriptConfig{{Name: "f", Program: "// fake: flood\nBEGIN {}"}}})
	count := func() int {
		n := 0
		for _, l := range e.out.records() {
			if l.body == "line" {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Second, func() bool { return count() == 2500 }, "all lines")
	require.NoError(t, r.Shutdown(context.Background()))
	e.out.mu.Lock()
	calls := e.out.logCalls
	e.out.mu.Unlock()
	assert.LessOrEqual(t, calls, 30, "batched, not one call per line")
}

func TestRunnerLifecycle(t *testing.T) {
	r, err := New(Config{}, nil, &sink{})
	require.NoError(t, err)
	require.NoError(t, r.Shutdown(context.Background()), "shutdown before start")
	require.NoError(t, r.Start(context.Background()))
	assert.Error(t, r.Start(context.Background()))
	assert.Empty(t, r.Counters())

	_, err = New(Config{}, nil, nil)
	assert.Error(t, err)

	r, err = New(Config{}, nil, &sink{})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	require.NoError(t, r.Shutdown(context.Background()))
}
