// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package seqreceiver

import (
	"context"
	"fmt"
	"runtime"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

func errNotLinux() error {
	return fmt.Errorf("the seq receiver captures Linux process events with eBPF and cannot run on %s; remove it from this collector's configuration", runtime.GOOS)
}

func createLogs(context.Context, receiver.Settings, component.Config, consumer.Logs) (receiver.Logs, error) {
	return nil, errNotLinux()
}

func createTraces(context.Context, receiver.Settings, component.Config, consumer.Traces) (receiver.Traces, error) {
	return nil, errNotLinux()
}
