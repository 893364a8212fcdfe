// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporterreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadata"
)

// NewFactory returns the factory of the ebpf_exporter receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		receiver.WithMetrics(createMetrics, metadata.MetricsStability),
		receiver.WithTraces(createTraces, metadata.TracesStability),
	)
}

// createMetrics wires the shared receiver into the collector's scraper
// controller: the controller owns the ticker, the timeout and the obsreport
// of every collection; starting the scraper starts the shared receiver
// (once, whichever pipeline comes first) and the scraper only collects.
func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	c := cfg.(*Config)
	shared, err := sharedReceiver(set, c)
	if err != nil {
		return nil, err
	}
	s, err := scraper.NewMetrics(shared.C.scrape, scraper.WithStart(shared.Start), scraper.WithShutdown(shared.Shutdown))
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(&c.ControllerConfig, set, next,
		scraperhelper.AddMetricsScraper(metadata.Type, s))
}

// createTraces makes the shared receiver read the configs' tracing.spans
// ring buffers into next.
func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	shared, err := sharedReceiver(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	if err := shared.C.setTraces(set, next); err != nil {
		return nil, err
	}
	return shared, nil
}
