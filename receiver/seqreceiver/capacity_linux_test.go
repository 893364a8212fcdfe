// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// Capacity: the lapping workload of TestLappedReaderReportsEveryGap (a
// burst the ring cannot hold at once) with the default ring and a fast
// pipeline loses nothing. The Go model of the producers writes a burst of
// several times the ring's 65536 slots while the reader runs, at a steady
// rate far above what a fork or exec storm gives on this class of machine
// (5 000 – 9 000 events/s in docs/benchmarks.md's transport table; the burst
// goes at 200 000 records/s, 25 000 under the race detector, which slows
// the reader twentyfold): the ring absorbs what the reader has not read
// yet, and every ticket is delivered.
func TestFakeBurstAbsorbedWithoutLoss(t *testing.T) {
	records, rate := 200_000, 200_000 // records, records/s
	if raceEnabled {
		records, rate = 100_000, 25_000
	}
	cfg := createDefaultConfig()
	require.Equal(t, 65536, cfg.RingSlots, "the default ring")
	require.Greater(t, records, cfg.RingSlots, "a burst larger than the ring")
	// A fast pipeline that keeps nothing: it checks the order and counts.
	var (
		delivered, lostRecs atomic.Int64
		outOfOrder          atomic.Int64
	)
	sink, err := consumer.NewLogs(func(_ context.Context, ld plog.Logs) error {
		recs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range recs.Len() {
			lr := recs.At(i)
			if lr.EventName() == pdatamap.EventNameLost {
				lostRecs.Add(1)
				continue
			}
			seq, _ := lr.Attributes().Get(pdatamap.AttrSeqNumber)
			if seq.Int() != delivered.Load() {
				outOfOrder.Add(1)
			}
			delivered.Add(1)
		}
		return nil
	})
	require.NoError(t, err)
	f := startFake(t, cfg, cfg.RingSlots, sink, nil)

	evs := lifecycle(records / 3)
	const step = time.Millisecond
	perStep := rate / int(time.Second/step)
	start := time.Now()
	for i := 0; i < len(evs); i += perStep {
		f.k.write(evs[i:min(i+perStep, len(evs))]...)
		// Steady: the i-th record goes at start + i/rate, however late the
		// last step woke.
		if d := time.Until(start.Add(time.Duration(i+perStep) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
	}
	t.Logf("wrote %d records in %v", len(evs), time.Since(start).Round(time.Millisecond))
	require.Eventually(t, func() bool { return f.r.readPos.Load() == uint64(len(evs)) }, 60*time.Second, time.Millisecond)
	f.stop(t) // asserts issued = delivered + lost

	fin := f.r.final
	assert.Equal(t, uint64(len(evs)), fin.Issued, "issued")
	assert.Zero(t, fin.Stats.Lost, "lost")
	assert.Equal(t, uint64(len(evs)), fin.Stats.Tickets, "delivered")
	assert.Equal(t, int64(len(evs)), delivered.Load(), "a log record per ticket")
	assert.Zero(t, lostRecs.Load(), "seq.lost records")
	assert.Zero(t, outOfOrder.Load(), "records out of ticket order")
}
