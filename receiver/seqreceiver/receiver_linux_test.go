// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadatatest"
)

// rec is the part of a log record the tests look at.
type rec struct {
	name  string
	seq   int64
	attrs map[string]any
	ts    time.Time
}

func (r rec) int(k string) int64 {
	v, _ := r.attrs[k].(int64)
	return v
}

// flatten lists the log records of logs, batch by batch. A batch's records
// are merged back into ticket order across its resources:
// the records of processes in containers are moved to resources of their
// own (splitLogs), each in ticket order, and a host process's record and a
// container's interleave in seq.number (README, "Order and loss"). Reading
// the resources one after the other instead showed a ticket of a container
// that some other job on the host ran during a storm as missing from the
// host's run ("ticket 39809 follows 39807") and then out of order.
func flatten(logs []plog.Logs) []rec {
	var out []rec
	for _, l := range logs {
		batch := len(out)
		for i := 0; i < l.ResourceLogs().Len(); i++ {
			sls := l.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					r := rec{name: lr.EventName(), attrs: lr.Attributes().AsRaw(), ts: lr.Timestamp().AsTime()}
					r.seq = r.int("seq.number")
					out = append(out, r)
				}
			}
		}
		slices.SortStableFunc(out[batch:], func(a, b rec) int { return cmp.Compare(a.seq, b.seq) })
	}
	return out
}

// checkOrder asserts that seq.number strictly increases and that every jump
// is explained by a seq.lost record in its place; it returns the tickets
// delivered and lost that the stream itself accounts for.
func checkOrder(t *testing.T, recs []rec) (delivered, lost int64) {
	t.Helper()
	next := int64(-1)
	for _, r := range recs {
		if next >= 0 && r.seq != next {
			// A record never jumps without a seq.lost record before it; threads filtered
			// in userspace never happen by default (they are filtered in the kernel).
			t.Fatalf("ticket %d follows %d without a seq.lost record explaining the jump", r.seq, next-1)
		}
		if r.name == "seq.lost" {
			n := r.int("seq.lost.count")
			lost += n
			next = r.seq + n
			continue
		}
		delivered++
		next = r.seq + max(1, r.int("seq.tickets"))
	}
	return delivered, lost
}

func startReceiver(t *testing.T, cfg *Config, next consumer.Logs) *seqReceiver {
	t.Helper()
	r := createReceiver(t, cfg, next)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	return r
}

// ringBufNoFetch stands, in these tests, for the ring buffer with the
// producers built without BPF atomic fetch (sequencer.Options.NoFetch),
// whose records the reader numbers: what the receiver runs by itself on a
// kernel before Linux 5.12, forced here on any kernel.
const ringBufNoFetch sequencer.Transport = "ringbuf-nofetch"

// createReceiver creates the receiver for cfg (ringBufNoFetch included), not started.
func createReceiver(t *testing.T, cfg *Config, next consumer.Logs) *seqReceiver {
	t.Helper()
	noFetch := cfg.Transport == ringBufNoFetch
	if noFetch {
		c := *cfg
		c.Transport = sequencer.TransportRingBuf
		cfg = &c
	}
	require.NoError(t, confmap.Validate(cfg))
	set := receivertest.NewNopSettings(metadata.Type)
	rcv, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	r := rcv.(*sharedcomponent.Component[*seqReceiver]).C
	if noFetch {
		r.open = func(o sequencer.Options) (kernel, error) {
			o.NoFetch = true
			return openSequencer(o)
		}
	}
	return r
}

// atomics: whether this kernel has BPF atomic fetch (Linux 5.12+), which the
// sequencer needs; without it auto picks the ring buffer, numbered by the reader.
var atomics = kernelfeatures.Atomics.Present()

// skipWithoutAtomics skips the sequencer and perf buffer transports on a
// kernel without BPF atomic fetch: the receiver refuses them there (and
// TestTransportsWithoutAtomics checks that it says why).
func skipWithoutAtomics(t *testing.T, tr sequencer.Transport) {
	if !atomics && (tr == sequencer.TransportSequencer || tr == sequencer.TransportPerfBuf) {
		t.Skip(kernelfeatures.Atomics.Missing("transport "+string(tr), kernelfeatures.Atomics.Probe()))
	}
}

