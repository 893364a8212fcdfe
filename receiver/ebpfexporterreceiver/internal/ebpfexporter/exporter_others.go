// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package ebpfexporter

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spans"
)

// Exporter is only implemented on Linux.
type Exporter struct{}

var errNotLinux = errors.New("ebpf_exporter configs can only be loaded on Linux")

// New fails everywhere but on Linux.
func New(cfg Config, _ *zap.Logger) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, errNotLinux
}

// Start fails everywhere but on Linux.
func (*Exporter) Start(context.Context) error { return errNotLinux }

// Shutdown does nothing.
func (*Exporter) Shutdown(context.Context) error { return nil }

// Collect returns no metrics.
func (*Exporter) Collect() pmetric.Metrics { return pmetric.NewMetrics() }

// CollectContext returns no metrics.
func (*Exporter) CollectContext(context.Context) (pmetric.Metrics, int, error) {
	return pmetric.NewMetrics(), 0, nil
}

// Failures is empty.
func (*Exporter) Failures() map[string]error { return nil }

// Stats is empty.
func (*Exporter) Stats() Stats { return Stats{} }

// SetSpanSink does nothing.
func (*Exporter) SetSpanSink(spans.Sink) {}

// Programs is empty.
func (*Exporter) Programs() map[string]map[string]error { return nil }
