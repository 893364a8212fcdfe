// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

// Integration tests: the real bpftrace running the real tools while the test
// drives a known workload. They need root (CI runs as root, where they must
// run, and fail if bpftrace is missing).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// waitLong bounds the waits for bpftrace: compiling and attaching takes
// about a second, much more on a loaded CI machine.
const waitLong = 30 * time.Second

// prepareHost mounts tracefs if it is not mounted (bpftrace needs it for
// tracepoints); root only.
func prepareHost() {
	if os.Geteuid() != 0 {
		return
	}
	if _, err := os.Stat("/sys/kernel/tracing/events"); err == nil {
		return
	}
	_ = unix.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, "")
}

// requireBpftrace skips without root, and fails without bpftrace.
func requireBpftrace(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("bpftrace"); err != nil {
		t.Fatalf("bpftrace is not installed (apt-get install bpftrace): %v", err)
	}
}

type realRun struct {
	r    *Runner
	out  *sink
	logs *observer.ObservedLogs
}

// startReal starts a Runner on the real bpftrace; at the end of the test it
// is shut down and the test checks that nothing it started is left.
func startReal(t *testing.T, scripts ...ScriptConfig) *realRun {
	t.Helper()
	requireBpftrace(t)
	core, logs := observer.New(zap.InfoLevel)
	out := &sink{}
	r, err := New(Config{Scripts: scripts}, zap.New(core), out)
	require.NoError(t, err)
	r.backoffMin = 500 * time.Millisecond
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		assert.NoError(t, r.Shutdown(ctx))
		assertNoChildren(t)
		if t.Failed() {
			for _, e := range logs.All() {
				t.Logf("log: %s %v", e.Message, e.ContextMap())
			}
		}
	})
	return &realRun{r: r, out: out, logs: logs}
}

// assertNoChildren checks /proc: no process (zombie or not) has this test
// process as its parent, and no bpftrace runs in a process group of ours.
func assertNoChildren(t *testing.T) {
	t.Helper()
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		comm := s[strings.IndexByte(s, '(')+1 : i]
		f := strings.Fields(s[i+2:]) // state ppid pgrp ...
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		assert.NotEqual(t, self, ppid, "pid %d (%s, state %s) is still a child of the test", pid, comm, f[0])
	}
}

// getppid makes n getppid system calls.
func getppid(n int) {
	for i := 0; i < n; i++ {
		unix.Getppid()
	}
}

// points returns the sum data points of the metric, with their attributes.
func sumPoints(ms []pmetric.Metric) []pmetric.NumberDataPoint {
	var out []pmetric.NumberDataPoint
	for _, m := range ms {
		if m.Type() != pmetric.MetricTypeSum {
			continue
		}
		for i := 0; i < m.Sum().DataPoints().Len(); i++ {
			out = append(out, m.Sum().DataPoints().At(i))
		}
	}
	return out
}

func TestIntegrationExecsnoop(t *testing.T) {
	run := startReal(t, ScriptConfig{Path: "/usr/sbin/execsnoop.bt"})
	marker := fmt.Sprintf("otelcol-bpftrace-marker-%d", time.Now().UnixNano())
	found := func() (logRec, bool) {
		return run.out.findRecord(func(l logRec) bool { return strings.Contains(l.body, marker) })
	}
	// Exec the marker until it shows up (the probes attach after a moment).
	deadline := time.Now().Add(testutil.Scaled(waitLong))
	for {
		require.NoError(t, exec.Command("/bin/true", marker, "second-arg").Run())
		if _, ok := found(); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	eventually(t, 5*time.Second, func() bool { _, ok := found(); return ok }, "execsnoop line with the marker")
	rec, _ := found()
	// printf("%-10u %-5d ", elapsed, pid) and join(args->argv): one record.
	assert.Regexp(t, `^\d+ +\d+ +/bin/true `+marker+` second-arg$`, rec.body)
	assert.Equal(t, map[string]any{AttrScript: "execsnoop", AttrStream: "stdout"}, rec.attrs)
	hdr, ok := run.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "TIME(ms)") })
	require.True(t, ok, "the BEGIN header")
	assert.Regexp(t, `^TIME\(ms\) +PID +ARGS$`, hdr.body)
	c := run.r.Counters()["execsnoop"]
	assert.Zero(t, c.StartFailures)
	assert.Zero(t, c.ParseErrors)
}

