// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package sequencer

import (
	"fmt"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
)

// NewSource returns the reader of the transport in use. The maps are new:
// every ticket from 0 on is the reader's to deliver or count lost. A ring
// buffer or perf reader is released by Close.
func (s *Sequencer) NewSource() (transport.Source, error) {
	if s.transport == TransportSequencer {
		return transport.NewSlots(s.Control(), s.Slots(), s)
	}
	rec := transport.Records{
		Header:    ring.TxHeader,
		MinLen:    event.FixedSize,
		Trim:      event.Trim,
		OnArrival: s.opts.OnArrival,
		Failed: func() (uint64, uint64, error) {
			c, err := s.Counters()
			return c.TotalFailed(), c.PerfFailed, err
		},
	}
	var b *transport.Buf
	var err error
	switch s.transport {
	case TransportRingBuf:
		rec.Numbered, rec.FailReason = s.opts.NoFetch, ring.ReserveFailed
		b, err = transport.NewRingBuf(s.coll.Maps["seq_rb"], s.ctl, s.opts.RingSlots, rec)
	case TransportPerfBuf:
		rec.FailReason = ring.OutputFailed
		b, err = transport.NewPerf(s.coll.Maps["seq_perf"], s.ctl, s.ringLen, rec)
	default:
		return nil, fmt.Errorf("transport %s has no buffer reader", s.transport)
	}
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, b.Close)
	return b, nil
}