// On a kernel without BPF atomic fetch, auto and ringbuf run the ring buffer
// numbered by the reader, saying so, and the two transports that need a
// ticket's number are refused with the reason and the fix. Elsewhere the
// same refusal is what NoFetch gives them.
func TestTransportsWithoutAtomics(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tr := range []sequencer.Transport{sequencer.TransportSequencer, sequencer.TransportPerfBuf} {
		_, err := sequencer.Open(sequencer.Options{Transport: tr, RingSlots: 1024, Events: []event.Type{event.Fork}, NoFetch: true})
		require.Error(t, err, tr)
		assert.Contains(t, err.Error(), "set transport: ringbuf or auto", tr)
	}
	if atomics {
		return
	}
	s, err := sequencer.Open(sequencer.Options{RingSlots: 1024, Events: []event.Type{event.Fork}})
	require.NoError(t, err)
	defer s.Close()
	why, warn := s.Why()
	assert.True(t, warn)
	assert.Contains(t, why, "Linux 5.12")
	assert.True(t, s.NoFetch())
	assert.Equal(t, sequencer.TransportRingBuf, s.Transport())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transports are the transports every transport-specific test runs with.
var transports = []sequencer.Transport{sequencer.TransportAuto, sequencer.TransportSequencer, sequencer.TransportRingBuf, sequencer.TransportPerfBuf, ringBufNoFetch}

func TestShellTreeForkExecExit(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) { testShellTree(t, tr) })
	}
}

func testShellTree(t *testing.T, transport sequencer.Transport) {
	skipWithoutAtomics(t, transport)
	sink := &consumertest.LogsSink{}
	cfg := createDefaultConfig()
	cfg.Transport = transport
	r := startReceiver(t, cfg, sink)
	switch {
	case transport == ringBufNoFetch:
		require.Equal(t, sequencer.TransportRingBuf, r.seq.Transport())
		require.True(t, r.seq.(*sequencer.Sequencer).NoFetch())
	case transport != sequencer.TransportAuto:
		require.Equal(t, transport, r.seq.Transport())
	case atomics:
		require.Equal(t, sequencer.TransportSequencer, r.seq.Transport(), "auto picks the sequencer (PREEMPT_RT included)")
	default:
		require.Equal(t, sequencer.TransportRingBuf, r.seq.Transport(), "auto picks the ring buffer without BPF atomic fetch")
		require.True(t, r.seq.(*sequencer.Sequencer).NoFetch(), "numbered by the reader")
	}
	if transport == sequencer.TransportPerfBuf {
		why, warn := r.seq.Why()
		assert.Equal(t, kernelfeatures.Realtime(), warn, "perf buffers warn on PREEMPT_RT, and only there: %s", why)
	}
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	marker := fmt.Sprintf("seq-marker-%d", rand.Uint32())
	// The outer shell forks a child that execs /bin/sh with marker arguments and exits 7.
	cmd := exec.Command("/bin/sh", "-c", `/bin/sh -c 'exit 7' `+marker+` second-arg; echo done >/dev/null`)
	require.NoError(t, cmd.Run())
	outer := int64(cmd.Process.Pid)

	var fork, execR, exit rec
	var outerFork, outerExit rec
	waitFor(t, "the child's fork, exec and exit, and the outer shell's exit", func() bool {
		var child int64
		for _, r := range flatten(sink.AllLogs()) {
			switch {
			case r.name == "process.fork" && r.int("process.parent_pid") == outer:
				fork, child = r, r.int("process.pid")
			case r.name == "process.exec" && child != 0 && r.int("process.pid") == child:
				execR = r
			case r.name == "process.exit" && child != 0 && r.int("process.pid") == child:
				exit = r
			case r.name == "process.fork" && r.int("process.pid") == outer:
				outerFork = r
			case r.name == "process.exit" && r.int("process.pid") == outer:
				outerExit = r
			}
		}
		return exit.name != "" && outerExit.name != ""
	})
	child := fork.int("process.pid")
	assert.NotZero(t, child)
	assert.NotEqual(t, outer, child)

	assert.Equal(t, child, execR.int("process.pid"))
	assert.Equal(t, outer, execR.int("process.parent_pid"))
	assert.Equal(t, "/bin/sh", execR.attrs["process.executable.path"])
	assert.Equal(t, []any{"/bin/sh", "-c", "exit 7", marker, "second-arg"}, execR.attrs["process.command_args"])

	assert.Equal(t, child, exit.int("process.pid"))
	assert.Equal(t, int64(7), exit.int("process.exit.code"))
	assert.Equal(t, child, exit.int("thread.id"))

	assert.Less(t, fork.seq, execR.seq, "fork before exec")
	assert.Less(t, execR.seq, exit.seq, "exec before exit")
	assert.False(t, fork.ts.After(execR.ts), "fork timestamp not after exec's")
	assert.False(t, execR.ts.After(exit.ts), "exec timestamp not after exit's")
	assert.WithinDuration(t, time.Now(), exit.ts, 10*time.Second, "boot clock converted to wall clock")

	// The outer shell itself: forked by this test, exec'd /bin/sh, exited 0.
	assert.Equal(t, int64(os.Getpid()), outerFork.int("process.parent_pid"), "fork of the outer shell by the test process")
	assert.Equal(t, int64(0), outerExit.int("process.exit.code"), "exit 0 of the outer shell")
	assert.Less(t, outerFork.seq, fork.seq)
	assert.Less(t, exit.seq, outerExit.seq, "the child exits before the shell that waits for it")
}

