// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"
	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/metadata"
)

// NewFactory returns the factory of the bpftrace receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		receiver.WithLogs(createLogs, metadata.LogsStability),
		receiver.WithMetrics(createMetrics, metadata.MetricsStability),
	)
}

// createDefaultConfig: no scripts (Validate asks for one), the bpftrace on
// PATH and the default budget. The runner applies the same defaults to a
// zero Binary, MaxBufferedBytes or MaxLineBytes; they are set here as well
// so that the defaults are those of the Config (and of the README's table).
func createDefaultConfig() *Config {
	return &Config{Config: bpftrace.Config{
		Binary:           bpftrace.DefaultBinary,
		MaxBufferedBytes: bpftrace.DefaultMaxBufferedBytes,
		MaxLineBytes:     bpftrace.DefaultMaxLineBytes,
	}}
}

// One instance per configuration runs the scripts once for both its logs
// and its metrics pipeline.
var instances sharedcomponent.Map[*Config, *bpftraceReceiver]

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	e, err := instances.LoadOrStore(cfg.(*Config), func() (*bpftraceReceiver, error) { return newReceiver(set, cfg.(*Config)) })
	if err != nil {
		return nil, err
	}
	e.C.logs = next
	return e, nil
}

func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	e, err := instances.LoadOrStore(cfg.(*Config), func() (*bpftraceReceiver, error) { return newReceiver(set, cfg.(*Config)) })
	if err != nil {
		return nil, err
	}
	e.C.metrics = next
	return e, nil
}
