// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package sequencer

import (
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The real producers (bpf/seq/seq.bpf.c, bpf/ring/producer.h) lap a 64-slot ring again
// and again under a fork storm while the reader reads in small bites with
// pauses, round after round, each on fresh maps: the items handed out are
// contiguous from ticket 0 (each starts where the one before ended, so every
// lost ticket is in a gap in its place), every record decodes, and after
// Detach and Abandon delivered + lost = head = the kernel's per-CPU ticket
// counters. This is the accounting TestForkStormAccounting checks, with the
// slot reuse, the reader's ticket check and copy, its re-check and resync
// exercised thousands of times.
func TestLappedAccountingStress(t *testing.T) {
	testutil.RequireRoot(t)
	if err := kernelfeatures.Atomics.Probe(); err != nil {
		t.Skip(kernelfeatures.Atomics.Missing("the sequencer", err))
	}
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is needed (make deps installs it): %v", err)
	}
	rounds := 20
	if testing.Short() || testutil.Scaled(time.Second) > time.Second {
		// Short, or in the kernel matrix's emulated guests, where loading
		// the programs takes seconds a round and the host's rounds already
		// ran.
		rounds = 4
	}
	storm := exec.Command("stress-ng", "--fork", "2", "--timeout", "300s", "--quiet")
	storm.Dir = t.TempDir()
	require.NoError(t, storm.Start())
	defer func() { _ = storm.Process.Kill(); _ = storm.Wait() }()

	rng := rand.New(rand.NewPCG(5, 6))
	var total ring.Stats
	var laps, items int
	round := 0
	for ; round < rounds; round++ {
		s, err := Open(Options{Transport: TransportSequencer, RingSlots: 64, Events: []event.Type{event.Fork, event.Exec, event.Exit}})
		require.NoError(t, err)
		src, err := s.NewSource()
		require.NoError(t, err)
		var expect uint64
		var ev event.Event
		check := func(it *ring.Item) {
			items++
			if it.Ticket != expect {
				t.Fatalf("round %d: item at ticket %d (%v), the one before ended at %d", round, it.Ticket, it.Kind, expect)
			}
			if it.Kind == ring.Gap {
				require.Positive(t, it.Lost)
				if it.Reason == ring.Lapped {
					laps++
				}
				expect += it.Lost
				return
			}
			require.NoError(t, event.Decode(it.Ticket, it.Data, &ev), "round %d: ticket %d", round, it.Ticket)
			require.Equal(t, ring.SlotsFor(len(it.Data)), it.Slots)
			expect += uint64(it.Slots)
		}
		// Once a round, at a random point, the reader stays away until the
		// producers are two rings ahead: a lap every round, whatever the
		// pace of the storm (in an emulated guest 20 ms pauses never were).
		lapAt := time.Now().Add(time.Duration(rng.IntN(150)) * time.Millisecond)
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
			src.Read(1+rng.IntN(64), check)
			if !lapAt.IsZero() && time.Now().After(lapAt) {
				for wait := time.Now().Add(testutil.Scaled(2 * time.Second)); src.Head() < src.Next()+128 && time.Now().Before(wait); {
					time.Sleep(time.Millisecond)
				}
				lapAt = time.Time{}
				continue
			}
			switch rng.IntN(8) {
			case 0:
				time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond) // be lapped
			case 1, 2:
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			}
		}
		require.NoError(t, s.Detach())
		for end := time.Now().Add(50 * time.Millisecond); ; {
			_, st := src.Read(0, check)
			if st == ring.Idle || st == ring.Pending && time.Now().After(end) {
				break
			}
		}
		head := src.Abandon(check)
		st := src.Stats()
		c, err := s.Counters()
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Equal(t, head, expect, "round %d: the items end at the head", round)
		require.Equal(t, head, st.Tickets+st.Lost, "round %d: delivered + lost = head (%+v)", round, st)
		require.Equal(t, c.TotalTickets(), head, "round %d: the kernel's ticket counters = head", round)
		require.Equal(t, st.Lost, st.LostLapped+st.LostTorn+st.LostAbandoned+st.LostShutdown, "round %d: no corrupt slot (%+v)", round, st)
		total.Records += st.Records
		total.Tickets += st.Tickets
		total.Lost += st.Lost
		total.LostLapped += st.LostLapped
		total.LostTorn += st.LostTorn
		total.LostAbandoned += st.LostAbandoned
	}
	t.Logf("%d rounds, %d items, %d lapped gaps; %+v", round, items, laps, total)
	require.GreaterOrEqual(t, laps, rounds, "the producers lapped the reader every round (else this test shows nothing)")
}
