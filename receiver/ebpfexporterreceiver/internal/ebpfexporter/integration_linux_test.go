// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/loader"
)

const tcpHelperEnv = "EBPFX_TCP_HELPER"

// The fixtures and programs built for this machine's architecture.
var (
	fixturesDir = testutil.ArchDir("../../../../testdata/ebpf_exporter")
	programsDir = testutil.ArchDir("../../../../programs")
)

// TestMain doubles as the TCP workload of TestIntegrationPrograms, run in
// its own cgroup.
func TestMain(m *testing.M) {
	if spec := os.Getenv(tcpHelperEnv); spec != "" {
		if err := tcpHelper(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startExporter loads the named configs from dir and fails the test if any
// of them fails.
func startExporter(t *testing.T, dir string, names ...string) *Exporter {
	t.Helper()
	e, err := New(Config{ConfigDir: dir, Names: names}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	require.Empty(t, e.Failures())
	return e
}

// point is one data point, flattened for assertions.
type point struct {
	attrs  map[string]string
	value  int64
	hist   pmetric.HistogramDataPoint
	isHist bool
}

// points returns the data points of metric name in scope "ebpf_exporter/<config>".
func points(md pmetric.Metrics, config, name string) []point {
	var out []point
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			sm := sms.At(j)
			if sm.Scope().Name() != ScopePrefix+config {
				continue
			}
			ms := sm.Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != name {
					continue
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps := m.Sum().DataPoints()
					for l := 0; l < dps.Len(); l++ {
						out = append(out, point{attrs: attrMap(dps.At(l).Attributes().AsRaw()), value: dps.At(l).IntValue()})
					}
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for l := 0; l < dps.Len(); l++ {
						out = append(out, point{attrs: attrMap(dps.At(l).Attributes().AsRaw()), hist: dps.At(l), isHist: true})
					}
				}
			}
		}
	}
	return out
}

func attrMap(raw map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range raw {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// find returns the point whose attributes include want.
func find(pts []point, want map[string]string) (point, bool) {
	for _, p := range pts {
		ok := true
		for k, v := range want {
			if p.attrs[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return p, true
		}
	}
	return point{}, false
}

// onThread runs f on a fresh OS thread named comm and pinned to one CPU;
// the thread exits afterwards, so neither setting leaks. It returns the CPU.
func onThread(t *testing.T, comm string, f func()) int {
	t.Helper()
	cpu := -1
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		if err = unix.SchedGetaffinity(0, &set); err != nil {
			return
		}
		for c := 0; c < 1024; c++ {
			if set.IsSet(c) {
				cpu = c
				break
			}
		}
		var one unix.CPUSet
		one.Set(cpu)
		if err = unix.SchedSetaffinity(0, &one); err != nil {
			return
		}
		name, perr := unix.BytePtrFromString(comm)
		if perr != nil {
			err = perr
			return
		}
		if err = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
			return
		}
		f()
	}()
	<-done
	require.NoError(t, err)
	return cpu
}

func getpgid(v int) { _, _, _ = syscall.RawSyscall(syscall.SYS_GETPGID, uintptr(v), 0, 0) }
func getsid(v int)  { _, _, _ = syscall.RawSyscall(syscall.SYS_GETSID, uintptr(v), 0, 0) }

// ownCgroupPath is this process's cgroup v2 directory.
func ownCgroupPath(t *testing.T) string {
	t.Helper()
	mount := cgroup2Mount(t)
	b, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, rest)
		}
	}
	t.Skip("no cgroup v2 membership")
	return ""
}

func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" {
				return fields[4]
			}
		}
	}
	t.Skip("cgroup v2 is not mounted")
	return ""
}

