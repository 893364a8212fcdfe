// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// These tests drive the receiver's read loop, batching, telemetry and
// shutdown accounting without root: the BPF programs are replaced by the Go
// model of the producers writing into a ring in memory.

// fakeKernel stands in for the loaded programs.
type fakeKernel struct {
	ctl, slots []byte
	p          *ring.Producer
	bell       chan struct{}
	detached   atomic.Bool
	closed     atomic.Bool
}

func newFakeKernel(t *testing.T, slots int) *fakeKernel {
	t.Helper()
	k := &fakeKernel{bell: make(chan struct{}, 1)}
	k.ctl, k.slots = ring.NewMemory(slots)
	var err error
	k.p, err = ring.NewProducer(k.ctl, k.slots)
	require.NoError(t, err)
	return k
}

func (k *fakeKernel) Transport() sequencer.Transport { return sequencer.TransportSequencer }
func (k *fakeKernel) Why() (string, bool)            { return "fake", false }
func (k *fakeKernel) ExitTracking() sequencer.ExitTracking {
	return sequencer.ExitGroupDead
}
func (k *fakeKernel) Counters() (sequencer.Counters, error) {
	return sequencer.Counters{}, nil
}
func (k *fakeKernel) Snapshot() ([][]byte, error) { return nil, nil }
func (k *fakeKernel) Detach() error               { k.detached.Store(true); return nil }
func (k *fakeKernel) Close() error                { k.closed.Store(true); return nil }
func (k *fakeKernel) NewSource() (transport.Source, error) {
	rd, err := ring.NewReader(k.ctl, k.slots, ring.StartAt(0))
	if err != nil {
		return nil, err
	}
	return &fakeSource{Reader: rd, k: k, intr: make(chan struct{}, 1)}, nil
}

// write publishes one event per record, as the BPF producers would, and
// rings the doorbell.
func (k *fakeKernel) write(evs ...event.Event) {
	for i := range evs {
		k.p.Write(event.Encode(&evs[i]))
	}
	select {
	case k.bell <- struct{}{}:
	default:
	}
}

type fakeSource struct {
	*ring.Reader
	k     *fakeKernel
	intr  chan struct{}
	reads atomic.Int64 // Read calls that handed out something
}

func (s *fakeSource) Read(limit int, fn func(*ring.Item)) (int, ring.State) {
	n, st := s.Reader.Read(limit, fn)
	if n > 0 {
		s.reads.Add(1)
	}
	return n, st
}

func (s *fakeSource) Wait(timeout time.Duration) (bool, error) {
	select {
	case <-s.k.bell:
		return true, nil
	case <-s.intr:
		return false, nil
	case <-time.After(timeout):
		return false, nil
	}
}

func (s *fakeSource) Interrupt() {
	select {
	case s.intr <- struct{}{}:
	default:
	}
}

// lifecycle returns fork, exec and exit events of n processes.
func lifecycle(n int) []event.Event {
	var evs []event.Event
	for i := range uint32(n) {
		pid := 5000 + i
		base := event.Event{PID: pid, TID: pid, PPID: 1, StartNs: uint64(pid) * 1000, ParentStartNs: 1, Comm: "sh"}
		fork, exec, exit := base, base, base
		fork.Type, fork.KTime = event.Fork, uint64(pid)*1000
		exec.Type, exec.KTime, exec.Filename, exec.Args = event.Exec, fork.KTime+10, "/bin/true", []string{"true"}
		exit.Type, exit.KTime = event.Exit, fork.KTime+20
		evs = append(evs, fork, exec, exit)
	}
	return evs
}

type fakeRun struct {
	k   *fakeKernel
	r   *seqReceiver
	tel *componenttest.Telemetry
}

