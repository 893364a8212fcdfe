// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// probeSelf lets the tests whose TLS peers run in the test binary probe it
// (the collector never probes its own executable).
var probeSelf = false

// noFetch makes the tests load the programs kernels without BPF atomic
// fetch get (capture.Options.NoFetch), on any kernel.
var noFetch = false

// How the reader paces itself.
const (
	readChunk   = 4096                   // ring items per Read
	parkTimeout = 100 * time.Millisecond // longest sleep while the ring is empty
	expireEvery = time.Second            // idle connections and streams looked at
	// flushAfter: a batch waits at most this long for more spans before it
	// goes to the pipeline (unless max_batch fills it first), so that a
	// steady load makes a few hundred ConsumeTraces calls a second, not one
	// per wake-up.
	flushAfter = 5 * time.Millisecond
	// gatherFor: while records keep coming, the reader sleeps this long on a
	// runtime timer and then reads what piled up, instead of parking on the
	// doorbell. A parked reader is rung by the next commit (a ring buffer
	// wake-up the traced application pays for) and blocks in epoll_wait, a
	// system call, which keeps the Go runtime's sysmon thread polling every
	// 20 µs: measured at 6 k RPS, those polls were 12 % of the collector's
	// CPU and the doorbell's epoll another 6 %. It parks only once a read
	// finds nothing. Unless a quarter of the ring came in one read: then it
	// reads on at once.
	gatherFor = flushAfter
)

type grpcReceiver struct {
	cfg  *Config
	in   settings // made from cfg (settings_linux.go)
	set  receiver.Settings
	next consumer.Traces
	obs  *receiverhelper.ObsReport
	tb   *metadata.TelemetryBuilder

	cap     *capture.Capture
	dec     *capture.Decoder
	tracker *h2.Tracker
	mapper  *spanmap.Mapper
	ports   []uint16

	// The batch being filled by the tracker's emit, since batchAt.
	td      ptrace.Traces
	spans   ptrace.SpanSlice
	batchAt time.Time

	mu      sync.Mutex // guards the snapshots the telemetry callbacks read
	kernel  capture.Counters
	tstats  h2.Stats
	mstats  spanmap.Stats
	dstats  capture.DecodeStats
	dropped atomic.Int64
	stop    chan struct{}
	done    chan struct{}
	// The TLS rescan (tls::rescan_interval), when on.
	rescanStop context.CancelFunc
	rescanDone chan struct{}
	stopOnce   sync.Once
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	c := cfg.(*Config)
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{ReceiverID: set.ID, Transport: "ebpf", ReceiverCreateSettings: set})
	if err != nil {
		return nil, err
	}
	in := c.settings()
	r := &grpcReceiver{cfg: c, in: in, set: set, next: next, obs: obs, ports: in.ports}
	boot, err := bootclock.ID()
	if err != nil {
		return nil, fmt.Errorf("grpc receiver: read the boot id (span ids and the links to process spans are derived from it): %w", err)
	}
	mc := in.spans
	mc.BootID = boot
	// Connection and stream ids start over with every load: the instance
	// keeps the ids of this receiver's spans from those of any other.
	if _, err := rand.Read(mc.Instance[:]); err != nil {
		return nil, fmt.Errorf("grpc receiver: draw the instance id of its span ids: %w", err)
	}
	r.mapper = spanmap.New(mc)
	return r, nil
}

