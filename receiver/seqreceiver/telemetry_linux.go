// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
)

func (r *seqReceiver) startTelemetry() (err error) {
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	return errors.Join(
		r.registerContainerTelemetry(),
		r.tb.RegisterReceiverSeqTicketsIssuedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.rd.Head()))
			return nil
		}),
		r.tb.RegisterReceiverSeqRingOccupancyCallback(func(_ context.Context, o metric.Int64Observer) error {
			pos := r.readPos.Load() // first: the head only grows
			o.Observe(int64(r.rd.Head() - pos))
			return nil
		}),
		r.tb.RegisterReceiverSeqRingCapacityCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.cfg.RingSlots))
			return nil
		}),
		r.tb.RegisterReceiverSeqEventsShedCallback(func(_ context.Context, o metric.Int64Observer) error {
			c, err := r.seq.Counters()
			if err != nil {
				return err
			}
			for t, n := range c.Shed {
				if n > 0 && t < len(r.typeAttrs) {
					o.Observe(int64(n), r.typeAttrs[t].(metric.ObserveOption))
				}
			}
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesLiveCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().Live))
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesEvictedCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.Evicted-st.EvictedMem), reasonMaxProcesses)
			o.Observe(int64(st.EvictedMem), reasonMemory)
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessMemoryCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().Memory))
			return nil
		}),
		r.tb.RegisterReceiverSeqArgsTruncatedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().ArgsTruncated))
			return nil
		}),
		r.tb.RegisterReceiverSeqSpanEventArgsDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.EventArgsDropped), reasonProcessLimit)
			o.Observe(int64(st.EventArgsDroppedMem), reasonMemory)
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesExitMissedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(r.modelStats.Load().ExitMissed))
			return nil
		}),
		r.tb.RegisterReceiverSeqProcessesUnknownCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.Unknown), unknownNeverSeen)
			o.Observe(int64(st.AfterEviction), unknownEvicted)
			return nil
		}),
		r.tb.RegisterReceiverSeqSpansDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.DroppedSpans), reasonQueueFull)
			o.Observe(int64(st.DroppedSpansMem), reasonMemory)
			return nil
		}),
		r.tb.RegisterReceiverSeqSpanEventsDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			st := r.modelStats.Load()
			o.Observe(int64(st.DroppedEvents), reasonSpanLimit)
			o.Observe(int64(st.DroppedEventsMem), reasonMemory)
			return nil
		}),
		r.tb.RegisterReceiverSeqKernelEventsCallback(func(_ context.Context, o metric.Int64Observer) error {
			c, err := r.seq.Counters()
			if err != nil {
				return err
			}
			for t, n := range c.Events {
				if n > 0 && t < len(r.typeAttrs) {
					o.Observe(int64(n), r.typeAttrs[t].(metric.ObserveOption))
				}
			}
			return nil
		}),
	)
}

var (
	unknownNeverSeen = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "never_seen")))
	unknownEvicted   = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "evicted")))

	// The limits of the process model (traces::, max_args*).
	reasonMaxProcesses = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "max_processes")))
	reasonMemory       = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "memory")))
	reasonProcessLimit = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "process_limit")))
	reasonSpanLimit    = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "span_limit")))
	reasonQueueFull    = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "queue_full")))
)

func (r *seqReceiver) flushTallies(ctx context.Context) {
	for t, n := range r.delivered {
		if n > 0 {
			r.tb.ReceiverSeqEventsDelivered.Add(ctx, n, r.typeAttrs[t].(metric.AddOption))
			r.delivered[t] = 0
		}
	}
	for reason, n := range r.lost {
		r.tb.ReceiverSeqEventsLost.Add(ctx, n, metric.WithAttributes(attribute.String("reason", reason)))
		delete(r.lost, reason)
	}
}
