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

// How the reader paces itself.
const (
	readChunk   = 4096                   // ring items per Read
	parkTimeout = 100 * time.Millisecond // longest sleep while the ring is empty
	expireEvery = time.Second            // idle connections and streams looked at
	// flushAfter: a batch waits at most this long for more spans before it
	// goes to the pipeline (unless max_batch fills it first), so that a
	// steady load makes a few hundred ConsumeTraces calls a second, not one
	// per wake-up.
	flushAfter = 5 * time.Millisecond
	// gatherFor: while records keep coming, the reader sleeps this long on a
	// runtime timer and then reads what piled up, instead of parking on the
	// doorbell. A parked reader is rung by the next commit (a ring buffer
	// wake-up the traced application pays for) and blocks in epoll_wait, a
	// system call, which keeps the Go runtime's sysmon thread polling every
	// 20 µs: measured at 6 k RPS, those polls were 12 % of the collector's
	// CPU and the doorbell's epoll another 6 %. It parks only once a read
	// finds nothing. Unless a quarter of the ring came in one read: then it
	// reads on at once.
	gatherFor = flushAfter
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
	lastExpire := time.Now()
	nap := time.NewTimer(time.Hour)
	nap.Stop()
	for {
		n, st := rd.Read(readChunk, r.dec.Item)
		if time.Since(lastExpire) >= expireEvery {
			r.tracker.Expire(bootclock.Now())
			lastExpire = time.Now()
			r.snapshot()
		}
		if st == ring.Full {
			continue
		}
		pending := r.spans != (ptrace.SpanSlice{})
		if pending && time.Since(r.batchAt) >= flushAfter {
			r.flush()
			pending = false
		}
		select {
		case <-r.stop:
			r.flush()
			return
		default:
		}
		if st == ring.Pending {
			// A producer is between its ticket and its publish: yield, briefly.
			time.Sleep(time.Millisecond)
			continue
		}
		if n > 0 || pending {
			// Busy: gather (see gatherFor), on a timer, not the doorbell.
			if 4*n >= r.in.capture.RingSlots {
				continue
			}
			wait := gatherFor
			if pending {
				wait = min(wait, max(flushAfter-time.Since(r.batchAt), 100*time.Microsecond))
			}
			nap.Reset(wait)
			select {
			case <-r.stop:
				nap.Stop()
			case <-nap.C:
			}
			continue
		}
		if _, err := ring.Park(rd, r.cap.Wait, parkTimeout); err != nil {
			r.set.Logger.Error("grpc receiver: doorbell", zap.Error(err))
			time.Sleep(parkTimeout)
		}
	}
}