func TestSignalExitAndThreads(t *testing.T) {
	testutil.RequireRoot(t)
	sink := &consumertest.LogsSink{}
	cfg := createDefaultConfig()
	cfg.ThreadEvents = true
	r := startReceiver(t, cfg, sink)
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	cmd := exec.Command("/bin/sleep", "30")
	require.NoError(t, cmd.Start())
	pid := int64(cmd.Process.Pid)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	var exit rec
	var threadStarts int
	waitFor(t, "the killed process's exit", func() bool {
		threadStarts = 0
		for _, r := range flatten(sink.AllLogs()) {
			if r.name == "process.exit" && r.int("process.pid") == pid {
				exit = r
			}
			if r.name == "thread.start" && r.int("process.pid") == int64(os.Getpid()) {
				threadStarts++
			}
		}
		return exit.name != ""
	})
	assert.Equal(t, "SIGKILL", exit.attrs["seq.exit.signal"])
	// A Go test binary runs several threads: their creation would show as thread.start
	// only if it happened after Start; the receiver's own goroutines may create some.
	t.Logf("thread.start records for the test process: %d", threadStarts)
}

// A fork storm with the default ring: the kernel's own counters must equal
// what was delivered plus what was reported lost, per event type and in total.
func TestForkStormAccounting(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is needed (make deps installs it): %v", err)
	}
	forks := testutil.ForkOps(20000) // fewer in test/kernels' QEMU guests
	sink := &consumertest.LogsSink{}
	r := startReceiver(t, createDefaultConfig(), sink)
	storm := exec.Command("stress-ng", "--fork", "4", "--fork-ops", strconv.Itoa(forks), "--timeout", "60s", "--quiet")
	storm.Dir = t.TempDir() // stress-ng's temp-path must be writable (the guests' root is not)
	out, err := storm.CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, r.Shutdown(context.Background()))

	f := r.final
	t.Logf("issued %d tickets, delivered %d (%d records), lost %d; kernel events %v",
		f.Issued, f.Stats.Tickets, f.Stats.Records, f.Stats.Lost, f.Kernel.Events)
	assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
	assert.Equal(t, f.Kernel.TotalTickets(), f.Issued, "kernel per-CPU ticket counters = ring head")
	assert.GreaterOrEqual(t, f.Kernel.Events[event.Fork], uint64(forks))

	recs := flatten(sink.AllLogs())
	delivered, lost := checkOrder(t, recs)
	assert.Equal(t, int64(f.Stats.Records), delivered)
	assert.Equal(t, int64(f.Stats.Lost), lost)
	byType := map[string]int64{}
	for _, r := range recs {
		byType[r.name]++
	}
	if lost == 0 {
		assert.Equal(t, int64(f.Kernel.Events[event.Fork]), byType["process.fork"])
		assert.Equal(t, int64(f.Kernel.Events[event.Exec]), byType["process.exec"])
		assert.Equal(t, int64(f.Kernel.Events[event.Exit]), byType["process.exit"])
	}
}

