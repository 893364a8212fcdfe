// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newPacer(c *fakeClock, slots int) *Pacer {
	return &Pacer{FlushAfter: 20 * time.Millisecond, ParkTimeout: time.Second, Slots: slots, Now: c.now}
}

// The reader gathers for FlushAfter unless, at the rate of the last read,
// a quarter of the ring would fill sooner; never under GatherMin.
func TestPacerGatherFor(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		since time.Duration
		slots int
		want  time.Duration
	}{
		{"first read", 10, 0, 65536, 20 * time.Millisecond},
		// A fork storm here: 11 k events/s, 220 a read; a quarter of the
		// default ring lasts 1.5 s at that rate.
		{"storm, default ring", 220, 20 * time.Millisecond, 65536, 20 * time.Millisecond},
		// The same storm into the smallest ring: 64 slots fill in 5.8 ms.
		{"storm, 256 slots", 220, 20 * time.Millisecond, 256, 5818181 * time.Nanosecond},
		// 3.3 M records/s into the default ring: a quarter in 5 ms.
		{"flood", 66000, 20 * time.Millisecond, 65536, 4964848 * time.Nanosecond},
		{"faster than GatherMin", 1 << 20, 20 * time.Millisecond, 256, GatherMin},
	} {
		clk := newClock()
		p := newPacer(clk, c.slots)
		p.Read()
		if c.since > 0 {
			clk.add(c.since)
			p.Read()
		} else {
			p.since = 0
		}
		got := p.Next(c.n, Idle, time.Time{})
		require.Equal(t, PaceGather, got.Action, c.name)
		assert.InDelta(t, float64(c.want), float64(got.Wait), float64(time.Microsecond), c.name)
	}
}

// Nothing read: linger once, then park for ParkTimeout; records in
// between start the count over.
func TestPacerLingersOnceThenParks(t *testing.T) {
	clk := newClock()
	p := newPacer(clk, 65536)
	assert.Equal(t, Step{Action: PaceLinger, Wait: Linger}, p.Next(0, Idle, time.Time{}))
	assert.Equal(t, Step{Action: PacePark, Wait: time.Second}, p.Next(0, Idle, time.Time{}))
	assert.Equal(t, Step{Action: PaceLinger, Wait: Linger}, p.Next(0, Idle, time.Time{}))
	assert.Equal(t, PaceGather, p.Next(3, Idle, time.Time{}).Action)
	assert.Equal(t, Step{Action: PaceLinger, Wait: Linger}, p.Next(0, Idle, time.Time{}), "records start the linger over")
	assert.Equal(t, Step{Action: PaceAgain}, p.Next(100, Full, time.Time{}))
	assert.Equal(t, Step{Action: PaceLinger, Wait: Linger}, p.Next(0, Idle, time.Time{}), "a full read starts the linger over")
}

// A batch is due at FlushAfter; a young one shortens the park to the rest
// of its window, an old one is flushed before the reader parks.
func TestPacerFlushesAtFlushAfter(t *testing.T) {
	clk := newClock()
	p := newPacer(clk, 65536)
	assert.False(t, p.Due(time.Time{}), "no batch")
	batchAt := clk.t
	clk.add(19 * time.Millisecond)
	assert.False(t, p.Due(batchAt))
	p.Next(0, Idle, batchAt) // linger
	assert.Equal(t, Step{Action: PacePark, Wait: time.Millisecond}, p.Next(0, Idle, batchAt), "parks for the rest of the window")
	clk.add(time.Millisecond)
	assert.True(t, p.Due(batchAt))
	p.Next(0, Idle, batchAt) // linger
	assert.Equal(t, Step{Action: PacePark, Wait: time.Second, Flush: true}, p.Next(0, Idle, batchAt), "flushes, then parks")
}

// A ticket still being written: back off from PendingFirst, doubling up to
// PendingMax; a read past it starts over.
func TestPacerBacksOffOnPending(t *testing.T) {
	clk := newClock()
	p := newPacer(clk, 65536)
	var waits []time.Duration
	for range 8 {
		s := p.Next(0, Pending, time.Time{})
		require.Equal(t, PaceBackoff, s.Action)
		waits = append(waits, s.Wait)
	}
	us := time.Microsecond
	assert.Equal(t, []time.Duration{20 * us, 40 * us, 80 * us, 160 * us, 320 * us, 640 * us, time.Millisecond, time.Millisecond}, waits)
	assert.Equal(t, PaceAgain, p.Next(10, Full, time.Time{}).Action)
	assert.Equal(t, PendingMax, p.pending, "a full read keeps the back-off")
	p.Next(1, Idle, time.Time{})
	assert.Equal(t, PendingFirst, p.Next(0, Pending, time.Time{}).Wait, "an idle read starts it over")
}

// A reader driven by the Pacer over a steady flow: it gathers (no park,
// no linger) while records come, flushes every batch when it is
// FlushAfter old, and parks once the flow stops.
func TestPacerSteadyFlow(t *testing.T) {
	clk := newClock()
	p := newPacer(clk, 65536)
	const rate = 10000 // records a second
	flowEnd := clk.t.Add(time.Second)
	last := clk.t // records produced up to here were read
	var batchAt time.Time
	var flushes, parks, lingers int
	var oldest time.Duration
	for clk.t.Before(flowEnd.Add(100 * time.Millisecond)) {
		p.Read()
		upTo := clk.t
		if upTo.After(flowEnd) {
			upTo = flowEnd
		}
		n := int(upTo.Sub(last) * rate / time.Second)
		if n > 0 {
			last = last.Add(time.Duration(n) * time.Second / rate)
			if batchAt.IsZero() {
				batchAt = clk.t
			}
		}
		if p.Due(batchAt) {
			oldest = max(oldest, clk.t.Sub(batchAt))
			flushes++
			batchAt = time.Time{}
		}
		s := p.Next(n, Idle, batchAt)
		if s.Flush {
			flushes++
			batchAt = time.Time{}
		}
		switch s.Action {
		case PacePark:
			parks++
		case PaceLinger:
			lingers++
		}
		if s.Action == PacePark && clk.t.Before(flowEnd) {
			t.Fatalf("parked at %v while records came", clk.t.Sub(flowEnd))
		}
		clk.add(s.Wait)
	}
	// A batch starts with one gather's records and is due at the next read.
	assert.InDelta(t, 25, flushes, 2, "a batch every other gather")
	assert.Equal(t, p.FlushAfter, oldest)
	assert.Positive(t, parks, "parks once the flow stops")
	assert.LessOrEqual(t, lingers, parks+1)
}