func TestIntegrationCounters(t *testing.T) {
	testutil.RequireRoot(t)
	e := startExporter(t, fixturesDir, "ebpfx_counters")
	pid := strconv.Itoa(os.Getpid())
	const n = 37
	cpu := onThread(t, "ebpfx-worker", func() {
		for i := 0; i < n; i++ {
			syscall.Getppid()
		}
		for i := 0; i < 5; i++ {
			getpgid(0)
		}
		for i := 0; i < 3; i++ {
			getpgid(0x7ffffff0) // no such process: ESRCH
		}
		for i := 0; i < 2; i++ {
			getsid(0)
		}
	})
	md := e.Collect()

	sys := points(md, "ebpfx_counters", "ebpfx_syscalls_total")
	for _, c := range []struct {
		syscall, errno string
		want           int64
	}{{"getppid", "ok", n}, {"getpgid", "ok", 5}, {"getpgid", "ESRCH", 3}, {"getsid", "ok", 2}} {
		p, ok := find(sys, map[string]string{"pid": pid, "comm": "ebpfx-worker", "syscall": c.syscall, "errno": c.errno})
		require.True(t, ok, "%s %s: %v", c.syscall, c.errno, sys)
		assert.Equal(t, c.want, p.value, "%s %s", c.syscall, c.errno)
		assert.Len(t, p.attrs, 4)
	}

	plain := points(md, "ebpfx_counters", "ebpfx_getppid_calls_total")
	require.Len(t, plain, 1)
	assert.Empty(t, plain[0].attrs)
	assert.GreaterOrEqual(t, plain[0].value, int64(n))

	byComm := points(md, "ebpfx_counters", "ebpfx_getppid_by_comm_total")
	// The regexp ^ebpfx-(.+)$ lets only ebpfx-* threads through, labelled
	// with its group, as ebpf_exporter does.
	p, ok := find(byComm, map[string]string{"comm": "worker"})
	require.True(t, ok, "%v", byComm)
	assert.Equal(t, int64(n), p.value)
	for _, p := range byComm {
		assert.False(t, strings.HasPrefix(p.attrs["comm"], "ebpfx-"), "the label is the regexp's group: %v", p.attrs)
	}

	perCPU := points(md, "ebpfx_counters", "ebpfx_getppid_per_cpu_total")
	possible, err := ebpf.PossibleCPU()
	require.NoError(t, err)
	var mine []point
	for _, p := range perCPU {
		if p.attrs["pid"] == pid {
			mine = append(mine, p)
		}
	}
	require.Len(t, mine, possible, "one series per possible CPU")
	for _, p := range mine {
		want := int64(0)
		if p.attrs["cpu"] == strconv.Itoa(cpu) {
			want = n
		}
		assert.Equal(t, want, p.value, "cpu %s", p.attrs["cpu"])
	}

	cpuOnly := points(md, "ebpfx_counters", "ebpfx_getppid_cpu_only_total")
	require.Len(t, cpuOnly, possible)
	p, ok = find(cpuOnly, map[string]string{"cpu": strconv.Itoa(cpu)})
	require.True(t, ok)
	assert.GreaterOrEqual(t, p.value, int64(n))

	sum := points(md, "ebpfx_counters", "ebpfx_getppid_percpu_sum_total")
	require.Len(t, sum, 1)
	assert.Empty(t, sum[0].attrs)
	assert.GreaterOrEqual(t, sum[0].value, int64(n))

	byCgroup := points(md, "ebpfx_counters", "ebpfx_getppid_by_cgroup_total")
	p, ok = find(byCgroup, map[string]string{"cgroup": ownCgroupPath(t)})
	require.True(t, ok, "%v", byCgroup)
	assert.GreaterOrEqual(t, p.value, int64(n))

	kaddr := points(md, "ebpfx_counters", "ebpfx_kaddr_total")
	require.Len(t, kaddr, 1)
	assert.Equal(t, map[string]string{"symbol": "do_nanosleep", "kind": "getppid"}, kaddr[0].attrs)
	assert.GreaterOrEqual(t, kaddr[0].value, int64(n))

	assert.Equal(t, map[string]uint64{"ebpfx_counters": 0}, e.Stats().DecoderErrors)
}

