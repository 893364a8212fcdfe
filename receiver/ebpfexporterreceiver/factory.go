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
	)
}

// createMetrics wires one puller into the collector's scraper controller:
// the controller owns the ticker, the timeout and the obsreport of every
// collection; the puller loads the configs at Start and closes them at
// Shutdown.
func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	c := cfg.(*Config)
	p, err := newPuller(set, c)
	if err != nil {
		return nil, err
	}
	s, err := scraper.NewMetrics(p.scrape, scraper.WithStart(p.start), scraper.WithShutdown(p.shutdown))
	if err != nil {
		return nil, err
	}
	return scraperhelper.NewMetricsController(&c.ControllerConfig, set, next,
		scraperhelper.AddMetricsScraper(metadata.Type, s))
}
