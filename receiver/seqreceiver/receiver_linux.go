// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// How the reader waits. After a burst it lingers once before parking, so a
// steady trickle of events costs one doorbell per linger period at most; a
// parked reader is woken by the first producer that sees the parked flag.
const (
	lingerWait   = 250 * time.Microsecond
	pendingFirst = 20 * time.Microsecond
	pendingMax   = time.Millisecond
	parkTimeout  = time.Second
	drainWait    = 50 * time.Millisecond // at shutdown, for producers still writing a slot
	// flushAfter bounds how long read records wait for their batch to fill:
	// a batch goes to the pipeline when it holds max_batch records or when
	// its first record is this old, so that records read a few at a time
	// still travel as one ResourceLogs.
	flushAfter = 20 * time.Millisecond
	// After the pipeline refuses a batch, the reader waits before it reads
	// again: backoffFirst, doubling per refused flush up to backoffMax, back
	// to no wait after the first flush the pipelines accept. Meanwhile the
	// records wait in the kernel ring, where pressure::shed and lapping
	// (seq.lost) account for what does not fit.
	backoffFirst = 5 * time.Millisecond
	backoffMax   = time.Second
	backoffSlice = 10 * time.Millisecond // a backing-off reader sees Shutdown within this
)

// kernel is the loaded programs as the receiver uses them: the
// *sequencer.Sequencer, or a fake in the tests that need no root.
type kernel interface {
	Transport() sequencer.Transport
	Why() (why string, warn bool)
	ExitTracking() sequencer.ExitTracking
	NewSource() (sequencer.Source, error)
	Counters() (sequencer.Counters, error)
	Snapshot() ([][]byte, error)
	Detach() error
	Close() error
}

func openSequencer(o sequencer.Options) (kernel, error) {
	s, err := sequencer.Open(o)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type seqReceiver struct {
	cfg    *Config
	set    receiver.Settings
	logs   consumer.Logs   // nil when no logs pipeline uses the receiver
	traces consumer.Traces // nil when no traces pipeline uses the receiver
	obs    *receiverhelper.ObsReport

	open   func(sequencer.Options) (kernel, error) // sequencer.Open; tests replace it
	seq    kernel
	rd     sequencer.Source // the transport's reader: the sequencer's ring, the ring buffer or perf
	tb     *metadata.TelemetryBuilder
	mapper mapper
	model  *process.Model
	intern event.Interner // the reader's

	cgroups *cgroups.Resolver // nil without a cgroup v2 hierarchy (containers_linux.go)

	readPos atomic.Uint64 // the reader's next ticket, for the occupancy gauge
	final   finalAccount  // the ring's accounting when Shutdown stopped it
	stop    atomic.Bool   // set by Shutdown: the reader drains and returns
	done    chan struct{} // closed when the reader has returned

	// The batch being filled: one ResourceLogs for all the reads until flush.
	out        plog.Logs
	recs       plog.LogRecordSlice
	batchStart time.Time // when the batch's first record was read

	// The process model's counters as of the last flush, for the telemetry
	// callbacks (the model itself belongs to the reader goroutine).
	modelStats atomic.Pointer[process.Stats]

	// The reader's pace after the pipelines refused a batch (reader goroutine only).
	backoff backoff

	// per-batch tallies, flushed into the telemetry once per batch
	delivered [event.NumTypes]int64
	lost      map[string]int64
	typeAttrs [event.NumTypes]metric.MeasurementOption
}

// finalAccount is the ring's accounting at shutdown, after the producers were
// detached and the reader drained: Stats.Tickets + Stats.Lost == Issued.
type finalAccount struct {
	Stats  ring.Stats
	Issued uint64
	Kernel sequencer.Counters
}

// One receiver instance per configuration serves its logs and traces pipelines.
var instances sharedcomponent.Map[*Config, *seqReceiver]

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	e, err := instances.LoadOrStore(cfg.(*Config), func() (*seqReceiver, error) { return newReceiver(set, cfg.(*Config)) })
	if err != nil {
		return nil, err
	}
	e.C.logs = next
	return e, nil
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	e, err := instances.LoadOrStore(cfg.(*Config), func() (*seqReceiver, error) { return newReceiver(set, cfg.(*Config)) })
	if err != nil {
		return nil, err
	}
	e.C.traces = next
	return e, nil
}