func TestIntegrationHistograms(t *testing.T) {
	testutil.RequireRoot(t)
	e := startExporter(t, fixturesDir, "ebpfx_histograms")
	pid := strconv.Itoa(os.Getpid())
	values := []int{0, 1, 2, 3, 5, 1000, 1 << 21}
	var total float64
	for _, v := range values {
		getpgid(v)
		getsid(v)
		total += float64(v)
	}
	md := e.Collect()

	hist := func(name string) pmetric.HistogramDataPoint {
		p, ok := find(points(md, "ebpfx_histograms", name), map[string]string{"pid": pid})
		require.True(t, ok, name)
		require.True(t, p.isHist)
		assert.Equal(t, map[string]string{"pid": pid}, p.attrs, "the bucket label is not exported")
		return p.hist
	}
	counts := func(n int, idx map[int]uint64) []uint64 {
		out := make([]uint64, n)
		for i, c := range idx {
			out[i] = c
		}
		return out
	}

	// exp2: bucket floor(log2 v) (0 for 0), capped at 20; le = 2^i.
	h := hist("ebpfx_getpgid_arg_exp2")
	assert.Equal(t, counts(22, map[int]uint64{0: 2, 1: 2, 2: 1, 9: 1, 20: 1}), h.BucketCounts().AsRaw())
	assert.Equal(t, 1.0, h.ExplicitBounds().At(0))
	assert.Equal(t, 1048576.0, h.ExplicitBounds().At(20))
	assert.Equal(t, uint64(len(values)), h.Count())
	assert.Equal(t, total, h.Sum())

	// exp2zero: bucket 0 for 0, floor(log2 v)+1 otherwise; le(0)=0, le(i)=2^(i-1).
	h = hist("ebpfx_getpgid_arg_exp2zero")
	assert.Equal(t, counts(22, map[int]uint64{0: 1, 1: 1, 2: 2, 3: 1, 10: 1, 20: 1}), h.BucketCounts().AsRaw())
	assert.Equal(t, []float64{0, 1, 2, 4}, h.ExplicitBounds().AsRaw()[:4])
	assert.Equal(t, total, h.Sum())

	// linear: bucket v capped at 10, le = i * 0.5; sum * 0.5.
	h = hist("ebpfx_getsid_arg_linear")
	assert.Equal(t, counts(12, map[int]uint64{0: 1, 1: 1, 2: 1, 3: 1, 5: 1, 10: 2}), h.BucketCounts().AsRaw())
	assert.Equal(t, []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5}, h.ExplicitBounds().AsRaw())
	assert.Equal(t, total*0.5, h.Sum())

	// fixed: bucket_keys [1, 10, 100, 1000].
	h = hist("ebpfx_getsid_arg_fixed")
	assert.Equal(t, []uint64{2, 3, 0, 2, 0}, h.BucketCounts().AsRaw())
	assert.Equal(t, []float64{1, 10, 100, 1000}, h.ExplicitBounds().AsRaw())
	assert.Equal(t, total, h.Sum())
}

func TestIntegrationPerfEvents(t *testing.T) {
	testutil.RequireRoot(t)
	e := startExporter(t, fixturesDir, "ebpfx_perf")
	pid := strconv.Itoa(os.Getpid())
	const n = 23
	onThread(t, "ebpfx-perf", func() {
		for i := 0; i < n; i++ {
			syscall.Getppid()
		}
		// Keep a CPU busy a little for the 99 Hz cpu-clock samples.
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		}
	})
	// Perf samples reach the reader asynchronously.
	var got int64
	require.Eventually(t, func() bool {
		p, ok := find(points(e.Collect(), "ebpfx_perf", "ebpfx_getppid_events_total"), map[string]string{"pid": pid, "comm": "ebpfx-perf"})
		got = p.value
		return ok && p.value >= n
	}, 5*time.Second, 50*time.Millisecond)
	assert.Equal(t, int64(n), got)

	var samples int64
	for _, p := range points(e.Collect(), "ebpfx_perf", "ebpfx_cpu_clock_samples_total") {
		samples += p.value
	}
	assert.Positive(t, samples, "perf_event/ program attached on every CPU")
	assert.Zero(t, e.Stats().PerfEventsLost)
}