func TestIntegrationSyscount(t *testing.T) {
	const n = 5000
	run := startReal(t, ScriptConfig{
		Path:         "/usr/sbin/syscount.bt",
		PullInterval: 500 * time.Millisecond,
		Maps: map[string]MapConfig{
			"@syscall": {Type: MapTypeSum, Attributes: []string{"syscall"}},
			"@process": {Type: MapTypeSum, Attributes: []string{"comm"}},
		},
	})
	// BEGIN runs once every probe is attached.
	eventually(t, waitLong, func() bool {
		_, ok := run.out.findRecord(func(l logRec) bool { return l.body == "Counting syscalls... Hit Ctrl-C to end." })
		return ok
	}, "syscount's BEGIN line")
	getppid(n)

	id := strconv.Itoa(unix.SYS_GETPPID)
	comm := filepath.Base(os.Args[0])
	if len(comm) > 15 {
		comm = comm[:15]
	}
	findValue := func(metric, attr, want string) int64 {
		var best int64
		for _, dp := range sumPoints(run.out.metricsNamed(metric)) {
			if v, ok := dp.Attributes().Get(attr); ok && v.Str() == want && dp.IntValue() > best {
				best = dp.IntValue()
			}
		}
		return best
	}
	eventually(t, waitLong, func() bool { return findValue("bpftrace.syscount.syscall", "syscall", id) >= n }, "getppid counted")
	eventually(t, waitLong, func() bool { return findValue("bpftrace.syscount.process", "comm", comm) >= n }, "this process counted")

	m := run.out.metricsNamed("bpftrace.syscount.syscall")[0]
	assert.True(t, m.Sum().IsMonotonic())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
	dp := m.Sum().DataPoints().At(0)
	assert.NotZero(t, dp.StartTimestamp())
	assert.Greater(t, dp.Timestamp(), dp.StartTimestamp())
	sc, _ := dp.Attributes().Get(AttrScript)
	assert.Equal(t, "syscount", sc.Str())

	// Shutdown: SIGINT, END prints the top 10, delivered before it returns.
	require.NoError(t, run.r.Shutdown(context.Background()))
	_, ok := run.out.findRecord(func(l logRec) bool { return l.body == "Top 10 syscalls IDs:" })
	assert.True(t, ok, "END block output")
	assert.Zero(t, run.r.Counters()["syscount"].ParseErrors)
}

func TestIntegrationRunqlat(t *testing.T) {
	requireBpftrace(t)
	spec := ScriptConfig{
		Name:         "runqlat",
		Path:         "/usr/sbin/runqlat.bt",
		PullInterval: 500 * time.Millisecond,
		Maps:         map[string]MapConfig{"@usecs": {Type: MapTypeHistogram, Unit: "us"}},
	}
	// The shipped runqlat.bt includes <linux/sched.h>: without kernel
	// headers (BTF only) it does not compile. That must be a clear start
	// failure; then the BTF-aware copy is used.
	run := startReal(t, spec)
	eventually(t, waitLong, func() bool {
		_, began := run.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "Tracing CPU scheduler") })
		return began || run.r.Counters()["runqlat"].StartFailures > 0
	}, "runqlat started or failed")
	if run.r.Counters()["runqlat"].StartFailures > 0 {
		failed := run.logs.FilterMessage("bpftrace script failed to start; retrying").All()
		require.NotEmpty(t, failed)
		msg := failed[0].ContextMap()["error"].(string)
		require.Contains(t, msg, "before attaching its probes")
		require.Contains(t, msg, "linux/sched.h", "only the missing-headers failure is expected")
		t.Logf("%s does not compile on this host (no kernel headers); using testdata/runqlat_btf.bt. Its error: %s", spec.Path, msg)
		require.NoError(t, run.r.Shutdown(context.Background()))
		abs, err := filepath.Abs("testdata/runqlat_btf.bt")
		require.NoError(t, err)
		spec.Path = abs
		run = startReal(t, spec)
	}

	// Wakeups and sleeps: run queue latencies on every CPU.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	var counts []uint64
	eventually(t, waitLong, func() bool {
		counts = counts[:0]
		for _, m := range run.out.metricsNamed("bpftrace.runqlat.usecs") {
			require.Equal(t, pmetric.MetricTypeHistogram, m.Type())
			counts = append(counts, m.Histogram().DataPoints().At(0).Count())
		}
		return len(counts) >= 2 && counts[len(counts)-1] > 0
	}, "two pulls of @usecs")
	for i := 1; i < len(counts); i++ {
		assert.GreaterOrEqual(t, counts[i], counts[i-1], "cumulative")
	}
	ms := run.out.metricsNamed("bpftrace.runqlat.usecs")
	m := ms[len(ms)-1]
	assert.Equal(t, "us", m.Unit())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality())
	dp := m.Histogram().DataPoints().At(0)
	bounds, buckets := dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()
	require.Len(t, buckets, len(bounds)+1)
	var total uint64
	for _, c := range buckets {
		total += c
	}
	assert.Equal(t, dp.Count(), total)
	assert.NotZero(t, buckets[0], "trimmed: the first bucket holds values")
	for i := 1; i < len(bounds); i++ {
		assert.Greater(t, bounds[i], bounds[i-1])
	}
	sc, _ := dp.Attributes().Get(AttrScript)
	assert.Equal(t, "runqlat", sc.Str())
}

