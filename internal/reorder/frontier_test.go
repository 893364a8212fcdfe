// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package reorder

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// perfSim drives a Reorder and a Frontier as the perf source
// (internal/ring/transport, Buf) does: each record read from a CPU moves
// that CPU's mark and may let the stage give up below the frontier; an
// empty buffer, or all of them, is a Drained look.
type perfSim struct {
	tr   trace
	r    *Reorder[rec]
	f    *Frontier
	head uint64 // tickets issued: the head the reader reads
}

func newPerfSim(cpus int, grace time.Duration, t0 time.Time) *perfSim {
	s := &perfSim{f: NewFrontier(cpus, grace)}
	s.f.Pass(0, t0)
	s.r = s.tr.stage(0, 0)
	return s
}

func (s *perfSim) advance() {
	if f := s.f.Min(); f > s.r.Next() {
		s.r.GiveUpBelow(f, s.tr.out)
	}
}

// read: a record of cpu's buffer, the last one in it when empty is set.
func (s *perfSim) read(cpu int, x rec, now time.Time, empty bool) {
	if empty {
		s.f.Drained(cpu)
	}
	s.r.Push(x, now, s.tr.out)
	s.f.Seen(cpu, x.t+max(x.n, 1))
	if s.r.Held() > 0 {
		s.advance()
	}
}

// endPass: the reader emptied every buffer; the next pass begins at now.
func (s *perfSim) endPass(now time.Time) {
	s.f.DrainedAll()
	s.f.Pass(s.head, now)
	s.advance()
}

func (s *perfSim) got() string { return fmt.Sprint(s.tr.events) }

func TestFrontierStarvedCPULosesNothing(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	s := newPerfSim(2, 20*time.Millisecond, t0)
	s.head = 6
	// CPU 1 produced 1, 3 and 5 and its buffer is read first; CPU 0 (0, 2,
	// 4) is starved: the reader gets to it only much later, long after the
	// 100 ms the old time bound waited. Nothing of CPU 0's is given up on
	// while its stream has not gone past it and its buffer is not empty.
	s.read(1, rec{1, 1}, ms(0), false)
	s.read(1, rec{3, 1}, ms(0), false)
	s.read(1, rec{5, 1}, ms(0), true)
	if got := s.got(); got != "[]" {
		t.Fatalf("released %s before CPU 0 was read", got)
	}
	s.read(0, rec{0, 1}, ms(500), false)
	s.read(0, rec{2, 1}, ms(500), false)
	s.read(0, rec{4, 1}, ms(500), true)
	s.endPass(ms(500))
	if got, want := s.got(), "[r0 r1 r2 r3 r4 r5]"; got != want {
		t.Errorf("released %s, want %s", got, want)
	}
	if s.r.Declared != 0 || s.r.Late != 0 {
		t.Errorf("declared %d late %d, want none", s.r.Declared, s.r.Late)
	}
}

func TestFrontierPerfLostIsAGap(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := newPerfSim(2, 20*time.Millisecond, t0)
	s.head = 6
	// CPU 0 lost ticket 2 (a PERF_RECORD_LOST between its records 0 and
	// 4); CPU 1 sent 1, 3, 5. Once both streams are past 2, it is a gap in
	// place, at once: no clock, no waiting for an empty buffer.
	s.read(0, rec{0, 1}, t0, false)
	s.read(1, rec{1, 1}, t0, false)
	s.read(1, rec{3, 1}, t0, false)
	if got, want := s.got(), "[r0 r1]"; got != want {
		t.Fatalf("released %s, want %s", got, want)
	}
	s.read(0, rec{4, 1}, t0, false) // after the loss report
	if got, want := s.got(), "[r0 r1 g2+1 r3 r4]"; got != want {
		t.Errorf("released %s, want %s", got, want)
	}
	s.read(1, rec{5, 1}, t0, false)
	if s.r.Declared != 1 || s.r.Next() != 6 {
		t.Errorf("declared %d next %d, want 1 and 6", s.r.Declared, s.r.Next())
	}
}