func TestIntegrationAttachKinds(t *testing.T) {
	testutil.RequireRoot(t)
	names := []string{"ebpfx_attach", "ebpfx_xdp", "ebpfx_uprobe"}
	e := startExporter(t, fixturesDir, names...)
	pid := strconv.Itoa(os.Getpid())
	const n = 19
	onThread(t, "ebpfx-attach", func() {
		for i := 0; i < n; i++ {
			syscall.Getppid()
		}
	})

	// XDP on lo: UDP packets to a local port.
	const packets = 11
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer conn.Close()
	out, err := net.Dial("udp", conn.LocalAddr().String())
	require.NoError(t, err)
	for i := 0; i < packets; i++ {
		_, err := out.Write([]byte("ebpfx"))
		require.NoError(t, err)
	}
	out.Close()

	// uprobe on libc getppid: a process that calls it `calls` more times
	// than one that does not (the interpreter's own startup calls cancel).
	const calls = 25
	var base, child string
	if py, err := exec.LookPath("python3"); err == nil {
		run := func(n int) string {
			cmd := exec.Command(py, "-c", fmt.Sprintf("import os\nfor _ in range(%d): os.getppid()", n))
			require.NoError(t, cmd.Run())
			return strconv.Itoa(cmd.Process.Pid)
		}
		base, child = run(0), run(calls)
	}

	md := e.Collect()
	for _, name := range []string{"ebpfx_raw_tp_getppid_total", "ebpfx_tp_btf_getppid_total"} {
		p, ok := find(points(md, "ebpfx_attach", name), map[string]string{"pid": pid})
		require.True(t, ok, name)
		assert.Equal(t, int64(n), p.value, name)
	}
	p, ok := find(points(md, "ebpfx_xdp", "ebpfx_xdp_packets_total"), map[string]string{"device": "lo", "proto": "udp"})
	require.True(t, ok)
	assert.GreaterOrEqual(t, p.value, int64(packets))

	if child == "" {
		t.Log("python3 not found: uprobe counts not checked")
		return
	}
	up := points(md, "ebpfx_uprobe", "ebpfx_libc_getppid_calls_total")
	b, _ := find(up, map[string]string{"pid": base}) // may be absent: zero calls
	p, ok = find(up, map[string]string{"pid": child})
	require.True(t, ok, "uprobe on libc.so.6:getppid")
	assert.Equal(t, int64(calls), p.value-b.value)
}