func newReceiver(set receiver.Settings, c *Config) (*seqReceiver, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "ebpf",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	r := &seqReceiver{cfg: c, set: set, obs: obs, open: openSequencer, lost: map[string]int64{}}
	r.newBatch()
	r.mapper.IncludeThreads = c.ThreadEvents
	if r.mapper.Redact, err = c.Redaction.redactor(); err != nil {
		return nil, err
	}
	r.mapper.workers = mapWorkers()
	for t := range r.typeAttrs {
		r.typeAttrs[t] = metric.WithAttributeSet(attribute.NewSet(attribute.String("event", event.Type(t).String())))
	}
	return r, nil
}

// shedEvents maps pressure::shed to event types.
func (r *seqReceiver) shedEvents() []event.Type {
	var evs []event.Type
	for _, e := range r.cfg.Pressure.Shed {
		switch e {
		case EventFork:
			evs = append(evs, event.Fork)
		case EventExec:
			evs = append(evs, event.Exec)
		case "thread":
			evs = append(evs, event.ThreadStart, event.ThreadExit)
		}
	}
	return evs
}

func (r *seqReceiver) bpfEvents() []event.Type {
	var evs []event.Type
	for _, e := range r.cfg.Events {
		switch e {
		case EventFork:
			evs = append(evs, event.Fork)
		case EventExec:
			evs = append(evs, event.Exec)
		case EventExit:
			evs = append(evs, event.Exit)
		}
	}
	if r.cfg.ThreadEvents {
		evs = append(evs, event.ThreadStart, event.ThreadExit)
	}
	return evs
}

// Start loads the sequencer and starts the reader.
func (r *seqReceiver) Start(context.Context, component.Host) error {
	return r.startSequencer()
}

func (r *seqReceiver) startSequencer() (err error) {
	r.seq, err = r.open(sequencer.Options{
		Transport: r.cfg.Transport, RingSlots: r.cfg.RingSlots, Events: r.bpfEvents(), MaxArgs: r.cfg.MaxArgsBytes,
		Shed: r.shedEvents(), ShedAbove: uint64(r.cfg.Pressure.Above * float64(r.cfg.RingSlots)),
	})
	if err != nil {
		return fmt.Errorf("seq receiver: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.closeKernel())
		}
	}()
	// The maps are new: every ticket from 0 on is ours to deliver or count lost,
	// including those claimed since the programs were attached.
	if r.rd, err = r.seq.NewSource(); err != nil {
		return fmt.Errorf("seq receiver: open the %s reader: %w", r.seq.Transport(), err)
	}
	if len(r.cfg.Pressure.Shed) > 0 && r.seq.Transport() != sequencer.TransportSequencer {
		r.set.Logger.Warn("seq receiver: pressure::shed is ignored: it works on the sequencer transport only", zap.String("transport", string(r.seq.Transport())))
	}
	if why, warn := r.seq.Why(); warn {
		r.set.Logger.Warn("seq receiver: transport "+string(r.seq.Transport())+": "+why, zap.String("transport", string(r.seq.Transport())))
	} else {
		r.set.Logger.Info("seq receiver: transport "+string(r.seq.Transport()), zap.String("transport", string(r.seq.Transport())),
			zap.String("configured", string(r.cfg.Transport)), zap.String("reason", why))
	}
	r.readPos.Store(r.rd.Next())
	r.syncBootOffset(time.Now())
	r.startCgroups()
	// The boot id names this boot: with a pid and a start time it names a process.
	boot, _ := bootclock.ID()
	r.model = process.New(process.Config{
		BootID:         boot,
		MaxProcesses:   r.cfg.Traces.MaxProcesses,
		RootParents:    r.cfg.Traces.RootParents,
		SessionLeaders: r.cfg.Traces.SessionLeaders,
		ThreadEvents:   r.cfg.ThreadEvents,
		BootOffset:     r.mapper.BootOffset,
		Redact:         r.mapper.Redact,
		Cgroups:        r.cgroupsOf(),
	})
	// The tracepoints are attached: every process started from now on is
	// seen by them, and the ones already running come from the snapshot.
	r.addRunning()
	r.modelStats.Store(new(r.model.Stats()))
	if err = r.startTelemetry(); err != nil {
		return fmt.Errorf("seq receiver: telemetry: %w", err)
	}
	r.set.Logger.Info("seq receiver capturing process events",
		zap.Strings("events", r.cfg.Events), zap.Bool("thread_events", r.cfg.ThreadEvents),
		zap.String("transport", string(r.seq.Transport())),
		zap.String("exit_tracking", string(r.seq.ExitTracking())),
		zap.Int("ring_slots", r.cfg.RingSlots), zap.Int("ring_bytes", r.cfg.RingSlots*128))

	r.done = make(chan struct{})
	go r.run()
	return nil
}