func startFake(t *testing.T, cfg *Config, slots int, logs consumer.Logs, traces consumer.Traces, before ...event.Event) *fakeRun {
	t.Helper()
	require.NoError(t, confmap.Validate(cfg))
	f := &fakeRun{k: newFakeKernel(t, slots), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { require.NoError(t, f.tel.Shutdown(context.Background())) })
	f.k.write(before...)
	set := metadatatest.NewSettings(f.tel)
	var c *sharedcomponent.Component[*seqReceiver]
	if logs != nil {
		lr, err := NewFactory().CreateLogs(context.Background(), set, cfg, logs)
		require.NoError(t, err)
		c = lr.(*sharedcomponent.Component[*seqReceiver])
	}
	if traces != nil {
		tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traces)
		require.NoError(t, err)
		c = tr.(*sharedcomponent.Component[*seqReceiver])
	}
	f.r = c.C
	f.r.open = func(sequencer.Options) (kernel, error) { return f.k, nil }
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	return f
}

func (f *fakeRun) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, f.r.Shutdown(context.Background()))
	assert.True(t, f.k.detached.Load(), "producers detached")
	assert.True(t, f.k.closed.Load(), "programs and maps closed")
	fin := f.r.final
	assert.Equal(t, fin.Issued, fin.Stats.Tickets+fin.Stats.Lost, "issued = delivered + lost")
}

func countRecords(all []plog.Logs) (records int, seqs []int64) {
	for _, ld := range all {
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := 0; i < lrs.Len(); i++ {
			records++
			v, _ := lrs.At(i).Attributes().Get(pdatamap.AttrSeqNumber)
			seqs = append(seqs, v.Int())
		}
	}
	return records, seqs
}

// Records read a few at a time travel in one batch: one ResourceLogs and
// one ScopeLogs per ConsumeLogs, not one per read.
func TestFakeReadsShareOneBatch(t *testing.T) {
	sink := &consumertest.LogsSink{}
	f := startFake(t, createDefaultConfig(), 1024, sink, nil)
	evs := lifecycle(4)
	for i := 0; i < len(evs); i += 3 {
		f.k.write(evs[i : i+3]...) // a process's fork, exec, exit, then a pause
		time.Sleep(time.Millisecond)
	}
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 12 }, 5*time.Second, time.Millisecond)
	f.stop(t)

	all := sink.AllLogs()
	assert.Less(t, len(all), 4, "four reads, fewer batches")
	for _, ld := range all {
		require.Equal(t, 1, ld.ResourceLogs().Len(), "one ResourceLogs per batch")
		require.Equal(t, 1, ld.ResourceLogs().At(0).ScopeLogs().Len(), "one ScopeLogs per batch")
		svc, _ := ld.ResourceLogs().At(0).Resource().Attributes().Get(pdatamap.AttrServiceName)
		assert.Equal(t, "linux-processes", svc.Str())
	}
	n, seqs := countRecords(all)
	assert.Equal(t, 12, n)
	for i, s := range seqs {
		assert.Equal(t, int64(i), s, "ticket order")
	}
}

// A burst larger than max_batch is handed over in batches of at most
// max_batch records, in ticket order, none lost.
func TestFakeMaxBatch(t *testing.T) {
	sink := &consumertest.LogsSink{}
	cfg := createDefaultConfig()
	cfg.MaxBatch = 64
	f := startFake(t, cfg, 4096, sink, nil, lifecycle(400)...)
	require.Eventually(t, func() bool { return sink.LogRecordCount() == 1200 }, 5*time.Second, time.Millisecond)
	f.stop(t)
	for _, ld := range sink.AllLogs() {
		assert.LessOrEqual(t, ld.LogRecordCount(), 64)
	}
	_, seqs := countRecords(sink.AllLogs())
	for i, s := range seqs {
		require.Equal(t, int64(i), s, "ticket order")
	}
	assert.Equal(t, uint64(1200), f.r.final.Stats.Tickets)
	assert.Zero(t, f.r.final.Stats.Lost)
}