// Start loads and attaches the capture and starts the reader.
func (r *grpcReceiver) Start(context.Context, component.Host) (err error) {
	opts := r.in.capture
	opts.ProbeSelf, opts.NoFetch = probeSelf, noFetch
	c, err := capture.Open(opts)
	if err != nil {
		return fmt.Errorf("grpc receiver: %w", err)
	}
	r.cap = c
	r.set.Logger.Info("grpc receiver: capturing HTTP/2", zap.String("hook", string(c.Hook())), zap.String("why", c.Why()),
		zap.Strings("tls_libssl", c.LibSSL()), zap.Strings("tls_go", describeGo(c.GoBinaries())))
	if c.NoFetch() {
		r.set.Logger.Warn("grpc receiver: its programs are those built without "+kernelfeatures.Atomics.String()+" (why says why); their records go through the BPF ring buffer, numbered by the reader in ring order, and only the raw_syscalls hook is available", zap.String("why", c.Why()))
	}
	if skipped := c.GoSkipped(); len(skipped) > 0 {
		r.set.Logger.Warn("grpc receiver: running Go executables whose crypto/tls is not probed", zap.Int("count", len(skipped)), zap.Strings("why", skipped))
	}
	if skipped := c.LibSSLSkipped(); len(skipped) > 0 {
		r.set.Logger.Warn("grpc receiver: libssl files of running processes not probed", zap.Int("count", len(skipped)), zap.Strings("why", skipped))
	}
	offset := bootclock.Offset(time.Now())
	r.tracker = h2.NewTracker(r.in.tracker, r.emit, h2.OffsetClock(offset))
	r.dec = capture.NewDecoder(r.tracker)
	if err := r.startTelemetry(); err != nil {
		_ = c.Close()
		r.cap = nil
		return err
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.run()
	if r.in.capture.TLS && r.in.rescan > 0 {
		var ctx context.Context
		ctx, r.rescanStop = context.WithCancel(context.Background())
		r.rescanDone = make(chan struct{})
		go r.rescan(ctx, r.in.rescan)
	}
	return nil
}

// describeGo says, per Go executable probed, its Go, probes and where the
// functions were found.
func describeGo(bins []capture.GoBinary) []string {
	var out []string
	for _, b := range bins {
		from := ".symtab"
		if b.Pclntab {
			from = ".gopclntab"
		}
		out = append(out, fmt.Sprintf("%s (%s, %d probes, from %s)", b.Path, b.GoVersion, b.Probes, from))
	}
	return out
}

// rescan probes the TLS libraries and Go executables of processes started
// since the last look, every interval (tls::rescan_interval), until ctx is
// done (a scan under way stops at its next process).
func (r *grpcReceiver) rescan(ctx context.Context, every time.Duration) {
	defer close(r.rescanDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		got := r.cap.RescanTLS(ctx)
		if len(got.LibSSL)+len(got.Go) > 0 {
			r.set.Logger.Info("grpc receiver: TLS probes on files of processes started since",
				zap.Strings("tls_libssl", got.LibSSL), zap.Strings("tls_go", describeGo(got.Go)))
		}
		if len(got.Failed)+len(got.GoSkipped) > 0 {
			r.set.Logger.Warn("grpc receiver: TLS files of new processes not probed", zap.Strings("why", append(got.Failed, got.GoSkipped...)))
		}
	}
}

// emit maps a finished call into the current batch (the call is reused after).
func (r *grpcReceiver) emit(c *h2.Call) {
	if len(r.ports) > 0 && !slices.Contains(r.ports, c.Local.Port) && !slices.Contains(r.ports, c.Remote.Port) {
		return
	}
	if r.spans == (ptrace.SpanSlice{}) {
		r.td, r.spans = newTraces(r.in.serviceName)
		r.batchAt = time.Now()
	}
	r.mapper.Append(r.spans, c)
	if r.spans.Len() >= r.in.maxBatch {
		r.flush()
	}
}

// flush hands the batch to the pipeline: obsreport around it, a refusal
// counted (not retried).
func (r *grpcReceiver) flush() {
	if r.spans == (ptrace.SpanSlice{}) || r.spans.Len() == 0 {
		return
	}
	td, n := r.td, r.spans.Len()
	r.td, r.spans = ptrace.Traces{}, ptrace.SpanSlice{}
	ctx := context.Background()
	octx := r.obs.StartTracesOp(ctx)
	err := r.next.ConsumeTraces(octx, td)
	r.obs.EndTracesOp(octx, metadata.Type.String(), n, err)
	if err != nil {
		r.dropped.Add(int64(n))
		r.tb.ReceiverGrpcSpansDropped.Add(ctx, int64(n))
		r.set.Logger.Warn("grpc receiver: the pipeline refused spans; dropped (not retried)", zap.Int("spans", n), zap.Error(err))
	}
}

func (r *grpcReceiver) run() {
	defer close(r.done)
	rd := r.cap.Reader()
	lastExpire := time.Now()
	nap := time.NewTimer(time.Hour)
	nap.Stop()
	for {
		n, st := rd.Read(readChunk, r.dec.Item)
		if time.Since(lastExpire) >= expireEvery {
			r.tracker.Expire(bootclock.Now())
			lastExpire = time.Now()
			r.snapshot()
		}
		if st == ring.Full {
			continue
		}
		pending := r.spans != (ptrace.SpanSlice{})
		if pending && time.Since(r.batchAt) >= flushAfter {
			r.flush()
			pending = false
		}
		select {
		case <-r.stop:
			r.flush()
			return
		default:
		}
		if st == ring.Pending {
			// A producer is between its ticket and its publish: yield, briefly.
			time.Sleep(time.Millisecond)
			continue
		}
		if n > 0 || pending {
			// Busy: gather (see gatherFor), on a timer, not the doorbell.
			if 4*n >= r.in.capture.RingSlots {
				continue
			}
			wait := gatherFor
			if pending {
				wait = min(wait, max(flushAfter-time.Since(r.batchAt), 100*time.Microsecond))
			}
			nap.Reset(wait)
			select {
			case <-r.stop:
				nap.Stop()
			case <-nap.C:
			}
			continue
		}
		if _, err := ring.Park(rd, r.cap.Wait, parkTimeout); err != nil {
			r.set.Logger.Error("grpc receiver: doorbell", zap.Error(err))
			time.Sleep(parkTimeout)
		}
	}
}

// snapshot copies the counters the telemetry callbacks report.
func (r *grpcReceiver) snapshot() {
	k, err := r.cap.Counters()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.kernel = k
	}
	r.tstats = r.tracker.Stats()
	r.mstats = r.mapper.Stats()
	r.dstats = r.dec.Stats()
}

