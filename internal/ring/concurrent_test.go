// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Self-checking records: producer id u32, counter u64, filler, FNV-1a 64 of
// everything before it.
const selfCheckMin = 4 + 8 + 8

func makeRecord(b []byte, id uint32, counter uint64) []byte {
	binary.LittleEndian.PutUint32(b[0:], id)
	binary.LittleEndian.PutUint64(b[4:], counter)
	for j := 12; j < len(b)-8; j++ {
		b[j] = byte(counter*31 + uint64(j))
	}
	h := fnv.New64a()
	h.Write(b[:len(b)-8])
	binary.LittleEndian.PutUint64(b[len(b)-8:], h.Sum64())
	return b
}

func checkRecord(b []byte) (id uint32, counter uint64, ok bool) {
	if len(b) < selfCheckMin {
		return 0, 0, false
	}
	h := fnv.New64a()
	h.Write(b[:len(b)-8])
	if binary.LittleEndian.Uint64(b[len(b)-8:]) != h.Sum64() {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint64(b[4:]), true
}

// TestConcurrentProducersLapping is the protocol model: several goroutine
// producers write self-checking records of 1..7 slots into a small ring while
// a slow reader is lapped again and again. Goroutine producers are preempted
// anywhere, mid-write included, so some stall for a lap and make others skip
// slots (Overrun). Every delivered record must be intact (its checksum holds)
// and sit at the ticket its Write returned, each producer's records arrive in
// order, the stream of items is contiguous (every item starts where the one
// before ended, so each gap is where its tickets were), and at the end
// delivered + lost tickets == head.
func TestConcurrentProducersLapping(t *testing.T) {
	const (
		slots     = 128
		producers = 6
	)
	each := 20000
	if testing.Short() {
		each = 3000
	}
	// A producer preempted for StuckAfter between claim and publish costs
	// the reader that long at worst; keep it short.
	_, _, p, r := newRing(t, slots, StuckAfter(100*time.Millisecond))

	tickets := make([][]uint64, producers) // tickets[id][counter]: what Write returned
	var wg sync.WaitGroup
	var done atomic.Bool
	for id := range producers {
		tickets[id] = make([]uint64, each)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 42))
			buf := make([]byte, 7*SlotPayload)
			for c := range each {
				n := selfCheckMin + rng.IntN(SlotPayload-selfCheckMin+1) // one slot
				if rng.IntN(2) == 0 {
					n = selfCheckMin + rng.IntN(len(buf)-selfCheckMin+1)
				}
				tickets[id][c] = p.Write(makeRecord(buf[:n], uint32(id), uint64(c)))
				if rng.IntN(256) == 0 {
					time.Sleep(20 * time.Microsecond) // let the reader catch up now and then
				}
			}
		}()
	}
	go func() { wg.Wait(); done.Store(true) }()

	type seen struct {
		ticket  uint64
		id      uint32
		counter uint64
		slots   int
	}
	var (
		delivered []seen
		expect    uint64 // where the next item must start
		bad       int
		gaps      [numReasons]int
		last      = make([]int64, producers)
	)
	for i := range last {
		last[i] = -1
	}
	check := func(it *Item) {
		if it.Ticket != expect {
			t.Errorf("item %s starts at %d, the previous one ended at %d", fmtItems([]Item{*it}), it.Ticket, expect)
		}
		switch it.Kind {
		case Gap:
			if it.Lost == 0 {
				t.Error("empty gap")
			}
			gaps[it.Reason]++
			expect = it.Ticket + it.Lost
		case Record:
			id, c, ok := checkRecord(it.Data)
			if !ok || id >= producers || c >= uint64(each) || it.Slots != SlotsFor(len(it.Data)) {
				if bad++; bad <= 5 {
					t.Errorf("ticket %d: bad record of %d bytes x%d (id %d counter %d checksum ok %v)", it.Ticket, len(it.Data), it.Slots, id, c, ok)
				}
			} else {
				if int64(c) <= last[id] {
					t.Errorf("producer %d: counter %d after %d", id, c, last[id])
				}
				last[id] = int64(c)
				delivered = append(delivered, seen{it.Ticket, id, c, it.Slots})
			}
			expect = it.Ticket + uint64(it.Slots)
		}
	}

	// Let the producers lap the ring a few times before the first read,
	// so that lapping is exercised whatever the scheduling.
	for r.Head() < 4*slots && !done.Load() {
		time.Sleep(50 * time.Microsecond)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	reads := 0
	for {
		finished := done.Load() // before Read: Idle after it means drained
		_, st := r.Read(32, check)
		reads++
		if finished && st == Idle {
			break
		}
		switch {
		case finished:
		case rng.IntN(200) == 0:
			time.Sleep(time.Millisecond) // get lapped
		case rng.IntN(20) == 0:
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		case st != Full:
			runtime.Gosched()
		}
	}

	head := r.Head()
	s := r.Stats()
	t.Logf("head %d, %d reads, stats %+v, gaps lapped %d torn %d corrupt %d abandoned %d; producer overrun %d",
		head, reads, s, gaps[Lapped], gaps[Torn], gaps[Corrupt], gaps[Abandoned], p.Overrun())
	if bad != 0 {
		t.Errorf("%d torn or corrupt records delivered", bad)
	}
	if want := uint64(producers * each); uint64(len(delivered)) > want || s.Records != uint64(len(delivered)) || s.Records == 0 {
		t.Errorf("%d records counted, %d delivered, %d written", s.Records, len(delivered), want)
	}
	if expect != head || r.Next() != head {
		t.Errorf("items end at %d, next %d, head %d", expect, r.Next(), head)
	}
	if s.Tickets+s.Lost != head {
		t.Errorf("delivered %d + lost %d tickets != head %d", s.Tickets, s.Lost, head)
	}
	if s.Lost != s.LostLapped+s.LostTorn+s.LostCorrupt+s.LostAbandoned {
		t.Errorf("lost by reason does not add up: %+v", s)
	}
	if s.Lost == 0 || s.LostLapped == 0 || gaps[Lapped] == 0 {
		t.Errorf("the reader was never lapped: %+v", s)
	}
	// Producers write only whole, well-formed records, and a record whose
	// slot was skipped is lost as pending (Lapped or Abandoned), never
	// assembled from someone else's slots.
	if s.LostCorrupt != 0 {
		t.Errorf("%d tickets lost as corrupt", s.LostCorrupt)
	}
	// Each delivered record sits at the ticket its Write returned.
	var slotsSum uint64
	for _, d := range delivered {
		if w := tickets[d.id][d.counter]; w != d.ticket {
			t.Fatalf("producer %d record %d delivered at ticket %d, written at %d", d.id, d.counter, d.ticket, w)
		}
		slotsSum += uint64(d.slots)
	}
	if slotsSum != s.Tickets {
		t.Errorf("delivered records span %d tickets, stats say %d", slotsSum, s.Tickets)
	}
}
