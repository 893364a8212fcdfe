// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// kernel is the loaded programs as the receiver uses them: the
// *sequencer.Sequencer, or a fake in the tests that need no root.
type kernel interface {
	Transport() sequencer.Transport
	Why() (why string, warn bool)
	ExitTracking() sequencer.ExitTracking
	NewSource() (transport.Source, error)
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
	rd     transport.Source // the transport's reader: the sequencer's ring, the ring buffer or perf
	tb     *metadata.TelemetryBuilder
	inner  settings // built from cfg (settings_linux.go)
	mapper mapper
	model  *process.Model
	intern event.Interner // the reader's

	cgroups *cgroups.Resolver // nil without a cgroup v2 hierarchy (containers_linux.go)

	readPos atomic.Uint64 // the reader's next ticket, for the occupancy gauge
	final   finalAccount  // the ring's accounting when Shutdown stopped it
	stop    atomic.Bool   // set by Shutdown: the reader drains and returns
	done    chan struct{} // closed when the reader has returned
	// The context the reader hands batches on with: cancelled by Shutdown
	// only when a consumer holds the reader past shutdownGrace.
	runCtx    context.Context
	cancelRun context.CancelFunc

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
	if r.inner, err = c.settings(); err != nil {
		return nil, err
	}
	r.mapper.Mapper = r.inner.mapper
	r.mapper.workers = mapWorkers()
	for t := range r.typeAttrs {
		r.typeAttrs[t] = metric.WithAttributeSet(attribute.NewSet(attribute.String("event", event.Type(t).String())))
	}
	return r, nil
}

// Start loads the sequencer and starts the reader.
func (r *seqReceiver) Start(context.Context, component.Host) error {
	r.applyNice()
	return r.startSequencer()
}

// applyNice raises the collector's threads to the configured nice value
// (see raiseNice); a failure is logged with the fix, not fatal.
func (r *seqReceiver) applyNice() {
	n := r.inner.nice
	if n == 0 {
		return
	}
	set, kept, err := raiseNice(n)
	if err != nil {
		r.set.Logger.Warn("seq receiver: could not set the collector's threads to nice "+strconv.Itoa(n)+
			"; a user running many processes can then starve the reader and make it lose other users' events (lapped): give the collector CAP_SYS_NICE, or set nice: 0 to silence this",
			zap.Error(err), zap.Int("threads_set", set))
		return
	}
	r.set.Logger.Info("seq receiver: the collector's threads run at nice "+strconv.Itoa(n), zap.Int("threads_set", set), zap.Int("threads_already_at_or_below", kept))
}

func (r *seqReceiver) startSequencer() (err error) {
	r.seq, err = r.open(r.inner.seq)
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
	mc := r.inner.model
	mc.BootID, mc.BootOffset, mc.Cgroups = boot, r.mapper.BootOffset, r.cgroupsOf()
	r.model = process.New(mc)
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
	r.runCtx, r.cancelRun = context.WithCancel(context.Background())
	go r.run()
	return nil
}

// shutdownGrace is how long Shutdown lets a consumer hold the reader (and
// the last spans) before it cancels the batches' context.
const shutdownGrace = 5 * time.Second

// stuck is Shutdown's wait once ctx is done and the reader has not
// returned: it still gives the reader a second, then (an error) leaves the
// ring mapped rather than pull it from under a reader inside a consumer.
func (r *seqReceiver) stuck(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	case <-time.After(time.Second):
		return fmt.Errorf("seq receiver: shutdown: the reader did not stop: %w", ctx.Err())
	}
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
	ring.Sleep(2 * time.Millisecond)
	r.stop.Store(true)
	r.rd.Interrupt()
	defer r.cancelRun()
	grace := time.NewTimer(shutdownGrace)
	defer grace.Stop()
	select {
	case <-r.done:
	case <-grace.C:
		// A consumer holds the reader: a pipeline that waits for room (a
		// sending queue with block_on_overflow, its backend down). Cancel
		// the batches' context: the consumer returns, the batch is counted
		// refused, and the reader finishes its drain without waiting again.
		r.cancelRun()
		select {
		case <-r.done:
		case <-ctx.Done():
			if e := r.stuck(ctx); e != nil {
				return e
			}
		}
	case <-ctx.Done():
		r.cancelRun()
		if e := r.stuck(ctx); e != nil {
			return e
		}
	}
	r.done = nil
	r.final.Stats = r.rd.Stats()
	r.final.Kernel, _ = r.seq.Counters()
	// Processes still running: their spans end now, marked as still running.
	r.model.CloseAll(bootclock.Now())
	fctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	r.flushSpans(fctx)
	cancel()
	if n := r.model.DiscardFinished(); n > 0 { // the pipeline refused a batch of them
		r.set.Logger.Warn("seq receiver: process spans not handed on at shutdown: the traces pipeline refused them", zap.Int("spans", n))
	}
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