func (r *seqReceiver) startTelemetry() (err error) {
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	return errors.Join(
		r.registerContainerTelemetry(),
		r.tb.RegisterReceiverSeqTicketsIssuedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.rd.Head()))
			return nil
		}),
		r.tb.RegisterReceiverSeqRingOccupancyCallback(func(_ context.Context, o metric.Int64Observer) error {
			pos := r.readPos.Load() // first: the head only grows
			o.Observe(int64(r.rd.Head() - pos))
			return nil
		}),
		r.tb.RegisterReceiverSeqRingCapacityCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.cfg.RingSlots))
			return nil
		}),
		r.tb.RegisterReceiverSeqEventsShedCallback(func(_ context.Context, o metric.Int64Observer) error {
			c, err := r.seq.Counters()
			if err != nil {
				return err
			}
			for t, n := range c.Shed {
				if n > 0 && t < len(r.typeAttrs) {
					o.Observe(int64(n), r.typeAttrs[t].(metric.ObserveOption))
				}
			}
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesLiveCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().Live))
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesEvictedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().Evicted))
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesExitMissedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().ExitMissed))
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesUnknownCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.Unknown), unknownNeverSeen)
			o.Observe(int64(st.AfterEviction), unknownEvicted)
			return nil
		}),
		r.tb.RegisterReceiverSeqSpansDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().DroppedSpans))
			return nil
		}),
		r.tb.RegisterReceiverSeqSpanEventsDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().DroppedEvents))
			return nil
		}),
		r.tb.RegisterReceiverSeqKernelEventsCallback(func(_ context.Context, o metric.Int64Observer) error {
			c, err := r.seq.Counters()
			if err != nil {
				return err
			}
			for t, n := range c.Events {
				if n > 0 && t < len(r.typeAttrs) {
					o.Observe(int64(n), r.typeAttrs[t].(metric.ObserveOption))
				}
			}
			return nil
		}),
	)
}

var (
	unknownNeverSeen = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "never_seen")))
	unknownEvicted   = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "evicted")))
)

// run is the reader: it drains the ring in ticket order, hands batches to
// the pipeline, and parks on the doorbell when there is nothing to read.
func (r *seqReceiver) run() {
	defer close(r.done)
	// Batches are consumed with a context of their own: a batch read while
	// shutting down is still delivered, not refused by a cancelled context.
	ctx := context.Background()
	lingered := false
	pendingWait := pendingFirst
	for !r.stop.Load() {
		if r.backoff.due {
			// The last flush was refused: leave the records in the ring a while.
			r.backOff(ctx)
			continue
		}
		n, st := r.read(false)
		if r.recs.Len() >= r.cfg.MaxBatch || !r.batchStart.IsZero() && time.Since(r.batchStart) >= flushAfter {
			r.flush(ctx)
		}
		switch st {
		case ring.Full:
			lingered = false
			continue
		case ring.Pending:
			// A producer claimed a ticket and is still writing its slot.
			sleep(pendingWait)
			pendingWait = min(2*pendingWait, pendingMax)
			continue
		}
		pendingWait = pendingFirst
		if n > 0 || !lingered {
			lingered = true
			sleep(lingerWait)
			continue
		}
		lingered = false
		// Nothing more to read. A batch still young waits on the doorbell
		// for the rest of its window (more records join the same batch);
		// an old one goes to the pipeline before the reader parks.
		timeout := parkTimeout
		if r.recs.Len() > 0 {
			if left := flushAfter - time.Since(r.batchStart); left > 0 {
				timeout = left
			} else {
				r.flush(ctx)
			}
		}
		woke, err := ring.Park(r.rd, r.rd.Wait, timeout)
		if woke {
			r.tb.ReceiverSeqWakeups.Add(ctx, 1)
		}
		if err != nil {
			r.set.Logger.Warn("seq receiver: waiting on the doorbell failed; polling instead", zap.Error(err))
			sleep(10 * time.Millisecond)
		}
	}
	// The producers are detached, but one may still be finishing a slot it
	// claimed: drain, waiting for such slots a little, then give up on what
	// is left, counted and reported as a shutdown gap.
	deadline := time.Now().Add(drainWait)
	for {
		_, st := r.read(false)
		if r.recs.Len() >= r.cfg.MaxBatch {
			r.flush(ctx)
		}
		if st == ring.Full || st == ring.Pending && time.Now().Before(deadline) {
			if st == ring.Pending {
				sleep(pendingMax)
			}
			continue
		}
		break
	}
	r.read(true)
	r.flush(ctx)
}

