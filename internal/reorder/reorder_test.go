// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package reorder

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// rec takes the tickets [t, t+n), as a multi-slot exec record does.
type rec struct{ t, n uint64 }

func (r rec) TicketSpan() (uint64, uint64) { return r.t, r.n }

type trace struct {
	events []string // "r<t>" released, "g<first>+<n>" gap, in the order they happened
}

func (tr *trace) stage(maxHeld int, wait time.Duration) *Reorder[rec] {
	r := New[rec](0, maxHeld, wait)
	r.DropLate = true
	r.OnGap = func(first, n uint64) { tr.events = append(tr.events, fmt.Sprintf("g%d+%d", first, n)) }
	return r
}

func (tr *trace) out(x rec) { tr.events = append(tr.events, fmt.Sprintf("r%d", x.t)) }

func TestMultiTicketRecordsInOrder(t *testing.T) {
	var tr trace
	r := tr.stage(0, 0)
	t0 := time.Unix(0, 0)
	// Records of 1, 3 and 2 tickets arrive out of order.
	r.Push(rec{4, 2}, t0, tr.out)
	r.Push(rec{1, 3}, t0, tr.out)
	r.Push(rec{0, 1}, t0, tr.out)
	want := "[r0 r1 r4]"
	if got := fmt.Sprint(tr.events); got != want {
		t.Fatalf("released %s, want %s", got, want)
	}
	if r.Next() != 6 || r.Held() != 0 {
		t.Fatalf("next %d held %d", r.Next(), r.Held())
	}
}

// A missing ticket is given up on when the wait runs out: the gap is reported
// in place, before the record after it, and the record that comes later is
// dropped, so every ticket is released or declared exactly once.
func TestGapInPlaceAndLateDropped(t *testing.T) {
	var tr trace
	r := tr.stage(0, 10*time.Millisecond)
	t0 := time.Unix(0, 0)
	r.Push(rec{0, 1}, t0, tr.out)
	r.Push(rec{3, 1}, t0, tr.out) // 1 and 2 missing
	r.Tick(t0.Add(5*time.Millisecond), tr.out)
	if got := fmt.Sprint(tr.events); got != "[r0]" {
		t.Fatalf("before the wait ran out: %s", got)
	}
	r.Tick(t0.Add(11*time.Millisecond), tr.out)
	if got := fmt.Sprint(tr.events); got != "[r0 g1+2 r3]" {
		t.Fatalf("after: %s", got)
	}
	r.Push(rec{1, 2}, t0.Add(12*time.Millisecond), tr.out) // late
	if got := fmt.Sprint(tr.events); got != "[r0 g1+2 r3]" || r.Late != 1 || r.Declared != 2 {
		t.Fatalf("late record: %s late %d declared %d", got, r.Late, r.Declared)
	}
}

// Under random arrival orders within a window, with a bound on what is held,
// released + declared covers every ticket once and releases stay in order.
func TestEveryTicketOnce(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var recs []rec
		for t := uint64(0); t < 2000; {
			n := uint64(1 + rng.IntN(3))
			recs = append(recs, rec{t, n})
			t += n
		}
		// Shuffle within windows of 16, and drop some records entirely.
		for i := 0; i+16 <= len(recs); i += 16 {
			rng.Shuffle(16, func(a, b int) { recs[i+a], recs[i+b] = recs[i+b], recs[i+a] })
		}
		seen := make([]int, 2000+3)
		last := int64(-1)
		r := New[rec](0, 64, 0)
		r.DropLate = true
		r.OnGap = func(first, n uint64) {
			for k := first; k < first+n; k++ {
				seen[k]++
			}
		}
		out := func(x rec) {
			if int64(x.t) <= last {
				t.Fatalf("seed %d: %d released after %d", seed, x.t, last)
			}
			last = int64(x.t)
			for k := x.t; k < x.t+x.n; k++ {
				seen[k]++
			}
		}
		end := recs[len(recs)-1]
		for _, x := range recs {
			if rng.IntN(50) == 0 {
				continue // lost on the way
			}
			r.Push(x, time.Time{}, out)
		}
		r.FlushTo(end.t+end.n, out)
		for k := uint64(0); k < end.t+end.n; k++ {
			if seen[k] != 1 {
				t.Fatalf("seed %d: ticket %d accounted %d times", seed, k, seen[k])
			}
		}
	}
}