// Tickets the producers overwrote before the reader started are one
// seq.lost record in place, counted in the telemetry by reason.
func TestFakeLappedBeforeStart(t *testing.T) {
	sink := &consumertest.LogsSink{}
	f := startFake(t, createDefaultConfig(), 256, sink, nil, lifecycle(100)...) // 300 tickets into 256 slots
	require.Eventually(t, func() bool { return f.r.readPos.Load() == 300 }, 5*time.Second, time.Millisecond)
	f.stop(t)

	first := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, pdatamap.EventNameLost, first.EventName())
	cnt, _ := first.Attributes().Get(pdatamap.AttrLostCount)
	lost := f.r.final.Stats.Lost
	assert.GreaterOrEqual(t, lost, uint64(300-256), "300 tickets, 256 slots")
	assert.Equal(t, int64(lost), cnt.Int(), "the seq.lost record accounts for every lost ticket")
	assert.Equal(t, uint64(300), f.r.final.Stats.Tickets+lost)
	assert.Equal(t, int(300-lost)+1, sink.LogRecordCount(), "every delivered ticket and one seq.lost record")

	m, err := f.tel.GetMetric("otelcol_receiver_seq_events_lost")
	require.NoError(t, err)
	sum := m.Data.(metricdata.Sum[int64])
	require.Len(t, sum.DataPoints, 1)
	v, _ := sum.DataPoints[0].Attributes.Value("reason")
	assert.Equal(t, "lapped", v.AsString())
	assert.Equal(t, int64(lost), sum.DataPoints[0].Value)
}

// A batch the pipeline refuses is counted once by obsreport as refused and
// not retried; the reader goes on and the accounting stays exact.
func TestFakeRefusedBatchCountedOnce(t *testing.T) {
	var calls atomic.Int64
	refuse := consumertest.NewErr(errors.New("memory limiter: data refused"))
	counting, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		calls.Add(1)
		return refuse.ConsumeLogs(ctx, ld)
	})
	require.NoError(t, err)
	f := startFake(t, createDefaultConfig(), 1024, counting, nil, lifecycle(10)...)
	require.Eventually(t, func() bool { return f.r.readPos.Load() == 30 }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * flushAfter)
	f.stop(t)
	assert.Equal(t, uint64(30), f.r.final.Stats.Tickets, "read and handed over, once")

	assert.Equal(t, int64(30), sumMetric[int64](t, f.tel, "otelcol_receiver_refused_log_records"), "every refused record counted once")
	assert.LessOrEqual(t, calls.Load(), int64(2), "no retries")
}