// newBatch starts the plog.Logs the next reads append to: one resource,
// one scope, however many reads fill it.
func (r *seqReceiver) newBatch() {
	r.out = plog.NewLogs()
	rl := r.out.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr(pdatamap.AttrServiceName, r.cfg.Traces.ServiceName)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	sl.Scope().SetVersion(r.set.BuildInfo.Version)
	r.recs = sl.LogRecords()
	r.recs.EnsureCapacity(min(r.cfg.MaxBatch, 4096))
	r.batchStart = time.Time{}
}

// read reads what the batch has room for, applies it to the process model
// and appends the log records to the batch. With abandon, it reads nothing
// and reports every unread ticket as lost.
//
// The reader goroutine decodes each record and applies it to the process
// model in ticket order; the log records are built by chunks of mapChunk,
// by worker goroutines when there are spare cores (see mapper), and
// appended to the batch in ticket order before read returns.
func (r *seqReceiver) read(abandon bool) (int, ring.State) {
	observed := time.Now()
	r.syncBootOffset(observed)
	before := r.recs.Len()
	r.mapper.begin(observed)
	handle := func(it *ring.Item) {
		switch it.Kind {
		case ring.Record:
			x := r.mapper.next()
			if err := event.DecodeInterned(it.Ticket, it.Data, &x.ev, &r.intern); err != nil {
				r.set.Logger.Warn("seq receiver: undecodable record", zap.Uint64("seq.number", it.Ticket), zap.Error(err))
				x.setLost(it.Ticket, uint64(it.Slots), "decode")
				r.lost["decode"] += int64(it.Slots)
				return
			}
			x.traceID, x.spanID = r.model.Apply(&x.ev)
			if r.logs == nil {
				r.mapper.drop() // applied, not mapped
				return
			}
			x.slots, x.lost = it.Slots, 0
		case ring.Gap:
			r.mapper.next().setLost(it.Ticket, it.Lost, it.Reason.String())
			r.lost[it.Reason.String()] += int64(it.Lost)
		}
	}
	var n int
	var st ring.State
	if abandon {
		r.final.Issued = r.rd.Abandon(handle) - r.rd.Start()
	} else {
		n, st = r.rd.Read(max(1, r.cfg.MaxBatch-before), handle)
	}
	r.mapper.end(r.recs, &r.delivered)
	r.readPos.Store(r.rd.Next())
	if before == 0 && r.recs.Len() > 0 {
		r.batchStart = observed
	}
	return n, st
}

// flush hands the batch of log records, and the spans of the processes
// that ended, to the pipelines.
func (r *seqReceiver) flush(ctx context.Context) {
	if r.recs.Len() > 0 {
		if r.logs != nil {
			if r.inContainers() {
				splitLogs(r.out)
			}
			r.consumeLogs(ctx, r.out)
		}
		r.newBatch()
	}
	r.flushSpans(ctx)
	r.flushTallies(ctx)
	r.modelStats.Store(new(r.model.Stats()))
}

