// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"slices"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
)

// After the pipeline refuses a batch, the reader waits before it reads
// again: backoffFirst, doubling per refused flush up to backoffMax, back
// to no wait after the first flush the pipelines accept. Meanwhile the
// records wait in the kernel ring, where pressure::shed and lapping
// (seq.lost) account for what does not fit.
const (
	backoffFirst = 5 * time.Millisecond
	backoffMax   = time.Second
	backoffSlice = 10 * time.Millisecond // a backing-off reader sees Shutdown within this
)

// Signals for the backoff's bookkeeping.
const (
	signalLogs = iota
	signalTraces
	numSignals
)

// backoff paces the reader while the pipelines refuse batches (a memory
// limiter, a full sending queue): reading at full speed would only turn the
// ring's records into refused batches. A backing-off reader leaves them in
// the ring, where the kernel's policy applies — pressure::shed drops the
// listed classes (never exits) before their ticket, and a lapped reader
// reports seq.lost gaps — every event still counted exactly once.
type backoff struct {
	wait    time.Duration // the next wait; 0 while the pipelines accept
	due     bool          // a refusal since the last wait: wait before reading
	refused [numSignals]bool
	logged  [numSignals]time.Time // when a refusal was last logged, per signal
}

// outcome records a Consume call's result: a refusal doubles the wait (once
// per wait, however many pipelines refused); a flush accepted by every
// pipeline that was called ends the backoff (resumed: it was on).
func (b *backoff) outcome(signal int, err error) (resumed bool) {
	b.refused[signal] = err != nil
	switch {
	case err != nil && !b.due:
		b.wait = min(max(2*b.wait, backoffFirst), backoffMax)
		b.due = true
	case err == nil && b.wait > 0 && !slices.Contains(b.refused[:], true):
		b.wait = 0
		return true
	}
	return false
}

// warn says whether to log this refusal: the first of a run, then at most
// one every 10 s per signal, so that a long outage does not flood the log.
func (b *backoff) warn(signal int) bool {
	now := time.Now()
	if now.Sub(b.logged[signal]) < 10*time.Second {
		return false
	}
	b.logged[signal] = now
	return true
}

// backOff waits the backoff, in slices so that Shutdown is seen promptly,
// and counts the time in otelcol_receiver_seq_reader_backoff.
func (r *seqReceiver) backOff(ctx context.Context) {
	start := time.Now()
	for left := r.backoff.wait; left > 0 && !r.stop.Load(); left = r.backoff.wait - time.Since(start) {
		ring.Sleep(min(left, backoffSlice))
	}
	r.backoff.due = false
	r.tb.ReceiverSeqReaderBackoff.Add(ctx, time.Since(start).Seconds())
}