// The fork storm for every transport: delivered + lost = issued, the stream
// in ticket order with every gap reported in place, the kernel's counters
// agreeing.
func TestForkStormEveryTransport(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is needed (make deps installs it): %v", err)
	}
	forks := testutil.ForkOps(10000) // fewer in test/kernels' QEMU guests
	for _, tr := range []sequencer.Transport{sequencer.TransportSequencer, sequencer.TransportRingBuf, sequencer.TransportPerfBuf, ringBufNoFetch} {
		t.Run(string(tr), func(t *testing.T) {
			skipWithoutAtomics(t, tr)
			sink := &consumertest.LogsSink{}
			cfg := createDefaultConfig()
			cfg.Transport = tr
			r := startReceiver(t, cfg, sink)
			storm := exec.Command("stress-ng", "--fork", "4", "--fork-ops", strconv.Itoa(forks), "--timeout", "60s", "--quiet")
			storm.Dir = t.TempDir() // stress-ng's temp-path must be writable (the guests' root is not)
			out, err := storm.CombinedOutput()
			require.NoError(t, err, string(out))
			require.NoError(t, r.Shutdown(context.Background()))

			f := r.final
			t.Logf("%s: issued %d tickets, delivered %d (%d records), lost %d (%+v); kernel events %v, failed %v",
				tr, f.Issued, f.Stats.Tickets, f.Stats.Records, f.Stats.Lost, f.Stats, f.Kernel.Events, f.Kernel.Failed)
			assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
			assert.Equal(t, f.Kernel.TotalTickets(), f.Issued, "kernel per-CPU ticket counters = head")
			assert.GreaterOrEqual(t, f.Kernel.Events[event.Fork], uint64(forks))
			assert.LessOrEqual(t, f.Kernel.TotalFailed(), f.Stats.Lost, "tickets the producers lost are reported lost")

			recs := flatten(sink.AllLogs())
			delivered, lost := checkOrder(t, recs)
			assert.Equal(t, int64(f.Stats.Records), delivered)
			assert.Equal(t, int64(f.Stats.Lost), lost)
			if lost == 0 {
				byType := map[string]int64{}
				for _, r := range recs {
					byType[r.name]++
				}
				assert.Equal(t, int64(f.Kernel.Events[event.Fork]), byType["process.fork"])
				assert.Equal(t, int64(f.Kernel.Events[event.Exit]), byType["process.exit"])
			}
		})
	}
}