// Shutdown stops the producers, reads what they left, emits the calls that
// finished and releases everything.
func (r *grpcReceiver) Shutdown(context.Context) error {
	if r.cap == nil {
		return nil
	}
	if r.rescanStop != nil {
		r.rescanStop()
		<-r.rescanDone
	}
	var errs []error
	errs = append(errs, r.cap.Detach())
	r.stopOnce.Do(func() { close(r.stop) })
	r.cap.Interrupt()
	<-r.done
	// What the producers wrote before they were detached.
	for {
		if _, st := r.cap.Reader().Read(readChunk, r.dec.Item); st != ring.Full {
			break
		}
	}
	r.flush()
	r.snapshot()
	if r.tb != nil {
		r.tb.Shutdown()
	}
	errs = append(errs, r.cap.Close())
	r.cap = nil
	k, t, d := r.kernel, r.tstats, r.dstats
	r.set.Logger.Info("grpc receiver: stopped",
		zap.Uint64("calls", t.CallsEmitted), zap.Uint64("tracker_memory_bytes", t.MemoryUsed), zap.Uint64("records", d.Records), zap.Uint64("records_lost", d.Lost),
		zap.Uint64("kernel_desync", k.Desync), zap.Uint64("kernel_throttled", k.Throttled), zap.Uint64("bytes_copied", k.BytesCopied), zap.Int64("spans_dropped", r.dropped.Load()))
	return errors.Join(errs...)
}

// counterAttrs caches one attribute set per counter name.
type counterAttrs map[string]metric.MeasurementOption

func (c counterAttrs) get(name string) metric.MeasurementOption {
	o, ok := c[name]
	if !ok {
		o = metric.WithAttributeSet(attribute.NewSet(attribute.String("counter", name)))
		c[name] = o
	}
	return o
}

func (r *grpcReceiver) startTelemetry() (err error) {
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	var amu sync.Mutex
	// named observes the counters of a snapshot, each with its counter attribute.
	named := func(counters func() []capture.NamedCounter) metric.Int64Callback {
		attrs := counterAttrs{}
		return func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			cs := counters()
			r.mu.Unlock()
			amu.Lock()
			defer amu.Unlock()
			for _, c := range cs {
				o.Observe(int64(c.Value), attrs.get(c.Name))
			}
			return nil
		}
	}
	return errors.Join(
		r.tb.RegisterReceiverGrpcKernelCallback(named(func() []capture.NamedCounter { return r.kernel.Named() })),
		r.tb.RegisterReceiverGrpcTrackerCallback(named(func() []capture.NamedCounter {
			return append(namedFields(r.tstats), namedFields(r.mstats)...)
		})),
		r.tb.RegisterReceiverGrpcConnectionsLiveCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.tstats.ConnsLive))
			return nil
		}),
		r.tb.RegisterReceiverGrpcTrackerMemoryCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.tstats.MemoryUsed))
			return nil
		}),
		r.tb.RegisterReceiverGrpcRecordsLostCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.dstats.Lost + r.dstats.Malformed))
			return nil
		}),
	)
}

// namedFields lists the uint64 fields of a struct of counters by snake_case
// field name (an array of them, h2.Stats.Gaps, as gap_<reason>), without
// ConnsLive (a gauge of its own).
func namedFields(s any) []capture.NamedCounter {
	var out []capture.NamedCounter
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "ConnsLive" || f.Name == "MemoryUsed" || !f.IsExported() { // gauges, not counters
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Uint64:
			out = append(out, capture.NamedCounter{Name: snake(f.Name), Value: fv.Uint()})
		case reflect.Array:
			for j := range fv.Len() {
				out = append(out, capture.NamedCounter{Name: "gap_" + h2.GapReason(j).String(), Value: fv.Index(j).Uint()})
			}
		}
	}
	return out
}

// snake turns a Go field name into snake_case (HPACKErrors -> hpack_errors).
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, c := range rs {
		if unicode.IsUpper(c) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}
