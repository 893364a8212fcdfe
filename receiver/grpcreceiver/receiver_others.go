// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package grpcreceiver

import (
	"context"
	"fmt"
	"runtime"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

func createTraces(context.Context, receiver.Settings, component.Config, consumer.Traces) (receiver.Traces, error) {
	return nil, fmt.Errorf("the grpc receiver captures HTTP/2 with eBPF on Linux and cannot run on %s; remove it from this collector's configuration", runtime.GOOS)
}
