// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/http1"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// probeSelf lets the tests whose TLS peers run in the test binary probe it
// (the collector never probes its own executable).
var probeSelf = false

// captureSelf lets the tests whose peers run in the test binary capture
// its calls; the collector skips its own (capture.Options.SkipPID): its
// exports would otherwise become spans it exports again.
var captureSelf = false

// noFetch makes the tests load the programs kernels without BPF atomic
// fetch get (capture.Options.NoFetch), on any kernel.
var noFetch = false

type grpcReceiver struct {
	cfg  *Config
	in   settings // made from cfg (settings_linux.go)
	set  receiver.Settings
	next consumer.Traces
	obs  *receiverhelper.ObsReport
	tb   *metadata.TelemetryBuilder

	cap     *capture.Capture
	dec     *capture.Decoder
	tracker *h2.Tracker    // HTTP/2 connections
	h1      *http1.Tracker // HTTP/1.x connections
	mapper  *spanmap.Mapper
	ports   []uint16

	// The batch being filled by the tracker's emit, since batchAt.
	td      ptrace.Traces
	spans   ptrace.SpanSlice
	batchAt time.Time

	mu      sync.Mutex // guards the snapshots the telemetry callbacks read
	kernel  capture.Counters
	tstats  h2.Stats
	h1stats http1.Stats
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
	if !captureSelf {
		opts.SkipPID = os.Getpid()
	}
	c, err := capture.Open(opts)
	if err != nil {
		return fmt.Errorf("grpc receiver: %w", err)
	}
	r.cap = c
	r.set.Logger.Info("grpc receiver: capturing", zap.Bool("http2", !r.in.capture.NoHTTP2), zap.Bool("http1", r.in.capture.HTTP1),
		zap.String("hook", string(c.Hook())), zap.String("why", c.Why()),
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
	r.h1 = http1.NewTracker(r.in.http1, r.emit, h2.OffsetClock(offset))
	r.dec = capture.NewDecoder(byProtocol{h2: r.tracker, h1: r.h1})
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
	k, t, h, d := r.kernel, r.tstats, r.h1stats, r.dstats
	r.set.Logger.Info("grpc receiver: stopped",
		zap.Uint64("calls", t.CallsEmitted), zap.Uint64("http1_calls", h.CallsEmitted), zap.Uint64("tracker_memory_bytes", t.MemoryUsed+uint64(r.h1.MemoryUsed())),
		zap.Uint64("records", d.Records), zap.Uint64("records_lost", d.Lost),
		zap.Uint64("kernel_desync", k.Desync), zap.Uint64("kernel_throttled", k.Throttled), zap.Uint64("bytes_copied", k.BytesCopied), zap.Int64("spans_dropped", r.dropped.Load()))
	return errors.Join(errs...)
}
