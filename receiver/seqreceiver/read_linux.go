// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// How the reader waits: the ring's Pacer (gather, linger, back-off, park),
// with the seq receiver's own windows.
const (
	// flushAfter bounds how long read records wait for their batch to fill:
	// a batch goes to the pipeline when it holds max_batch records or when
	// its first record is this old, so that records read a few at a time
	// still travel as one ResourceLogs. The grpc receiver's spans wait 5
	// ms: each receiver keeps the window it was measured with.
	flushAfter = 20 * time.Millisecond
	// parkTimeout: a parked reader is woken by the doorbell; the timeout
	// is a safety net only (nothing in this loop runs on a clock).
	parkTimeout = time.Second
	drainWait   = 50 * time.Millisecond // at shutdown, for producers still writing a slot
)

// run is the reader: it drains the ring in ticket order, hands batches to
// the pipeline, and parks on the doorbell when there is nothing to read.
func (r *seqReceiver) run() {
	defer close(r.done)
	// Batches are consumed with a context of their own: a batch read while
	// shutting down is still delivered, not refused by a cancelled context,
	// unless a consumer holds the reader past shutdownGrace (Shutdown).
	ctx := r.runCtx
	pace := ring.Pacer{FlushAfter: flushAfter, ParkTimeout: parkTimeout, Slots: r.cfg.RingSlots}
	for !r.stop.Load() {
		if r.backoff.due {
			// The last flush was refused: leave the records in the ring a while.
			r.backOff(ctx)
			continue
		}
		pace.Read()
		n, st := r.read(false)
		if r.recs.Len() >= r.cfg.MaxBatch || pace.Due(r.batchStart) || r.spansDue() {
			r.flush(ctx)
		}
		step := pace.Next(n, st, r.batchStart)
		switch step.Action {
		case ring.PaceAgain:
			continue
		case ring.PaceBackoff, ring.PaceLinger:
			ring.Sleep(step.Wait)
			continue
		case ring.PaceGather:
			// A runtime timer, not nanosleep: the goroutine parks and no
			// thread sits in a system call (which keeps sysmon polling).
			// The grpc receiver's reader measured a third of its CPU in
			// such wake-ups (docs/benchmarks.md).
			time.Sleep(step.Wait)
			continue
		}
		if step.Flush || r.recs.Len() == 0 && r.model.Pending() > 0 {
			r.flush(ctx) // the batch is due, or spans left by a refused batch
		}
		woke, err := ring.Park(r.rd, r.rd.Wait, step.Wait)
		if woke {
			r.tb.ReceiverSeqWakeups.Add(ctx, 1)
		}
		if err != nil {
			r.set.Logger.Warn("seq receiver: waiting on the doorbell failed; polling instead", zap.Error(err))
			ring.Sleep(10 * time.Millisecond)
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
				ring.Sleep(ring.PendingMax)
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
			process.Redact(r.inner.redact, &x.ev)
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
				splitLogs(r.out, r.cgroups.Parse)
			}
			r.consumeLogs(ctx, r.out)
		}
		r.newBatch()
	}
	r.flushSpans(ctx)
	r.flushTallies(ctx)
	r.modelStats.Store(new(r.model.Stats()))
}

// spansDue reports whether finished spans should go now rather than with
// the next batch of log records: a batch's worth waits, or no log record
// waits for a flush (a traces-only receiver never has one).
func (r *seqReceiver) spansDue() bool {
	p := r.model.Pending()
	return p >= r.cfg.MaxBatch || p > 0 && r.recs.Len() == 0 && !r.backoff.due
}

// flushSpans hands the spans of the processes that ended to the traces
// pipeline, in batches of at most max_batch spans (and the model's bytes per
// build), each handed on before the next is built: a burst of exits is never
// built at once. A refused batch leaves the rest waiting for the next flush,
// after the back-off.
func (r *seqReceiver) flushSpans(ctx context.Context) {
	if r.traces == nil {
		r.model.DiscardFinished() // no traces pipeline: never build them
		return
	}
	// Most batches end no process: build nothing.
	for r.model.Pending() > 0 {
		if !r.flushSpanBatch(ctx) {
			return
		}
	}
}

// flushSpanBatch builds and hands on one batch of spans, and reports
// whether the pipeline took it.
func (r *seqReceiver) flushSpanBatch(ctx context.Context) bool {
	traces := ptrace.NewTraces()
	rs := traces.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(pdatamap.AttrServiceName, r.cfg.Traces.ServiceName)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	ss.Scope().SetVersion(r.set.BuildInfo.Version)
	if r.model.AppendFinished(ss.Spans()) == 0 {
		return false
	}
	if r.inContainers() {
		splitSpans(traces, r.cgroups.Parse)
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
	return err == nil
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
