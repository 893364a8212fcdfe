// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/otelcol-seq/otelcol-seq/connector/rpcgraphconnector/internal/metadata"
)

// NewFactory returns the factory of the rpcgraph connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
	)
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return newConnector(set.Logger, cfg.(*Config), next), nil
}
