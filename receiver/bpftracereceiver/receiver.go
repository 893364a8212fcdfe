// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"
	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/metadata"
)

type bpftraceReceiver struct {
	cfg     *Config
	set     receiver.Settings
	obs     *receiverhelper.ObsReport
	logs    consumer.Logs    // nil when no logs pipeline uses the receiver
	metrics consumer.Metrics // nil when no metrics pipeline uses the receiver
	runner  *bpftrace.Runner
	tb      *metadata.TelemetryBuilder
}

func newReceiver(set receiver.Settings, cfg *Config) (*bpftraceReceiver, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "bpftrace",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	return &bpftraceReceiver{cfg: cfg, set: set, obs: obs}, nil
}

// Start starts every script in the background. A script that cannot start
// (no bpftrace, a compile error) is logged, counted and retried with
// backoff; it never fails the collector.
func (r *bpftraceReceiver) Start(ctx context.Context, _ component.Host) (err error) {
	if r.metrics == nil || r.logs == nil {
		r.set.Logger.Warn("bpftrace receiver: the scripts' maps go only to a metrics pipeline and their printed lines only to a logs pipeline; add the receiver to both to get all of it",
			zap.Bool("metrics_pipeline", r.metrics != nil), zap.Bool("logs_pipeline", r.logs != nil))
	}
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	if r.runner, err = bpftrace.New(r.cfg.Config, r.set.Logger, r); err != nil {
		return fmt.Errorf("bpftrace receiver: %w", err)
	}
	if err = r.runner.Start(ctx); err != nil {
		return fmt.Errorf("bpftrace receiver: %w", err)
	}
	return r.registerTelemetry()
}

// registerTelemetry exports each script's supervisor counters.
func (r *bpftraceReceiver) registerTelemetry() error {
	counter := func(get func(bpftrace.Counters) uint64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			for name, c := range r.runner.Counters() {
				o.Observe(int64(get(c)), metric.WithAttributes(attribute.String("script", name)))
			}
			return nil
		}
	}
	return errors.Join(
		r.tb.RegisterReceiverBpftraceRestartsCallback(counter(func(c bpftrace.Counters) uint64 { return c.Restarts })),
		r.tb.RegisterReceiverBpftraceStartFailuresCallback(counter(func(c bpftrace.Counters) uint64 { return c.StartFailures })),
		r.tb.RegisterReceiverBpftraceLostEventsCallback(counter(func(c bpftrace.Counters) uint64 { return c.LostEvents })),
		r.tb.RegisterReceiverBpftraceParseErrorsCallback(counter(func(c bpftrace.Counters) uint64 { return c.ParseErrors })),
		r.tb.RegisterReceiverBpftraceRedactedCallback(counter(func(c bpftrace.Counters) uint64 { return c.Redacted })),
		r.tb.RegisterReceiverBpftraceUnmappedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for name, c := range r.runner.Counters() {
				for typ, n := range c.Unmapped {
					o.Observe(int64(n), metric.WithAttributes(attribute.String("script", name), attribute.String("type", typ)))
				}
			}
			return nil
		}),
	)
}

// ConsumeLogs hands the scripts' printed lines to the logs pipeline (the
// bpftrace.Output; calls come from one goroutine).
func (r *bpftraceReceiver) ConsumeLogs(ld plog.Logs) {
	if r.logs == nil {
		return
	}
	ctx := r.obs.StartLogsOp(context.Background())
	n := ld.LogRecordCount()
	err := r.logs.ConsumeLogs(ctx, ld)
	r.obs.EndLogsOp(ctx, metadata.Type.String(), n, err)
	if err != nil {
		r.set.Logger.Warn("bpftrace receiver: the pipeline refused a batch of log records", zap.Int("records", n), zap.Error(err))
	}
}

// ConsumeMetrics hands the scripts' maps to the metrics pipeline.
func (r *bpftraceReceiver) ConsumeMetrics(md pmetric.Metrics) {
	if r.metrics == nil {
		return
	}
	ctx := r.obs.StartMetricsOp(context.Background())
	n := md.DataPointCount()
	err := r.metrics.ConsumeMetrics(ctx, md)
	r.obs.EndMetricsOp(ctx, metadata.Type.String(), n, err)
	if err != nil {
		r.set.Logger.Warn("bpftrace receiver: the pipeline refused a batch of metrics", zap.Int("data_points", n), zap.Error(err))
	}
}

// Shutdown interrupts every bpftrace (their END output is still delivered),
// kills what is left when ctx ends, and reaps them all.
func (r *bpftraceReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.runner != nil {
		err = r.runner.Shutdown(ctx)
	}
	if r.tb != nil {
		r.tb.Shutdown()
	}
	return err
}