// A fork storm over perf buffers big enough to hold it, read by a slow
// pipeline: the perf reader empties one CPU's buffer before the next, so
// the other CPUs' records reach the reorder stage long after the records
// that follow them in ticket order. The stage waits for every CPU's stream
// to pass a ticket, not for a clock: nothing the buffers held is lost.
func TestPerfStarvedCPULosesNothing(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is needed (make deps installs it): %v", err)
	}
	forks := testutil.ForkOps(6000)
	sink := &slowSink{delay: 10 * time.Millisecond}
	cfg := createDefaultConfig()
	cfg.Transport = sequencer.TransportPerfBuf
	cfg.RingSlots = 1 << 18 // 32 MiB of perf buffers: the storm fits
	cfg.MaxBatch = 64
	require.NoError(t, cfg.Validate())
	rcv, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	r := rcv.(*sharedcomponent.Component[*seqReceiver]).C
	storm := exec.Command("stress-ng", "--fork", "4", "--fork-ops", strconv.Itoa(forks), "--timeout", "60s", "--quiet")
	storm.Dir = t.TempDir()
	out, err := storm.CombinedOutput()
	require.NoError(t, err, string(out))
	waitFor(t, "the reader to catch up", func() bool { return r.rd.Head() == r.rd.Next() })
	require.NoError(t, r.Shutdown(context.Background()))
	st := r.rd.(*transport.Buf).BufStats() // the reader has stopped

	f := r.final
	t.Logf("issued %d, delivered %d (%d records), lost %d (%+v); kernel failed %d; reorder held at most %d, late %d",
		f.Issued, f.Stats.Tickets, f.Stats.Records, f.Stats.Lost, f.Stats, f.Kernel.TotalFailed(), st.ReorderMaxHeld, st.ReorderLate)
	assert.Less(t, f.Kernel.TotalFailed(), f.Issued/100, "the buffers held (nearly all of) the storm")
	assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
	assert.Equal(t, f.Kernel.TotalFailed(), f.Stats.Lost, "the only tickets lost are the outputs that failed")
	assert.Zero(t, f.Stats.LostGaveUp, "no ticket given up on")
	assert.Zero(t, st.ReorderLate, "no record came after its ticket was given up on")
	delivered, lost := checkOrder(t, flatten(sink.AllLogs()))
	assert.Equal(t, int64(f.Stats.Records), delivered)
	assert.Equal(t, int64(f.Stats.Lost), lost)
}

// slowSink takes delay over every batch: a pipeline slower than the storm.
type slowSink struct {
	consumertest.LogsSink
	delay time.Duration
}

func (s *slowSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	time.Sleep(s.delay)
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// trueRuns is how many times runTrueLoad runs /bin/true: about 3 tickets
// each, several times the 256-slot rings of the tests that hold their
// pipeline, so those rings are lapped at any machine speed.
const trueRuns = 400

// runTrueLoad runs /bin/true trueRuns times from 4 goroutines.
func runTrueLoad() {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range trueRuns / 4 {
				_ = exec.Command("/bin/true").Run()
			}
		}()
	}
	wg.Wait()
}

// heldSink holds the reader back so that producers lap it: ConsumeLogs
// blocks until release, whatever the machine's speed (a VM under TCG runs the
// workload many times slower than the host, the pipeline just as slowly).
type heldSink struct {
	consumertest.LogsSink
	gate chan struct{}
	once sync.Once
}

func newHeldSink() *heldSink { return &heldSink{gate: make(chan struct{})} }

func (s *heldSink) release() { s.once.Do(func() { close(s.gate) }) }

func (s *heldSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	<-s.gate
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

// A tiny ring and a held pipeline: events are lost, and every lost ticket is
// counted and reported in place as a seq.lost record.
func TestLappedReaderReportsEveryGap(t *testing.T) {
	testutil.RequireRoot(t)
	sink := newHeldSink()
	defer sink.release()
	cfg := createDefaultConfig()
	cfg.RingSlots = 256
	cfg.MaxBatch = 16
	require.NoError(t, confmap.Validate(cfg))
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	rcv, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	r := rcv.(*sharedcomponent.Component[*seqReceiver]).C

	runTrueLoad()
	sink.release()
	require.NoError(t, r.Shutdown(context.Background()))

	f := r.final
	t.Logf("issued %d, delivered %d, lost %d: %+v", f.Issued, f.Stats.Tickets, f.Stats.Lost, f.Stats)
	assert.Positive(t, f.Stats.Lost, "the ring of 256 slots must have been lapped")
	assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
	delivered, lost := checkOrder(t, flatten(sink.AllLogs()))
	assert.Equal(t, int64(f.Stats.Lost), lost, "every lost ticket reported in a seq.lost record")

	// The self-telemetry says the same.
	sum := func(name string) (n int64) {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			n += dp.Value
		}
		return n
	}
	assert.Equal(t, lost, sum("otelcol_receiver_seq_events_lost"))
	assert.Equal(t, delivered, sum("otelcol_receiver_seq_events_delivered"))
}