// TestIntegrationFailuresIsolated loads good and bad configs together:
// each bad one fails with a clear error of its own, the good one runs.
func TestIntegrationFailuresIsolated(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	for _, name := range []string{"ebpfx_counters", "ebpfx_kprobe", "ebpfx_fentry", "ebpfx_usdt"} {
		for _, ext := range []string{".yaml", ".bpf.o"} {
			copyFile(t, filepath.Join(fixturesDir, name+ext), filepath.Join(dir, name+ext))
		}
	}
	// A config whose labels do not cut the map's key (28 bytes).
	copyFile(t, filepath.Join(fixturesDir, "ebpfx_counters.bpf.o"), filepath.Join(dir, "badkey.bpf.o"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "badkey.yaml"), []byte(`
metrics:
  counters:
    - name: ebpfx_syscalls_total
      help: labels adding up to 24 bytes
      labels:
        - {name: pid, size: 4, decoders: [{name: uint}]}
        - {name: nr, size: 4, decoders: [{name: uint}]}
        - {name: comm, size: 16, decoders: [{name: string}]}
`), 0o644))
	// A config naming a map the object does not have.
	copyFile(t, filepath.Join(fixturesDir, "ebpfx_counters.bpf.o"), filepath.Join(dir, "nomap.bpf.o"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nomap.yaml"), []byte("metrics:\n  counters:\n    - {name: not_there_total, help: x}\n"), 0o644))

	names := []string{"ebpfx_kprobe", "ebpfx_counters", "ebpfx_fentry", "ebpfx_usdt", "badkey", "nomap", "missing"}
	// Strict: a program that cannot attach fails its config (by default
	// it is reported and the rest of the config runs: attach_partial_linux_test.go).
	e, err := New(Config{ConfigDir: dir, Names: names, Strict: true}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { assert.NoError(t, e.Shutdown(context.Background())) })

	failures := e.Failures()
	assert.NotContains(t, failures, "ebpfx_counters")

	// ebpfx_kprobe and ebpfx_fentry load where the kernel allows them, and
	// fail with their clear error where it does not (see TestIntegrationKprobeFentry).
	loaded := 1
	for name, probe := range map[string]func(*testing.T) error{"ebpfx_kprobe": probeKprobe, "ebpfx_fentry": probeFentry} {
		if probe(t) == nil {
			assert.NotContains(t, failures, name)
			loaded++
		} else {
			requireRefused(t, name, failures[name])
		}
	}
	require.Contains(t, failures, "ebpfx_usdt")
	assert.ErrorIs(t, failures["ebpfx_usdt"], loader.ErrNotSupported)
	assert.Contains(t, failures["ebpfx_usdt"].Error(), "USDT probes are not supported")

	var ce *spec.ConfigError
	require.ErrorAs(t, failures["badkey"], &ce)
	assert.Equal(t, filepath.Join(dir, "badkey.yaml"), ce.File)
	assert.Equal(t, "metrics.counters[0].labels", ce.Field)
	assert.Contains(t, ce.Error(), `map "ebpfx_syscalls_total": label sizes and paddings add up to 24 bytes, but the map has 28-byte keys (BTF key type struct syscall_key)`)

	require.ErrorAs(t, failures["nomap"], &ce)
	assert.Equal(t, "metrics.counters[0].name", ce.Field)
	assert.Contains(t, ce.Error(), `failed to retrieve map "not_there_total"`)

	assert.ErrorIs(t, failures["missing"], os.ErrNotExist)

	// The good config runs.
	syscall.Getppid()
	plain := points(e.Collect(), "ebpfx_counters", "ebpfx_getppid_calls_total")
	require.Len(t, plain, 1)
	assert.GreaterOrEqual(t, plain[0].value, int64(1))
	st := e.Stats()
	assert.Equal(t, loaded, st.ConfigsLoaded)
	assert.Equal(t, len(failures), st.ConfigsFailed)
}

// requireRefused checks the failure of ebpfx_kprobe or ebpfx_fentry on a
// kernel that refuses kprobes or BPF trampolines: the clear error, no other.
func requireRefused(t *testing.T, name string, err error) {
	t.Helper()
	require.Error(t, err, "%s: the probe says this kernel refuses it, but it loaded", name)
	switch name {
	case "ebpfx_kprobe":
		assert.Contains(t, err.Error(), `program "ebpfx_kprobe": failed to attach kprobe (SEC "kprobe/`+fixtureSymbol+`"): this kernel lacks kprobes`)
	case "ebpfx_fentry":
		assert.ErrorIs(t, err, os.ErrPermission)
		assert.Contains(t, err.Error(), `program "ebpfx_fentry" (SEC "fentry/`+fixtureSymbol+`"): the kernel refused to load it`)
		assert.Contains(t, err.Error(), "BPF trampolines")
	}
}

// TestIntegrationKprobeFentry probes the kernel for kprobes and BPF
// trampolines. Where one works, its fixture attaches and counts exactly the
// getpriority calls of a thread the test names; where the kernel refuses it,
// the probe's error is the expected one (no kprobe PMU nor kprobe_events;
// EPERM for the trampoline) and so is the fixture's failure.
func TestIntegrationKprobeFentry(t *testing.T) {
	testutil.RequireRoot(t)
	const n = 41
	for _, c := range []struct {
		name  string
		probe func(*testing.T) error
		// refused tells whether the probe's error is the expected refusal.
		refused func(error) bool
	}{
		{"ebpfx_kprobe", probeKprobe, func(err error) bool {
			return !kernelfeatures.Kprobes.Present() && (errors.Is(err, link.ErrNotSupported) || errors.Is(err, os.ErrNotExist))
		}},
		{"ebpfx_fentry", probeFentry, func(err error) bool { return errors.Is(err, os.ErrPermission) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			probeErr := c.probe(t)
			e, err := New(Config{ConfigDir: fixturesDir, Names: []string{c.name}, Strict: true}, zaptest.NewLogger(t))
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
			if probeErr != nil {
				require.True(t, c.refused(probeErr), "the probe failed in an unexpected way: %v", probeErr)
				t.Logf("this kernel refuses %s: %v", c.name, probeErr)
				requireRefused(t, c.name, e.Failures()[c.name])
				return
			}
			require.Empty(t, e.Failures())
			comm := strings.ReplaceAll(c.name, "_", "-")
			onThread(t, comm, func() {
				for i := 0; i < n; i++ {
					getpriority()
				}
			})
			pts := points(e.Collect(), c.name, "ebpfx_getpriority_calls_total")
			p, ok := find(pts, map[string]string{"pid": strconv.Itoa(os.Getpid()), "comm": comm})
			require.True(t, ok, "%v", pts)
			assert.Equal(t, int64(n), p.value)
			assert.Len(t, p.attrs, 2)
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// TestIntegrationPrograms runs the ready-to-use programs: TCP bytes by
// cgroup (a helper process in a cgroup of its own sends and receives a
// known number of bytes) and the run queue latency histogram. On a kernel
// without the sock:sock_send_length/sock_recv_length tracepoints (they came
// in Linux 6.3; found by probing) cgroup_tcp_bytes fails with a clear error
// and runqlat still runs.
func TestIntegrationPrograms(t *testing.T) {
	testutil.RequireRoot(t)
	if !probeTracepoint(t, "sock", "sock_send_length", "sock_msg_length") {
		e, err := New(Config{ConfigDir: programsDir, Names: []string{"cgroup_tcp_bytes", "runqlat"}}, zaptest.NewLogger(t))
		require.NoError(t, err)
		require.NoError(t, e.Start(context.Background()))
		t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
		failures := e.Failures()
		require.Len(t, failures, 1, "%v", failures)
		err = failures["cgroup_tcp_bytes"]
		require.ErrorIs(t, err, os.ErrNotExist)
		assert.Regexp(t, `program "cgroup_tcp_(sent|received)" \(SEC "tracepoint/sock/sock_(send|recv)_length"\): this kernel has no tracepoint sock:sock_(send|recv)_length \(not in /sys/kernel/tracing/events\)`, err.Error())
		t.Logf("no sock:sock_send_length tracepoint here: %v", err)
		checkRunqlat(t, e)
		return
	}
	e := startExporter(t, programsDir, "cgroup_tcp_bytes", "runqlat")

	const sent, received = 123457, 65432
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	var serverErr error
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			serverErr = err
			return
		}
		defer c.Close()
		if _, err := io.CopyN(io.Discard, c, sent); err != nil {
			serverErr = err
			return
		}
		_, serverErr = c.Write(make([]byte, received))
	}()

	// The helper runs in a fresh cgroup so its bytes are the only ones there.
	helper := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", tcpHelperEnv, ln.Addr(), sent, received))
		cmd.Stderr = os.Stderr
		return cmd
	}
	cgroup := filepath.Join(cgroup2Mount(t), fmt.Sprintf("ebpfx-test-%d", os.Getpid()))
	cmd := helper()
	started := false
	if err := os.Mkdir(cgroup, 0o755); err == nil {
		defer os.Remove(cgroup)
		fd, err := unix.Open(cgroup, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if err := cmd.Start(); err == nil {
			started = true
		} else {
			t.Logf("starting the helper in %s: %v", cgroup, err)
		}
	} else {
		t.Logf("creating %s: %v", cgroup, err)
	}
	if !started {
		t.Log("the helper runs in this process's cgroup: byte counts are lower bounds")
		cgroup = ownCgroupPath(t)
		cmd = helper()
		require.NoError(t, cmd.Start())
	}
	require.NoError(t, cmd.Wait())
	wg.Wait()
	require.NoError(t, serverErr)

	md := e.Collect()
	tcp := points(md, "cgroup_tcp_bytes", "cgroup_tcp_bytes_total")
	s, ok := find(tcp, map[string]string{"cgroup": cgroup, "direction": "sent"})
	require.True(t, ok, "%v", tcp)
	r, ok := find(tcp, map[string]string{"cgroup": cgroup, "direction": "received"})
	require.True(t, ok, "%v", tcp)
	if strings.Contains(filepath.Base(cgroup), "ebpfx-test-") {
		assert.Equal(t, int64(sent), s.value)
		assert.Equal(t, int64(received), r.value)
	} else {
		assert.GreaterOrEqual(t, s.value, int64(sent))
		assert.GreaterOrEqual(t, r.value, int64(received))
	}

	checkRunqlat(t, e)
}

// checkRunqlat checks the run queue latency histogram of programs/runqlat.
func checkRunqlat(t *testing.T, e *Exporter) {
	t.Helper()
	for i := 0; i < 20; i++ {
		time.Sleep(time.Millisecond) // wake-ups to measure
	}
	rq := points(e.Collect(), "runqlat", "run_queue_latency_seconds")
	require.Len(t, rq, 1)
	h := rq[0].hist
	assert.Empty(t, rq[0].attrs)
	assert.Equal(t, 27, h.ExplicitBounds().Len())
	assert.InDelta(t, 0.000001, h.ExplicitBounds().At(0), 1e-15)
	assert.Positive(t, h.Count())
	assert.Positive(t, h.Sum())
}

// tcpHelper connects to addr, sends `sent` bytes, then reads `received`.
func tcpHelper(spec string) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("bad helper spec %q", spec)
	}
	sent, _ := strconv.Atoi(parts[1])
	received, _ := strconv.Atoi(parts[2])
	c, err := net.Dial("tcp", parts[0])
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, sent)); err != nil {
		return err
	}
	_, err = io.CopyN(io.Discard, c, int64(received))
	return err
}

