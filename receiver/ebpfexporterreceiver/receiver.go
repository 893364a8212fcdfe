// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporterreceiver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/ebpfexporter"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadata"
)

// instances holds one ebpfReceiver per receiver config, shared by its
// metrics and traces pipelines: the configs are loaded once.
var instances sharedcomponent.Map[*Config, *ebpfReceiver]

// ebpfReceiver is one loaded ebpfexporter.Exporter and the receiver's own
// telemetry read from it. The metrics side is a scraper (the collector's
// scraperhelper pulls the maps every collection_interval); the traces side
// is the Exporter's span ring buffer readers, started with it when the
// receiver is in a traces pipeline.
type ebpfReceiver struct {
	set receiver.Settings
	ee  *ebpfexporter.Exporter
	tb  *metadata.TelemetryBuilder

	traces    consumer.Traces // nil: in no traces pipeline
	tracesObs *receiverhelper.ObsReport
}

var (
	stateLoaded   = metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "loaded")))
	stateFailed   = metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "failed")))
	stateAttached = attribute.String("state", "attached")
	stateNotAtt   = attribute.String("state", "failed")
)

func sharedReceiver(set receiver.Settings, cfg *Config) (*sharedcomponent.Component[*ebpfReceiver], error) {
	return instances.LoadOrStore(cfg, func() (*ebpfReceiver, error) {
		ee, err := ebpfexporter.New(cfg.Config, set.Logger)
		if err != nil {
			return nil, fmt.Errorf("ebpf_exporter receiver: %w", err)
		}
		return &ebpfReceiver{set: set, ee: ee}, nil
	})
}

// setTraces makes the receiver read its span ring buffers into next.
func (r *ebpfReceiver) setTraces(set receiver.Settings, next consumer.Traces) error {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "ebpf",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return err
	}
	r.traces, r.tracesObs = next, obs
	r.ee.SetSpanSink(r.consumeSpans)
	return nil
}

func (r *ebpfReceiver) consumeSpans(ctx context.Context, td ptrace.Traces) error {
	n := td.SpanCount()
	ctx = r.tracesObs.StartTracesOp(ctx)
	err := r.traces.ConsumeTraces(ctx, td)
	r.tracesObs.EndTracesOp(ctx, metadata.Type.String(), n, err)
	return err
}

// Start loads and attaches every config, once for all the receiver's
// pipelines. One that fails (a bad key size, a missing object, or with
// strict a program that cannot attach) is logged with its reason and
// counted while the others run.
func (r *ebpfReceiver) Start(ctx context.Context, _ component.Host) (err error) {
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	if err = r.ee.Start(ctx); err != nil {
		return fmt.Errorf("ebpf_exporter receiver: %w", err)
	}
	for name, ferr := range r.ee.Failures() {
		r.set.Logger.Warn("ebpf_exporter receiver: config not loaded; the others run", zap.String("config", name), zap.Error(ferr))
	}
	return errors.Join(
		r.tb.RegisterReceiverEbpfExporterConfigsCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.ee.Stats()
			o.Observe(int64(st.ConfigsLoaded), stateLoaded)
			o.Observe(int64(st.ConfigsFailed), stateFailed)
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterProgramsCallback(func(_ context.Context, o metric.Int64Observer) error {
			progs := r.ee.Programs()
			for _, cfg := range slices.Sorted(maps.Keys(progs)) {
				for _, prog := range slices.Sorted(maps.Keys(progs[cfg])) {
					state := stateAttached
					if progs[cfg][prog] != nil {
						state = stateNotAtt
					}
					o.Observe(1, metric.WithAttributes(attribute.String("config", cfg), attribute.String("program", prog), state))
				}
			}
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterDecoderErrorsCallback(func(_ context.Context, o metric.Int64Observer) error {
			for name, n := range r.ee.Stats().DecoderErrors {
				o.Observe(int64(n), metric.WithAttributes(attribute.String("config", name)))
			}
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterPerfEventsLostCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.ee.Stats().PerfEventsLost))
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterSpanDecodeErrorsCallback(func(_ context.Context, o metric.Int64Observer) error {
			for name, st := range r.ee.Stats().Spans {
				o.Observe(int64(st.DecodeErrors), metric.WithAttributes(attribute.String("config", name)))
			}
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterSpansDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.ee.Stats()
			for name := range st.Spans {
				for _, reason := range []string{budget.DropQueueFull, budget.DropRefused} {
					o.Observe(int64(st.Dropped[budget.DropKey{Config: name, Reason: reason}]),
						metric.WithAttributes(attribute.String("config", name), attribute.String("reason", reason)))
				}
			}
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterSpansQueuedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(r.ee.Stats().QueuedSpans)
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterSeriesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(r.ee.Stats().Series)
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterMemoryCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(r.ee.Stats().Memory)
			return nil
		}),
		r.tb.RegisterReceiverEbpfExporterSeriesDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for k, n := range r.ee.Stats().Dropped {
				if k.Reason == budget.DropMaxSeries || k.Reason == budget.DropMaxMemory {
					o.Observe(int64(n), metric.WithAttributes(attribute.String("config", k.Config), attribute.String("reason", k.Reason)))
				}
			}
			return nil
		}),
	)
}

// scrape reads every running config's maps (the scraper controller calls
// it every collection_interval).
// scrape reads the maps within the scraper's timeout (ctx): what was read
// before it ran out is delivered, as a partial scrape naming the configs
// skipped.
func (r *ebpfReceiver) scrape(ctx context.Context) (pmetric.Metrics, error) {
	md, skipped, err := r.ee.CollectContext(ctx)
	if err != nil {
		return md, scrapererror.NewPartialScrapeError(err, skipped)
	}
	return md, nil
}

// Shutdown closes every link, reader, program and map, once for all the
// receiver's pipelines.
func (r *ebpfReceiver) Shutdown(ctx context.Context) error {
	if r.tb != nil {
		r.tb.Shutdown()
	}
	return r.ee.Shutdown(ctx)
}