// flushSpans hands the spans of the processes that ended to the traces pipeline.
func (r *seqReceiver) flushSpans(ctx context.Context) {
	if r.traces == nil {
		r.model.DiscardFinished() // no traces pipeline: never build them
		return
	}
	if r.model.Stats().Pending == 0 {
		return // most batches end no process: build nothing
	}
	traces := ptrace.NewTraces()
	rs := traces.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(pdatamap.AttrServiceName, r.cfg.Traces.ServiceName)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	ss.Scope().SetVersion(r.set.BuildInfo.Version)
	if r.model.AppendFinished(ss.Spans()) == 0 {
		return
	}
	if r.inContainers() {
		splitSpans(traces)
	}
	n := traces.SpanCount()
	octx := r.obs.StartTracesOp(ctx)
	err := r.traces.ConsumeTraces(octx, traces)
	r.obs.EndTracesOp(octx, metadata.Type.String(), n, err)
	if r.backoff.outcome(signalTraces, err) {
		r.set.Logger.Info("seq receiver: the pipelines accept batches again; the reader no longer backs off")
	}
	if err != nil && r.backoff.warn(signalTraces) {
		r.set.Logger.Warn("seq receiver: the pipeline refused a batch of process spans; they are dropped, counted in otelcol_receiver_refused_spans, and the reader backs off",
			zap.Int("spans", n), zap.Duration("backoff", r.backoff.wait), zap.Error(err))
	}
}

// addRunning puts the processes alive at start into the process model, from
// the BPF task iterator, with their command lines from /proc.
func (r *seqReceiver) addRunning() {
	recs, err := r.seq.Snapshot()
	if err != nil {
		r.set.Logger.Warn("seq receiver: no snapshot of the running processes; their spans start at their first event", zap.Error(err))
		return
	}
	evs := make([]event.Event, 0, len(recs))
	for _, b := range recs {
		var ev event.Event
		if event.Decode(0, b, &ev) == nil {
			ev.Filename, ev.Args = procCmdline(ev.PID)
			evs = append(evs, ev)
		}
	}
	// Parents before children, so a child joins its parent's trace.
	slices.SortFunc(evs, func(a, b event.Event) int { return cmp.Compare(a.StartNs, b.StartNs) })
	for i := range evs {
		r.model.AddRunning(&evs[i])
	}
	r.model.EndSnapshot()
	r.set.Logger.Info("seq receiver: processes running at start", zap.Int("processes", len(recs)))
}

func (r *seqReceiver) flushTallies(ctx context.Context) {
	for t, n := range r.delivered {
		if n > 0 {
			r.tb.ReceiverSeqEventsDelivered.Add(ctx, n, r.typeAttrs[t].(metric.AddOption))
			r.delivered[t] = 0
		}
	}
	for reason, n := range r.lost {
		r.tb.ReceiverSeqEventsLost.Add(ctx, n, metric.WithAttributes(attribute.String("reason", reason)))
		delete(r.lost, reason)
	}
}

// consumeLogs hands one batch to the logs pipeline. A refused batch is
// dropped, counted once by obsreport as refused (not retried: a retried
// batch could reach twice the pipelines that accepted it), and the reader
// backs off before it reads again.
func (r *seqReceiver) consumeLogs(ctx context.Context, logs plog.Logs) {
	n := logs.LogRecordCount()
	octx := r.obs.StartLogsOp(ctx)
	err := r.logs.ConsumeLogs(octx, logs)
	r.obs.EndLogsOp(octx, metadata.Type.String(), n, err)
	if r.backoff.outcome(signalLogs, err) {
		r.set.Logger.Info("seq receiver: the pipelines accept batches again; the reader no longer backs off")
	}
	if err != nil && r.backoff.warn(signalLogs) {
		r.set.Logger.Warn("seq receiver: the pipeline refused a batch of log records; they are dropped, counted in otelcol_receiver_refused_log_records, and the reader backs off",
			zap.Int("records", n), zap.Duration("backoff", r.backoff.wait), zap.Error(err))
	}
}

// Signals for the backoff's bookkeeping.
const (
	signalLogs = iota
	signalTraces
	numSignals
)

// backoff paces the reader while the pipelines refuse batches (a memory
// limiter, a full sending queue): reading at full speed would only turn the
// ring's records into refused batches. A backing-off reader leaves them in
// the ring, where the kernel's policy applies — pressure::shed drops the
// listed classes (never exits) before their ticket, and a lapped reader
// reports seq.lost gaps — every event still counted exactly once.
type backoff struct {
	wait    time.Duration // the next wait; 0 while the pipelines accept
	due     bool          // a refusal since the last wait: wait before reading
	refused [numSignals]bool
	logged  [numSignals]time.Time // when a refusal was last logged, per signal
}