func TestFrontierIdleCPU(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	const grace = 20 * time.Millisecond
	s := newPerfSim(2, grace, t0)
	// CPU 1 never produces. CPU 0 sends 0, 1, loses 2 (its output failed:
	// nothing in any buffer), sends 3, 4.
	s.head = 5
	for _, tk := range []uint64{0, 1, 3, 4} {
		s.read(0, rec{tk, 1}, ms(10), false)
	}
	// The first pass began before ticket 2 was claimed (pass head 0): its
	// empty buffers say nothing about it.
	s.endPass(ms(10))
	if got, want := s.got(), "[r0 r1]"; got != want {
		t.Fatalf("released %s, want %s", got, want)
	}
	// Empty again in passes that began less than a grace after head 5
	// was read (at 10 ms): a producer on CPU 1 may still be between its
	// ticket and its output.
	s.endPass(ms(15))
	s.endPass(ms(29))
	s.endPass(ms(30))
	if got, want := s.got(), "[r0 r1]"; got != want {
		t.Fatalf("released %s within the grace, want %s", got, want)
	}
	// Empty in the pass that began a grace after (at 30 ms): ticket 2 is
	// lost, counted in place.
	s.endPass(ms(31))
	if got, want := s.got(), "[r0 r1 g2+1 r3 r4]"; got != want {
		t.Errorf("released %s, want %s", got, want)
	}
	// A claimed ticket whose record never came, with nothing held behind
	// it, is given up on the same way.
	s.head = 6
	s.endPass(ms(40))
	s.endPass(ms(60))
	s.endPass(ms(61))
	if got, want := s.got(), "[r0 r1 g2+1 r3 r4 g5+1]"; got != want {
		t.Errorf("released %s, want %s", got, want)
	}
}

func TestFrontierOneCPUsEmptyBuffer(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	s := newPerfSim(2, 20*time.Millisecond, t0)
	s.head = 4
	s.endPass(ms(3)) // pass head 4 from now on
	// CPU 1 sent ticket 0 and its buffer is empty; CPU 0 sends 1 and 3
	// (2 lost on CPU 1 after its record 0) and keeps producing, so the
	// reader never finds every buffer empty. CPU 1's own empty looks, a
	// grace apart, let ticket 2 go.
	s.read(1, rec{0, 1}, ms(1), true)
	s.read(0, rec{1, 1}, ms(1), false)
	s.read(0, rec{3, 1}, ms(1), false)
	if got, want := s.got(), "[r0 r1]"; got != want {
		t.Fatalf("released %s, want %s", got, want)
	}
	s.f.Pass(s.head, ms(25)) // a pass a grace later, CPU 1 still empty
	s.read(0, rec{4, 1}, ms(25), false)
	s.f.Drained(1)
	s.advance()
	if got, want := s.got(), "[r0 r1 g2+1 r3 r4]"; got != want {
		t.Errorf("released %s, want %s", got, want)
	}
}

// Every CPU's stream in ticket order, read a CPU's whole buffer at a time
// in random amounts, some records lost on their CPU: the stage releases
// every record in order and counts exactly the lost tickets, with no clock.
func TestFrontierRandomCPUs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		const cpus, n = 4, 20000
		s := newPerfSim(cpus, time.Millisecond, time.Unix(0, 0))
		streams := make([][]rec, cpus)
		lost := uint64(0)
		var want []uint64
		tk := uint64(0)
		for tk < n {
			k := uint64(1 + rng.IntN(3)*rng.IntN(2)) // multi-ticket records too
			if rng.IntN(500) == 0 {
				lost += k
			} else {
				c := rng.IntN(cpus)
				streams[c] = append(streams[c], rec{tk, k})
				want = append(want, tk)
			}
			tk += k
		}
		// Two tickets claimed after the last record whose records never came.
		end := tk + 2
		lost += 2
		s.head = end
		now := time.Unix(0, 0)
		for {
			left := 0
			for _, st := range streams {
				left += len(st)
			}
			if left == 0 {
				break
			}
			c := rng.IntN(cpus)
			take := min(len(streams[c]), rng.IntN(200))
			for i := range take {
				s.read(c, streams[c][i], now, i == take-1 && take == len(streams[c]))
			}
			streams[c] = streams[c][take:]
		}
		for range 3 {
			now = now.Add(time.Millisecond)
			s.endPass(now)
		}
		var rel []uint64
		declared := uint64(0)
		for _, e := range s.tr.events {
			var a, b uint64
			if _, err := fmt.Sscanf(e, "r%d", &a); err == nil {
				rel = append(rel, a)
			} else if _, err := fmt.Sscanf(e, "g%d+%d", &a, &b); err == nil {
				declared += b
			}
		}
		if !slices.Equal(rel, want) {
			t.Fatalf("round %d: released %d records, not the %d sent in order", round, len(rel), len(want))
		}
		if s.r.Declared != lost || declared != lost || s.r.Late != 0 || s.r.Next() != end {
			t.Fatalf("round %d: declared %d (gaps %d) late %d next %d, want %d lost and next %d", round, s.r.Declared, declared, s.r.Late, s.r.Next(), lost, end)
		}
	}
}