// Shutdown detaches and closes every program and map the receiver created.
func TestShutdownLeavesNothingLoaded(t *testing.T) {
	testutil.RequireRoot(t)
	r := startReceiver(t, createDefaultConfig(), &consumertest.LogsSink{})
	progs, maps := r.seq.(*sequencer.Sequencer).ProgramIDs(), r.seq.(*sequencer.Sequencer).MapIDs()
	require.Len(t, progs, 4)
	// The sequencer's five maps, and the process-exit claims where the
	// kernel passes no group_dead.
	wantMaps := 5
	if r.seq.ExitTracking() == sequencer.ExitLiveCount {
		wantMaps = 6
	}
	require.Len(t, maps, wantMaps)
	require.NoError(t, r.Shutdown(context.Background()))
	// The kernel frees programs and maps after an RCU grace period, not at close.
	gone := func() (left []string) {
		for _, id := range progs {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				p.Close()
				left = append(left, fmt.Sprintf("program %d", id))
			} else if !errors.Is(err, os.ErrNotExist) {
				left = append(left, fmt.Sprintf("program %d (%v)", id, err))
			}
		}
		for _, id := range maps {
			if m, err := ebpf.NewMapFromID(id); err == nil {
				m.Close()
				left = append(left, fmt.Sprintf("map %d", id))
			} else if !errors.Is(err, os.ErrNotExist) {
				left = append(left, fmt.Sprintf("map %d (%v)", id, err))
			}
		}
		return left
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := gone(); len(left) > 0; left = gone() {
		if time.Now().After(deadline) {
			t.Fatalf("still in the kernel 10 s after Shutdown: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// arrivalSink notes when each record reached the pipeline.
type arrivalSink struct {
	mu      sync.Mutex
	latency map[int64]time.Duration // exit records by pid: arrival minus event time
}

func (s *arrivalSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *arrivalSink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range flatten([]plog.Logs{ld}) {
		if r.name == "process.exit" {
			s.latency[r.int("process.pid")] = now.Sub(r.ts)
		}
	}
	return nil
}

func (s *arrivalSink) get(pid int64) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.latency[pid]
	return d, ok
}

// A parked reader is woken by the doorbell: an event that follows a quiet
// period reaches the pipeline in milliseconds, not after the park timeout.
func TestParkedReaderWakesOnEvent(t *testing.T) {
	testutil.RequireRoot(t)
	sink := &arrivalSink{latency: map[int64]time.Duration{}}
	rcv, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), createDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, rcv.Shutdown(context.Background())) }()

	var lat []time.Duration
	for i := range 40 {
		time.Sleep(time.Duration(20+i*5) * time.Millisecond) // quiet: the reader lingers, then parks
		cmd := exec.Command("/bin/true")
		require.NoError(t, cmd.Run())
		pid := int64(cmd.Process.Pid)
		waitFor(t, "exit record", func() bool { _, ok := sink.get(pid); return ok })
		d, _ := sink.get(pid)
		lat = append(lat, d)
	}
	slices.Sort(lat)
	t.Logf("event to pipeline after a quiet period, %d events: min %v, median %v, p99 %v, max %v",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	assert.Less(t, lat[len(lat)/2], parkTimeout/4, "a parked reader must be woken by the doorbell, not by its timeout")
}

// One receiver in a logs and a traces pipeline: a shell tree becomes one
// span per process, linked parent to child, and every log record carries
// the trace and span id of its process's span.
func TestShellTreeSpans(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := createDefaultConfig()
	set := receivertest.NewNopSettings(metadata.Type)
	logSink, traceSink := &consumertest.LogsSink{}, &consumertest.TracesSink{}
	lr, err := NewFactory().CreateLogs(context.Background(), set, cfg, logSink)
	require.NoError(t, err)
	tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traceSink)
	require.NoError(t, err)
	require.Same(t, lr, tr, "one instance serves both pipelines")
	require.NoError(t, lr.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tr.Start(context.Background(), componenttest.NewNopHost()))

	// setsid: the outer shell leads a session, so the inner shell starts a trace.
	cmd := exec.Command("setsid", "-w", "/bin/sh", "-c", `/bin/sh -c 'sleep 0.2; /bin/sh -c "exit 3"; true' ; true`)
	require.NoError(t, cmd.Run())
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, lr.Shutdown(context.Background()))
	require.NoError(t, tr.Shutdown(context.Background()))

	type span struct {
		name            string
		pid, ppid, code int64
		id, parent      pcommon.SpanID
		trace           pcommon.TraceID
		start, end      time.Time
		status          ptrace.StatusCode
		desc            string
		execs           int
	}
	spans := map[int64]span{}
	for _, td := range traceSink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			svc, _ := rss.At(i).Resource().Attributes().Get("service.name")
			assert.Equal(t, "linux-processes", svc.Str())
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				for k := 0; k < sss.At(j).Spans().Len(); k++ {
					s := sss.At(j).Spans().At(k)
					a := s.Attributes().AsRaw()
					pid, _ := a["process.pid"].(int64)
					ppid, _ := a["process.parent_pid"].(int64)
					code, _ := a["process.exit.code"].(int64)
					spans[pid] = span{name: s.Name(), pid: pid, ppid: ppid, code: code, id: s.SpanID(), parent: s.ParentSpanID(),
						trace: s.TraceID(), start: s.StartTimestamp().AsTime(), end: s.EndTimestamp().AsTime(),
						status: s.Status().Code(), desc: s.Status().Message(), execs: s.Events().Len()}
				}
			}
		}
	}
	outer := spans[int64(cmd.Process.Pid)]
	require.NotEmpty(t, outer.name, "span of the setsid'd outer shell")
	var inner, sleep, exit3 span
	for _, s := range spans {
		switch {
		case s.ppid == outer.pid && s.name == "sh":
			inner = s
		}
	}
	require.NotZero(t, inner.pid, "span of the inner shell")
	for _, s := range spans {
		switch {
		case s.ppid == inner.pid && s.name == "sleep":
			sleep = s
		case s.ppid == inner.pid && s.name == "sh":
			exit3 = s
		}
	}
	require.NotZero(t, sleep.pid, "span of sleep")
	require.NotZero(t, exit3.pid, "span of the shell that exits 3")

	assert.True(t, inner.parent.IsEmpty(), "the inner shell, child of a session leader, roots its own trace")
	assert.NotEqual(t, outer.trace, inner.trace)
	for _, c := range []span{sleep, exit3} {
		assert.Equal(t, inner.trace, c.trace, "%s in the inner shell's trace", c.name)
		assert.Equal(t, inner.id, c.parent, "%s's parent span is the inner shell's", c.name)
		assert.False(t, c.start.Before(inner.start), "%s starts inside its parent", c.name)
		assert.False(t, c.end.After(inner.end), "%s ends inside its parent", c.name)
		assert.Positive(t, c.execs, "%s has its exec span event", c.name)
	}
	assert.GreaterOrEqual(t, sleep.end.Sub(sleep.start), 200*time.Millisecond)
	assert.Equal(t, ptrace.StatusCodeError, exit3.status)
	assert.Equal(t, "exit 3", exit3.desc)
	assert.Equal(t, int64(3), exit3.code)
	assert.NotEqual(t, ptrace.StatusCodeError, sleep.status)

	// Every lifecycle record of these processes carries its span's ids.
	checked := 0
	for _, ld := range logSink.AllLogs() {
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := 0; i < lrs.Len(); i++ {
			l := lrs.At(i)
			pid, _ := l.Attributes().Get("process.pid")
			if s, ok := spans[pid.Int()]; ok && (s.pid == inner.pid || s.ppid == inner.pid) {
				assert.Equal(t, s.id, l.SpanID(), "%s record of pid %d", l.EventName(), s.pid)
				assert.Equal(t, s.trace, l.TraceID(), "%s record of pid %d", l.EventName(), s.pid)
				checked++
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 9, "fork, exec and exit of three processes")
}

// A tiny buffer and a slow pipeline with the ring buffer and perf buffers:
// outputs fail, and every lost ticket is counted and reported in place.
func TestLossyBufferTransports(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tr := range []sequencer.Transport{sequencer.TransportRingBuf, sequencer.TransportPerfBuf, ringBufNoFetch} {
		t.Run(string(tr), func(t *testing.T) {
			sink := newHeldSink()
			defer sink.release()
			cfg := createDefaultConfig()
			cfg.Transport = tr
			cfg.RingSlots = 256
			cfg.MaxBatch = 16
			r := startReceiver(t, cfg, sink)
			runTrueLoad()
			sink.release()
			require.NoError(t, r.Shutdown(context.Background()))
			f := r.final
			t.Logf("%s: issued %d, delivered %d, lost %d: %+v; kernel failed %d", tr, f.Issued, f.Stats.Tickets, f.Stats.Lost, f.Stats, f.Kernel.TotalFailed())
			assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
			assert.LessOrEqual(t, f.Kernel.TotalFailed(), f.Stats.Lost)
			_, lost := checkOrder(t, flatten(sink.AllLogs()))
			assert.Equal(t, int64(f.Stats.Lost), lost, "every lost ticket reported in a seq.lost record")
		})
	}
}

// Adaptive pressure: with a tiny ring and a slow pipeline, forks and execs are
// shed in the kernel (counted, no ticket taken) while exits never are, the
// accounting stays exact, and shedding stops by itself once the reader has
// caught up.
func TestPressureShedsForksAndExecsNeverExits(t *testing.T) {
	testutil.RequireRoot(t)
	sink := newHeldSink()
	defer sink.release()
	cfg := createDefaultConfig()
	cfg.Transport = sequencer.TransportSequencer
	cfg.RingSlots = 256
	cfg.MaxBatch = 16
	cfg.Pressure = PressureConfig{Shed: []string{EventFork, EventExec}, Above: 0.5}
	require.NoError(t, confmap.Validate(cfg))
	rcv, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
	r := rcv.(*sharedcomponent.Component[*seqReceiver]).C

	runTrueLoad()

	// Recovery: once the reader has caught up, a new process is captured whole.
	sink.release()
	waitFor(t, "the reader to catch up", func() bool { return r.rd.Head() == r.rd.Next() })
	shedDuring, err := r.seq.Counters()
	require.NoError(t, err)
	cmd := exec.Command("/bin/true", "after-pressure")
	require.NoError(t, cmd.Run())
	pid := int64(cmd.Process.Pid)
	waitFor(t, "the fork, exec and exit after the pressure", func() bool {
		seen := map[string]bool{}
		for _, rc := range flatten(sink.AllLogs()) {
			if rc.int("process.pid") == pid {
				seen[rc.name] = true
			}
		}
		return seen["process.fork"] && seen["process.exec"] && seen["process.exit"]
	})
	require.NoError(t, r.Shutdown(context.Background()))

	f := r.final
	t.Logf("shed: fork %d, exec %d, exit %d; issued %d, delivered %d, lost %d",
		shedDuring.Shed[event.Fork], shedDuring.Shed[event.Exec], shedDuring.Shed[event.Exit], f.Issued, f.Stats.Tickets, f.Stats.Lost)
	assert.Positive(t, shedDuring.Shed[event.Fork]+shedDuring.Shed[event.Exec], "forks or execs were shed")
	assert.Zero(t, f.Kernel.Shed[event.Exit], "exits are never shed")
	assert.GreaterOrEqual(t, f.Kernel.Events[event.Exit], uint64(trueRuns), "every exit of the workload took a ticket")
	assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
	assert.Equal(t, f.Kernel.Shed, shedDuring.Shed, "no shedding after the reader caught up")
	_, lost := checkOrder(t, flatten(sink.AllLogs()))
	assert.Equal(t, int64(f.Stats.Lost), lost)
}
