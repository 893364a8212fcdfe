// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporterreceiver

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/ebpfexporter"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadata"
)

// puller is the scraper behind the receiver: one ebpfexporter.Exporter and
// the receiver's own telemetry read from its Stats.
type puller struct {
	set receiver.Settings
	ee  *ebpfexporter.Exporter
	tb  *metadata.TelemetryBuilder
}

var (
	stateLoaded = metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "loaded")))
	stateFailed = metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "failed")))
)

func newPuller(set receiver.Settings, cfg *Config) (*puller, error) {
	ee, err := ebpfexporter.New(cfg.Config, set.Logger)
	if err != nil {
		return nil, fmt.Errorf("ebpf_exporter receiver: %w", err)
	}
	return &puller{set: set, ee: ee}, nil
}

// start loads and attaches every config. One that fails (a kprobe on a
// kernel without kprobes, a bad key size) is logged with its reason and
// counted while the others run.
func (p *puller) start(ctx context.Context, _ component.Host) (err error) {
	if p.tb, err = metadata.NewTelemetryBuilder(p.set.TelemetrySettings); err != nil {
		return err
	}
	if err = p.ee.Start(ctx); err != nil {
		return fmt.Errorf("ebpf_exporter receiver: %w", err)
	}
	failures := p.ee.Failures()
	for name, ferr := range failures {
		p.set.Logger.Warn("ebpf_exporter receiver: config not loaded; the others run", zap.String("config", name), zap.Error(ferr))
	}
	return errors.Join(
		p.tb.RegisterReceiverEbpfExporterConfigsCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := p.ee.Stats()
			o.Observe(int64(st.ConfigsLoaded), stateLoaded)
			o.Observe(int64(st.ConfigsFailed), stateFailed)
			return nil
		}),
		p.tb.RegisterReceiverEbpfExporterDecoderErrorsCallback(func(_ context.Context, o metric.Int64Observer) error {
			for name, n := range p.ee.Stats().DecoderErrors {
				o.Observe(int64(n), metric.WithAttributes(attribute.String("config", name)))
			}
			return nil
		}),
		p.tb.RegisterReceiverEbpfExporterPerfEventsLostCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(p.ee.Stats().PerfEventsLost))
			return nil
		}),
	)
}

func (p *puller) scrape(context.Context) (pmetric.Metrics, error) {
	return p.ee.Collect(), nil
}

func (p *puller) shutdown(ctx context.Context) error {
	if p.tb != nil {
		p.tb.Shutdown()
	}
	return p.ee.Shutdown(ctx)
}
