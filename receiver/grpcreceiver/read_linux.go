// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
)

// How the reader paces itself: the ring's Pacer (gather, linger, back-off,
// park), with the grpc receiver's own windows.
const (
	readChunk = 4096 // ring items per Read
	// parkTimeout: the longest park. Shorter than the seq receiver's (1 s):
	// this loop also expires idle connections and streams (expireEvery)
	// and snapshots the counters, which a longer park would delay.
	parkTimeout = 100 * time.Millisecond
	expireEvery = time.Second // idle connections and streams looked at
	// flushAfter: a batch waits at most this long for more spans before it
	// goes to the pipeline (unless max_batch fills it first), so that a
	// steady load makes a few hundred ConsumeTraces calls a second, not one
	// per wake-up; also the longest gather. The seq receiver's log records
	// wait 20 ms: each receiver keeps the window it was measured with.
	flushAfter = 5 * time.Millisecond
)

// emit maps a finished call into the current batch (the call is reused after).
func (r *grpcReceiver) emit(c *h2.Call) {
	if len(r.ports) > 0 && !slices.Contains(r.ports, c.Local.Port) && !slices.Contains(r.ports, c.Remote.Port) {
		return
	}
	if r.spans == (ptrace.SpanSlice{}) {
		r.td, r.spans = newTraces(r.in.serviceName)
		r.batchAt = time.Now()
	}
	r.mapper.Append(r.spans, c)
	if r.spans.Len() >= r.in.maxBatch {
		r.flush()
	}
}

// flush hands the batch to the pipeline: obsreport around it, a refusal
// counted (not retried).
func (r *grpcReceiver) flush() {
	if r.spans == (ptrace.SpanSlice{}) || r.spans.Len() == 0 {
		return
	}
	td, n := r.td, r.spans.Len()
	r.td, r.spans = ptrace.Traces{}, ptrace.SpanSlice{}
	ctx := context.Background()
	octx := r.obs.StartTracesOp(ctx)
	err := r.next.ConsumeTraces(octx, td)
	r.obs.EndTracesOp(octx, metadata.Type.String(), n, err)
	if err != nil {
		r.dropped.Add(int64(n))
		r.tb.ReceiverGrpcSpansDropped.Add(ctx, int64(n))
		r.set.Logger.Warn("grpc receiver: the pipeline refused spans; dropped (not retried)", zap.Int("spans", n), zap.Error(err))
	}
}

func (r *grpcReceiver) run() {
	defer close(r.done)
	rd := r.cap.Reader()
	pace := ring.Pacer{FlushAfter: flushAfter, ParkTimeout: parkTimeout, Slots: r.in.capture.RingSlots}
	lastExpire := time.Now()
	nap := time.NewTimer(time.Hour)
	nap.Stop()
	for {
		pace.Read()
		n, st := rd.Read(readChunk, r.dec.Item)
		if time.Since(lastExpire) >= expireEvery {
			now := bootclock.Now()
			r.tracker.Expire(now)
			r.h1.Expire(now)
			lastExpire = time.Now()
			r.snapshot()
		}
		if pace.Due(r.batchStart()) {
			r.flush()
		}
		step := pace.Next(n, st, r.batchStart())
		if step.Action == ring.PaceAgain {
			continue
		}
		select {
		case <-r.stop:
			r.flush()
			return
		default:
		}
		switch step.Action {
		case ring.PaceBackoff, ring.PaceLinger:
			ring.Sleep(step.Wait)
		case ring.PaceGather:
			// On a runtime timer, not the doorbell: a parked reader is rung
			// by the next commit (a ring buffer wake-up the traced
			// application pays for) and blocks in epoll_wait, a system call,
			// which keeps the Go runtime's sysmon thread polling every 20 µs:
			// measured at 6 k RPS, those polls were 12 % of the collector's
			// CPU and the doorbell's epoll another 6 %.
			nap.Reset(step.Wait)
			select {
			case <-r.stop:
				nap.Stop()
			case <-nap.C:
			}
		case ring.PacePark:
			if step.Flush {
				r.flush()
			}
			if _, err := ring.Park(rd, r.cap.Wait, step.Wait); err != nil {
				r.set.Logger.Error("grpc receiver: doorbell", zap.Error(err))
				time.Sleep(parkTimeout)
			}
		}
	}
}

// batchStart is when the batch being filled began; zero when none is.
func (r *grpcReceiver) batchStart() time.Time {
	if r.spans == (ptrace.SpanSlice{}) {
		return time.Time{}
	}
	return r.batchAt
}