// A pipeline that waits for room instead of refusing (a sending queue with
// block_on_overflow, its backend down) holds the reader inside a consumer.
// Shutdown still returns: after shutdownGrace it cancels the batches'
// context, the consumer gives up, and what it held is counted refused.
func TestFakeShutdownUnblocksWaitingConsumer(t *testing.T) {
	var logCalls, spanCalls atomic.Int64
	logs, err := consumer.NewLogs(func(ctx context.Context, _ plog.Logs) error {
		logCalls.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	require.NoError(t, err)
	traces, err := consumer.NewTraces(func(ctx context.Context, _ ptrace.Traces) error {
		spanCalls.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	require.NoError(t, err)
	cfg := createDefaultConfig()
	f := startFake(t, cfg, 1024, logs, traces, lifecycle(10)...)
	require.Eventually(t, func() bool { return logCalls.Load() == 1 }, 5*time.Second, time.Millisecond, "the reader is inside the consumer")
	start := time.Now()
	f.stop(t)
	took := time.Since(start)
	assert.Less(t, took, 2*shutdownGrace+3*time.Second, "Shutdown returned")
	assert.GreaterOrEqual(t, took, shutdownGrace, "the consumer had its grace")
	assert.Equal(t, int64(30), sumMetric[int64](t, f.tel, "otelcol_receiver_refused_log_records"), "the held batch counted refused")
}

// The process table's counters reach the telemetry: a table of 64 that
// sees 100 processes start and none end evicts 36.
func TestFakeProcessTableTelemetry(t *testing.T) {
	var forks []event.Event
	for _, ev := range lifecycle(100) {
		if ev.Type == event.Fork {
			forks = append(forks, ev)
		}
	}
	cfg := createDefaultConfig()
	cfg.Traces.MaxProcesses = 64
	logs, traces := &consumertest.LogsSink{}, &consumertest.TracesSink{}
	f := startFake(t, cfg, 1024, logs, traces, forks...)
	require.Eventually(t, func() bool { return logs.LogRecordCount() == 100 }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * flushAfter)

	metadatatest.AssertEqualReceiverSeqProcessesEvicted(t, f.tel, []metricdata.DataPoint[int64]{
		{Value: 36, Attributes: attribute.NewSet(attribute.String("reason", "max_processes"))},
		{Value: 0, Attributes: attribute.NewSet(attribute.String("reason", "memory"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverSeqProcessesLive(t, f.tel, []metricdata.DataPoint[int64]{{Value: 64}}, metricdatatest.IgnoreTimestamp())
	require.Eventually(t, func() bool { return traces.SpanCount() == 36 }, 5*time.Second, time.Millisecond, "evicted spans exported early")
	for _, td := range traces.AllTraces() {
		assert.Equal(t, 1, td.ResourceSpans().Len(), "one ResourceSpans per batch")
	}
	f.stop(t)
	assert.Equal(t, 100, traces.SpanCount(), "the rest end at shutdown")
}

// sumMetric adds up a Sum metric's data points (0 when it was never recorded).
func sumMetric[N int64 | float64](t *testing.T, tel *componenttest.Telemetry, name string) N {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var total N
	for _, dp := range m.Data.(metricdata.Sum[N]).DataPoints {
		total += dp.Value
	}
	return total
}

// While the pipeline refuses (a memory limiter, a full sending queue), the
// reader backs off instead of turning the ring into refused batches: each
// refused batch is counted once as refused, the records wait in the ring and
// what overflows it is counted lost (lapped), delivered + lost = issued, and
// when the pipeline accepts again the records flow without a restart.
func TestFakeBackoffWhileRefused(t *testing.T) {
	var refusing atomic.Bool
	refusing.Store(true)
	var calls, refusedCalls, refusedRecs, acceptedRecs atomic.Int64
	sink := &consumertest.LogsSink{}
	cons, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		calls.Add(1)
		if refusing.Load() {
			refusedCalls.Add(1)
			refusedRecs.Add(int64(ld.LogRecordCount()))
			return errors.New("memory limiter: data refused")
		}
		acceptedRecs.Add(int64(ld.LogRecordCount()))
		return sink.ConsumeLogs(ctx, ld)
	})
	require.NoError(t, err)
	cfg := createDefaultConfig()
	cfg.MaxBatch = 64
	const ringSlots = 1024
	f := startFake(t, cfg, ringSlots, cons, nil)
	src := f.r.rd.(*fakeSource)

	// About 3000 events/s for 600 ms, all refused: without the backoff the
	// reader would hand over some 30 batches of 64; with it, a handful
	// (5, 10, 20, ... 320 ms apart).
	const refuseFor = 600 * time.Millisecond
	pid := uint32(0)
	produce := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			evs := lifecycle(1)
			for i := range evs {
				evs[i].PID, evs[i].TID = 9000+pid%1000, 9000+pid%1000
			}
			pid++
			f.k.write(evs...)
			time.Sleep(time.Millisecond)
		}
	}
	produce(refuseFor)
	// On a loaded machine fewer events come in that time: go on until the
	// ring has lapped the waiting reader, so that the test sees a lap.
	for deadline := time.Now().Add(3 * time.Second); f.r.rd.Head()-f.r.readPos.Load() <= ringSlots+64 && time.Now().Before(deadline); {
		produce(10 * time.Millisecond)
	}
	issuedRefusing := f.r.rd.Head()
	readRefusing := f.r.readPos.Load()
	callsRefusing := calls.Load()
	t.Logf("while refused: %d tickets issued, %d read, %d ConsumeLogs calls (%d records refused), %d non-empty reads",
		issuedRefusing, readRefusing, callsRefusing, refusedRecs.Load(), src.reads.Load())
	assert.GreaterOrEqual(t, callsRefusing, int64(2), "the reader tried again while refused")
	assert.LessOrEqual(t, callsRefusing, int64(12), "the reader backed off (5 ms doubling to 1 s), not one batch per read")
	assert.Less(t, readRefusing, issuedRefusing/2, "the records waited in the ring rather than being read and refused")
	assert.Less(t, callsRefusing, src.reads.Load(), "fewer ConsumeLogs calls than reads")

	// The pipeline accepts again: the backoff ends by itself and the reader
	// catches up (the ring lapped meanwhile: counted lost, reported in place).
	refusing.Store(false)
	produce(100 * time.Millisecond)
	issued := f.r.rd.Head()
	lastSeq := func() int64 {
		_, seqs := countRecords(sink.AllLogs())
		if len(seqs) == 0 {
			return -1
		}
		return seqs[len(seqs)-1]
	}
	require.Eventually(t, func() bool { return lastSeq() == int64(issued-1) }, 5*time.Second, time.Millisecond,
		"the last ticket issued reaches the pipeline after the refusals, without a restart")
	f.stop(t)

	fin := f.r.final
	assert.Equal(t, fin.Issued, fin.Stats.Tickets+fin.Stats.Lost, "issued = delivered + lost")
	assert.Positive(t, fin.Stats.Lost, "the ring lapped while the reader backed off: counted lost")

	// Refused batches counted once each (obsreport), accepted ones likewise:
	// every record handed over is in exactly one of the two.
	refused := sumMetric[int64](t, f.tel, "otelcol_receiver_refused_log_records")
	accepted := sumMetric[int64](t, f.tel, "otelcol_receiver_accepted_log_records")
	assert.Equal(t, refusedRecs.Load(), refused, "refused records counted once")
	assert.Equal(t, acceptedRecs.Load(), accepted, "accepted records counted once")
	assert.Equal(t, int64(sink.LogRecordCount()), accepted)
	assert.Positive(t, sumMetric[float64](t, f.tel, "otelcol_receiver_seq_reader_backoff"), "backoff time counted")
	// Records in refused and accepted batches are the tickets read: those
	// delivered, plus one seq.lost record per gap.
	delivered := sumMetric[int64](t, f.tel, "otelcol_receiver_seq_events_delivered")
	lost := sumMetric[int64](t, f.tel, "otelcol_receiver_seq_events_lost")
	assert.Equal(t, int64(fin.Stats.Tickets), delivered, "events_delivered = tickets delivered")
	assert.Equal(t, int64(fin.Stats.Lost), lost, "events_lost = tickets lost")
	assert.GreaterOrEqual(t, refused+accepted, delivered, "every delivered event went to the pipeline once (plus seq.lost records)")
}

// The process model's budget reaches the telemetry: execs with more
// arguments than max_args are cut and counted, the exec events of one
// process give up their argv at traces::max_event_args_bytes, counted by
// reason, and the accounted bytes are a gauge within traces::max_memory.
func TestFakeProcessBudgetTelemetry(t *testing.T) {
	const procs, execs = 10, 30
	var evs []event.Event
	args := make([]string, 300)
	for i := range args {
		args[i] = string(rune('a' + i%26))
	}
	for i, ev := range lifecycle(procs) {
		switch ev.Type {
		case event.Exec:
			for j := range execs {
				ev.KTime++
				ev.Args = append([]string{strconv.Itoa(i*execs + j)}, args...)
				evs = append(evs, ev)
			}
		case event.Fork:
			evs = append(evs, ev)
		}
	}
	cfg := createDefaultConfig()
	cfg.MaxArgs = 100
	cfg.Traces.MaxEventArgsBytes = 4096
	cfg.Traces.MaxMemory = 1 << 20
	logs, traces := &consumertest.LogsSink{}, &consumertest.TracesSink{}
	f := startFake(t, cfg, 1<<15, logs, traces, evs...)
	require.Eventually(t, func() bool { return logs.LogRecordCount() == len(evs) }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * flushAfter)

	st := f.r.modelStats.Load()
	assert.Positive(t, st.Memory)
	assert.LessOrEqual(t, st.Memory, cfg.Traces.MaxMemory)
	metadatatest.AssertEqualReceiverSeqProcessMemory(t, f.tel, []metricdata.DataPoint[int64]{{Value: int64(st.Memory)}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverSeqArgsTruncated(t, f.tel, []metricdata.DataPoint[int64]{{Value: procs * execs}}, metricdatatest.IgnoreTimestamp())
	// Each exec event keeps 100 one-byte arguments, 1700 bytes: two fit in 4096.
	metadatatest.AssertEqualReceiverSeqSpanEventArgsDropped(t, f.tel, []metricdata.DataPoint[int64]{
		{Value: procs * (execs - 2), Attributes: attribute.NewSet(attribute.String("reason", "process_limit"))},
		{Value: 0, Attributes: attribute.NewSet(attribute.String("reason", "memory"))},
	}, metricdatatest.IgnoreTimestamp())
	lr := logs.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := range lr.Len() {
		a := lr.At(i).Attributes()
		if v, ok := a.Get(pdatamap.AttrProcessCommandArgs); ok {
			assert.Equal(t, 100, v.Slice().Len(), "one record's argv is cut at max_args")
			tr, ok := a.Get(pdatamap.AttrArgsTruncated)
			assert.True(t, ok && tr.Bool())
		}
	}
	f.stop(t)
	require.Equal(t, procs, traces.SpanCount())
}

// A burst of exits is built and handed on max_batch spans at a time, each
// batch consumed before the next is built, and without waiting for a batch
// of log records: here there is no logs pipeline (on main the spans of a
// traces-only receiver waited for shutdown, all built at once).
func TestFakeSpansInBatches(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxBatch = 16
	traces := &consumertest.TracesSink{}
	f := startFake(t, cfg, 4096, nil, traces, lifecycle(100)...)
	require.Eventually(t, func() bool { return traces.SpanCount() == 100 }, 5*time.Second, time.Millisecond, "spans handed on while running")
	f.stop(t)
	for _, td := range traces.AllTraces() {
		assert.LessOrEqual(t, td.SpanCount(), 16)
	}
	assert.GreaterOrEqual(t, len(traces.AllTraces()), 100/16)
}

// An exec's argv is redacted once, before the process model and the log
// records read it: the record and the span carry the same redacted argv,
// and each replaced value is counted once.
func TestFakeRedactedOnceForLogsAndSpans(t *testing.T) {
	evs := lifecycle(3)
	for i := range evs {
		if evs[i].Type == event.Exec {
			evs[i].Filename, evs[i].Args = "/usr/bin/mysql", []string{"mysql", "--password=s3cret", "-u", "root", "db"}
		}
	}
	// An exec of a process the model never saw fork: mapped all the same.
	evs = append(evs, event.Event{Type: event.Exec, PID: 7777, TID: 7777, PPID: 1, StartNs: 7_777_000, KTime: 9_000_000,
		Comm: "curl", Filename: "/usr/bin/curl", Args: []string{"curl", "-H", "Authorization: Bearer t0ken", "https://x"}})
	logs, traces := &consumertest.LogsSink{}, &consumertest.TracesSink{}
	f := startFake(t, createDefaultConfig(), 4096, logs, traces, evs...)
	require.Eventually(t, func() bool { return logs.LogRecordCount() >= len(evs) && traces.SpanCount() >= 3 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return sumMetric[int64](t, f.tel, "otelcol_receiver_seq_args_redacted") == 4 }, 5*time.Second, time.Millisecond,
		"each replaced value counted once")
	f.stop(t)
	want := map[string][]any{
		"mysql": {"mysql", "--password=REDACTED", "-u", "root", "db"},
		"curl":  {"curl", "-H", "Authorization: Bearer REDACTED", "https://x"},
	}
	execs := 0
	for _, ld := range logs.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			recs := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
			for j := 0; j < recs.Len(); j++ {
				a := recs.At(j).Attributes().AsRaw()
				if recs.At(j).EventName() != "process.exec" {
					continue
				}
				execs++
				args := a["process.command_args"].([]any)
				assert.Equal(t, want[args[0].(string)], args)
				assert.Equal(t, true, a["seq.args.redacted"])
				assert.NotContains(t, recs.At(j).Body().Str(), "s3cret")
				assert.NotContains(t, recs.At(j).Body().Str(), "t0ken")
			}
		}
	}
	assert.Equal(t, 4, execs)
	spans := 0
	for _, td := range traces.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			ss := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
			for j := 0; j < ss.Len(); j++ {
				if v, ok := ss.At(j).Attributes().Get("process.command_args"); ok && v.Slice().At(0).Str() == "mysql" {
					spans++
					assert.Equal(t, want["mysql"], v.Slice().AsRaw())
				}
			}
		}
	}
	assert.Equal(t, 3, spans)
}