// TestIntegrationShutdown checks that collections read the maps while the
// configs run and that Shutdown leaves no program or map behind.
func TestIntegrationShutdown(t *testing.T) {
	testutil.RequireRoot(t)
	e, err := New(Config{ConfigDir: fixturesDir, Names: []string{"ebpfx_counters", "ebpfx_perf", "ebpfx_attach"}}, zaptest.NewLogger(t))
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	require.Error(t, e.Start(context.Background()), "Start twice")

	ours := ourObjects(t)
	require.NotEmpty(t, ours.progs)
	require.NotEmpty(t, ours.maps)

	syscall.Getppid()
	assert.NotEmpty(t, points(e.Collect(), "ebpfx_counters", "ebpfx_getppid_calls_total"))

	require.NoError(t, e.Shutdown(context.Background()))
	require.NoError(t, e.Shutdown(context.Background()), "Shutdown twice")
	assert.Empty(t, points(e.Collect(), "ebpfx_counters", "ebpfx_getppid_calls_total"), "nothing read after Shutdown")

	// Every program and map of the configs is gone (ids are freed
	// asynchronously, so wait a little).
	require.Eventually(t, func() bool {
		left := ourObjects(t)
		return len(left.progs) == 0 && len(left.maps) == 0
	}, 5*time.Second, 50*time.Millisecond, "programs or maps left after Shutdown: %+v", ourObjects(t))
}

