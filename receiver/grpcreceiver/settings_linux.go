// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"slices"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/http1"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// settings are the inner components' settings, all made from the Config
// here (TestSettingsFromConfig checks that every field arrives).
type settings struct {
	capture capture.Options
	tracker h2.Config
	http1   http1.Config
	spans   spanmap.Config // without BootID and Instance (drawn at creation)
	// the receiver's own
	ports       []uint16
	maxBatch    int
	serviceName string
	rescan      time.Duration
}

func (c *Config) settings() settings {
	// max_memory is both trackers' together: halved when both protocols
	// are on (a tracker of a protocol turned off gets no connection).
	h2mem, h1mem := c.MaxMemory, c.MaxMemory
	if c.Protocols.HTTP2 && c.Protocols.HTTP1 {
		h2mem, h1mem = c.MaxMemory/2, c.MaxMemory-c.MaxMemory/2
	}
	return settings{
		capture: capture.Options{
			Hook:       capture.Hook(c.Hook),
			RingSlots:  c.RingSlots,
			MaxConns:   c.MaxConnections,
			HeaderCap:  c.MaxHeaderBlock,
			Rate:       c.MaxCaptureRate,
			UserRate:   c.MaxCaptureRatePerUser,
			FrameCost:  c.CaptureFrameCost,
			HTTP1:      c.Protocols.HTTP1,
			NoHTTP2:    !c.Protocols.HTTP2,
			TLS:        c.TLS.Enabled,
			LibSSL:     slices.Clone(c.TLS.LibSSLPaths),
			GoBinaries: slices.Clone(c.TLS.GoBinaries),
			Filter: capture.ProcFilter{
				IncludeExecutables: slices.Clone(c.TLS.IncludeExecutables), ExcludeExecutables: slices.Clone(c.TLS.ExcludeExecutables),
				IncludeCgroups: slices.Clone(c.TLS.IncludeCgroups), ExcludeCgroups: slices.Clone(c.TLS.ExcludeCgroups),
			},
		},
		tracker: h2.Config{
			MaxConns:           c.MaxConnections,
			MaxStreamsPerConn:  c.MaxStreamsPerConnection,
			MaxHeaderBlock:     c.MaxHeaderBlock,
			IdleTimeout:        c.IdleTimeout,
			MaxHeaderTableSize: uint32(c.MaxHeaderTableSize), // Validate: at most 1 MiB
			MemoryBudget:       h2mem,
		},
		// The HTTP/2 tracker's bounds, where HTTP/1.x has their like: a
		// request queued unanswered is its open stream, a message head its
		// header block.
		http1: http1.Config{
			MaxConns:       c.MaxConnections,
			MaxPipelined:   c.MaxStreamsPerConnection,
			MaxHeaderBytes: c.MaxHeaderBlock,
			IdleTimeout:    c.IdleTimeout,
			MemoryBudget:   h1mem,
		},
		spans: spanmap.Config{
			KnownMethods: slices.Clone(c.Spans.Methods), MaxMethods: c.Spans.MaxMethods,
			MaxValueLength: c.Spans.MaxAttributeLength, MaxStatusMessageLength: c.Spans.MaxStatusMessageLength,
			URLQuery: c.Spans.URLQuery,
		},
		ports:       slices.Clone(c.Ports),
		maxBatch:    c.MaxBatch,
		serviceName: c.ServiceName,
		rescan:      c.TLS.RescanInterval,
	}
}