func TestIntegrationOneLiner(t *testing.T) {
	const n = 1234
	run := startReal(t, ScriptConfig{
		Name:         "getppid",
		Program:      fmt.Sprintf("tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @c = count(); }", os.Getpid()),
		PullInterval: time.Second,
		Maps:         map[string]MapConfig{"@c": {Type: MapTypeSum}},
	})
	values := func() []int64 { return sumValues(run.out.metricsNamed("bpftrace.getppid.c")) }
	// The first pull: the probes are attached (an unkeyed count prints 0).
	eventually(t, waitLong, func() bool { return len(values()) > 0 }, "first pull")
	require.Equal(t, int64(0), values()[0], "nothing calls getppid in this process but the test")
	getppid(n)
	eventually(t, 10*time.Second, func() bool { v := values(); return v[len(v)-1] == n }, "exactly %d", n)
	before := len(values())
	eventually(t, 10*time.Second, func() bool { return len(values()) > before }, "one more pull")
	for _, v := range values() {
		assert.LessOrEqual(t, v, int64(n))
	}
	assert.Equal(t, int64(n), values()[len(values())-1])
}

func TestIntegrationBrokenScriptAndAnother(t *testing.T) {
	run := startReal(t,
		ScriptConfig{Name: "syntax", Program: `BEGIN { printf("never\n"); `},
		ScriptConfig{Name: "undefined", Program: `BEGIN { @a = count(); } interval:ms:100 { print(@nope); }`},
		ScriptConfig{Name: "ticker", Program: `interval:ms:200 { printf("tick %d\n", elapsed / 1000000); }`},
	)
	eventually(t, waitLong, func() bool {
		c := run.r.Counters()
		return c["syntax"].StartFailures >= 2 && c["undefined"].StartFailures >= 2
	}, "both broken scripts fail, and are retried")

	errorsOf := func(script string) []string {
		var out []string
		for _, e := range run.logs.FilterMessage("bpftrace script failed to start; retrying").FilterField(zap.String("script", script)).All() {
			out = append(out, e.ContextMap()["error"].(string))
		}
		return out
	}
	syntax := errorsOf("syntax")
	require.NotEmpty(t, syntax)
	assert.Contains(t, syntax[0], "bpftrace exited with status 1 before attaching its probes: syntax:1:")
	assert.Contains(t, syntax[0], "ERROR: syntax error")
	undefined := errorsOf("undefined")
	require.NotEmpty(t, undefined)
	assert.Contains(t, undefined[0], "ERROR: Undefined map: @nope")
	assert.NotContains(t, undefined[0], "RLIMIT_MEMLOCK")
	_, ok := run.out.findRecord(func(l logRec) bool {
		return l.attrs[AttrScript] == "undefined" && l.attrs[AttrStream] == "stderr" && strings.Contains(l.body, "Undefined map")
	})
	assert.True(t, ok, "bpftrace's error reaches the Output as a stderr record")

	// The good script runs on, unrestarted.
	ticks := func() int {
		n := 0
		for _, l := range run.out.records() {
			if l.attrs[AttrScript] == "ticker" && strings.HasPrefix(l.body, "tick ") {
				n++
			}
		}
		return n
	}
	seen := ticks()
	eventually(t, waitLong, func() bool { return ticks() >= seen+3 }, "ticks keep coming")
	assert.Equal(t, Counters{}, run.r.Counters()["ticker"])
}

func TestIntegrationMissingMapRejected(t *testing.T) {
	cfg := Config{Scripts: []ScriptConfig{{
		Path:         "/usr/sbin/syscount.bt",
		PullInterval: time.Second,
		Maps:         map[string]MapConfig{"@syscalls": {Type: MapTypeSum}},
	}}}
	if _, err := os.Stat("/usr/sbin/syscount.bt"); err != nil {
		t.Skip("no /usr/sbin/syscount.bt")
	}
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `scripts[0].maps: map @syscalls is not used by the script`)
}
