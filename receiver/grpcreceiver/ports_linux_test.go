// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// ports keeps the calls with a listed local or remote port.
func TestPortsFilter(t *testing.T) {
	cfg := createDefaultConfig()
	r := &grpcReceiver{cfg: cfg, in: cfg.settings(), ports: []uint16{50051}, mapper: spanmap.New(spanmap.Config{BootID: "boot"})}
	r.emit(call(h2.SideClient, 0)) // remote port 50051
	r.emit(call(h2.SideServer, 0)) // local port 50051
	other := call(h2.SideClient, 0)
	other.Remote.Port = 443
	r.emit(other)
	assert.Equal(t, 2, r.spans.Len())
}

func TestSnake(t *testing.T) {
	assert.Equal(t, "hpack_errors", snake("HPACKErrors"))
	assert.Equal(t, "conns_without_open", snake("ConnsWithoutOpen"))
	assert.Equal(t, "bytes_holes", snake("BytesHoles"))
}