type objects struct{ progs, maps []string }

// ourObjects lists the loaded programs and maps whose names are the
// fixtures' (kernel names are cut to 15 characters).
func ourObjects(t *testing.T) objects {
	t.Helper()
	var o objects
	var pid ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(pid)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		require.NoError(t, err)
		pid = next
		p, err := ebpf.NewProgramFromID(pid)
		if err != nil {
			continue // gone meanwhile
		}
		info, err := p.Info()
		p.Close()
		if err == nil && strings.HasPrefix(info.Name, "ebpfx_") {
			o.progs = append(o.progs, info.Name)
		}
	}
	var mid ebpf.MapID
	for {
		next, err := ebpf.MapGetNextID(mid)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		require.NoError(t, err)
		mid = next
		m, err := ebpf.NewMapFromID(mid)
		if err != nil {
			continue
		}
		info, err := m.Info()
		m.Close()
		if err == nil && strings.HasPrefix(info.Name, "ebpfx_") {
			o.maps = append(o.maps, info.Name)
		}
	}
	slices.Sort(o.progs)
	slices.Sort(o.maps)
	return o
}

// TestIntegrationBenchFixture checks the side-by-side benchmark's config
// (ebpfx_bench, make bench-ebpf-exporter): each getpgid(0x7eb0beef) adds
// one round to 16384 counter series and 1024 exp2 histograms, all of which
// one collection returns with the values the fixture's formulas give. The
// maps hold more elements than one batch read returns.
func TestIntegrationBenchFixture(t *testing.T) {
	testutil.RequireRoot(t)
	e := startExporter(t, fixturesDir, "ebpfx_bench")
	const rounds = 2
	for range rounds {
		getpgid(0x7eb0beef)
	}
	md := e.Collect()

	counters := points(md, "ebpfx_bench", "ebpfx_bench_syscalls_total")
	require.Len(t, counters, 16384)
	got := map[string]int64{}
	for _, p := range counters {
		got[p.attrs["pid"]+"/"+p.attrs["syscall"]] = p.value
	}
	nrs := []string{"read", "write", "close", "clock_nanosleep_time64"} // ebpf_exporter's name for 230
	for i := range 16384 {
		k := strconv.Itoa(100000+i/4) + "/" + nrs[i%4]
		require.Equal(t, int64(rounds*(1+i%7)), got[k], k)
	}

	hists := points(md, "ebpfx_bench", "ebpfx_bench_latency_seconds")
	require.Len(t, hists, 1024)
	for _, p := range hists {
		pid, err := strconv.Atoi(p.attrs["pid"])
		require.NoError(t, err)
		h := pid - 100000
		want := make([]uint64, 17) // 16 buckets and the overflow bucket
		var count uint64
		for b := range 16 {
			want[b] = uint64(rounds * (1 + (h+b)%5))
			count += want[b]
		}
		require.Equal(t, want, p.hist.BucketCounts().AsRaw(), "pid %d", pid)
		require.Equal(t, count, p.hist.Count())
		require.InDelta(t, float64(rounds*(1000+h))*1e-6, p.hist.Sum(), 1e-12)
		require.Equal(t, 1e-6, p.hist.ExplicitBounds().At(0))
		require.Equal(t, 32768e-6, p.hist.ExplicitBounds().At(15))
	}

	// Batch reads (BPF_MAP_LOOKUP_BATCH, in chunks of batchChunk) give
	// what reading one element at a time gives.
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, mm := range e.configs[0].metrics {
		batched, err := readBatches(mm)
		require.NoError(t, err, name)
		iterated, err := iterateMap(mm)
		require.NoError(t, err, name)
		require.Greater(t, len(iterated), batchChunk, name)
		asMap := func(es []mapEntry) map[string][]uint64 {
			out := map[string][]uint64{}
			for _, e := range es {
				out[string(e.key)] = e.values
			}
			return out
		}
		require.Equal(t, asMap(iterated), asMap(batched), name)
		require.Len(t, batched, len(iterated), name)
	}
}

// BenchmarkCollectBenchFixture is one collection of the side-by-side
// benchmark's config (ebpfx_bench: 16384 counter series, 1024 exp2
// histograms of 17 map entries each) from the kernel's maps to pdata: what
// the receiver does once per collection_interval (root).
func BenchmarkCollectBenchFixture(b *testing.B) {
	testutil.RequireRoot(b)
	e, err := New(Config{ConfigDir: fixturesDir, Names: []string{"ebpfx_bench"}}, zap.NewNop())
	require.NoError(b, err)
	require.NoError(b, e.Start(context.Background()))
	b.Cleanup(func() { require.NoError(b, e.Shutdown(context.Background())) })
	require.Empty(b, e.Failures())
	getpgid(0x7eb0beef)
	const series = 16384 + 1024
	require.Equal(b, series+2, e.Collect().DataPointCount()) // and enabled_configs, decoder_errors_total
	b.ReportAllocs()
	for b.Loop() {
		e.Collect()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/series, "ns/series")
}