// outcome records a Consume call's result: a refusal doubles the wait (once
// per wait, however many pipelines refused); a flush accepted by every
// pipeline that was called ends the backoff (resumed: it was on).
func (b *backoff) outcome(signal int, err error) (resumed bool) {
	b.refused[signal] = err != nil
	switch {
	case err != nil && !b.due:
		b.wait = min(max(2*b.wait, backoffFirst), backoffMax)
		b.due = true
	case err == nil && b.wait > 0 && !slices.Contains(b.refused[:], true):
		b.wait = 0
		return true
	}
	return false
}

// warn says whether to log this refusal: the first of a run, then at most
// one every 10 s per signal, so that a long outage does not flood the log.
func (b *backoff) warn(signal int) bool {
	now := time.Now()
	if now.Sub(b.logged[signal]) < 10*time.Second {
		return false
	}
	b.logged[signal] = now
	return true
}

// backOff waits the backoff, in slices so that Shutdown is seen promptly,
// and counts the time in otelcol_receiver_seq_reader_backoff.
func (r *seqReceiver) backOff(ctx context.Context) {
	start := time.Now()
	for left := r.backoff.wait; left > 0 && !r.stop.Load(); left = r.backoff.wait - time.Since(start) {
		sleep(min(left, backoffSlice))
	}
	r.backoff.due = false
	r.tb.ReceiverSeqReaderBackoff.Add(ctx, time.Since(start).Seconds())
}

// Shutdown detaches the producers first, lets the reader drain what they
// published, records the final accounting, ends the spans of the processes
// still running, then closes every program and map.
func (r *seqReceiver) Shutdown(ctx context.Context) error {
	if r.done == nil {
		return r.closeKernel()
	}
	err := r.seq.Detach()
	// A program that entered before the detach may still claim its ticket:
	// give it a moment, so the final accounting includes it.
	sleep(2 * time.Millisecond)
	r.stop.Store(true)
	r.rd.Interrupt()
	select {
	case <-r.done:
	case <-ctx.Done():
		// A context that is already done still gives the reader a short grace.
		select {
		case <-r.done:
		case <-time.After(time.Second):
			// The reader is stuck in a consumer: leave the ring mapped rather
			// than pull it from under the reader.
			return fmt.Errorf("seq receiver: shutdown: the reader did not stop: %w", ctx.Err())
		}
	}
	r.done = nil
	r.final.Stats = r.rd.Stats()
	r.final.Kernel, _ = r.seq.Counters()
	// Processes still running: their spans end now, marked as still running.
	r.model.CloseAll(bootclock.Now())
	r.flushSpans(context.Background())
	r.set.Logger.Info("seq receiver stopped",
		zap.Uint64("tickets_issued", r.final.Issued),
		zap.Uint64("tickets_delivered", r.final.Stats.Tickets),
		zap.Uint64("tickets_lost", r.final.Stats.Lost),
		zap.Uint64("records_delivered", r.final.Stats.Records))
	return errors.Join(err, r.closeKernel())
}

func (r *seqReceiver) closeKernel() error {
	if r.tb != nil {
		r.tb.Shutdown() // unregisters the callbacks that read the ring
		r.tb = nil
	}
	if r.seq == nil {
		return nil
	}
	err := r.seq.Close()
	r.seq = nil
	return err
}

// syncBootOffset keeps the boot-clock→wall-clock offset steady: reading the
// two clocks jitters by microseconds, which would make one process's
// creation time print differently in its fork and exit records. The offset
// moves only when the wall clock was stepped (by more than a millisecond).
func (r *seqReceiver) syncBootOffset(now time.Time) {
	off := bootclock.Offset(now)
	if d := off - r.mapper.BootOffset; d > int64(time.Millisecond) || d < -int64(time.Millisecond) {
		r.mapper.BootOffset = off
		if r.model != nil {
			r.model.SetBootOffset(off)
		}
	}
}

// procCmdline reads a running process's executable and argv from /proc
// (best effort: a process may be gone, or a kernel thread has none).
func procCmdline(pid uint32) (exe string, args []string) {
	p := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	exe, _ = os.Readlink(p + "/exe")
	b, _ := os.ReadFile(p + "/cmdline")
	if s := strings.TrimRight(string(b), "\x00"); s != "" {
		args = strings.Split(s, "\x00")
	}
	return exe, args
}

// sleep waits d; unlike time.Sleep it honours waits below a millisecond.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
