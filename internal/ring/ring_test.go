// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// newRing returns a fresh ring of n slots with a producer and a reader on it.
func newRing(t testing.TB, n int, opts ...Option) (ctl, slots []byte, p *Producer, r *Reader) {
	t.Helper()
	ctl, slots = NewMemory(n)
	p, err := NewProducer(ctl, slots)
	if err != nil {
		t.Fatal(err)
	}
	r, err = NewReader(ctl, slots, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ctl, slots, p, r
}

// readAll reads until Read stops short of limit, copying the items.
func readAll(r *Reader, limit int) ([]Item, State) {
	var items []Item
	_, st := r.Read(limit, func(it *Item) {
		c := *it
		c.Data = bytes.Clone(it.Data)
		items = append(items, c)
	})
	return items, st
}

// claim bumps head by n by hand, as a producer's fetch-add, and returns the first ticket.
func claim(ctl []byte, n uint64) uint64 {
	return atomic.AddUint64((*uint64)(unsafe.Pointer(&ctl[HeadOffset])), n) - n
}

// putSlot writes slot t's header and payload by hand, seq last.
func putSlot(slots []byte, t, seq uint64, m meta, payload []byte) {
	g, _ := newRegion(make([]byte, CtlSize), slots)
	s := g.slot(t)
	atomic.StoreUint64(word(s, metaOffset), packMeta(m))
	var w [SlotPayload]byte
	copy(w[:], payload)
	for k := 0; k < SlotPayload; k += 8 {
		atomic.StoreUint64(word(s, uintptr(SlotHeader+k)), *(*uint64)(unsafe.Pointer(&w[k])))
	}
	atomic.StoreUint64(word(s, seqOffset), seq)
}

func checkInvariant(t *testing.T, r *Reader) {
	t.Helper()
	s := r.Stats()
	if got, want := s.Tickets+s.Lost, r.Head()-r.Start(); got != want {
		t.Fatalf("delivered %d + lost %d = %d tickets, head - start = %d", s.Tickets, s.Lost, got, want)
	}
	if s.Lost != s.LostLapped+s.LostTorn+s.LostCorrupt+s.LostAbandoned {
		t.Fatalf("lost by reason does not add up: %+v", s)
	}
}

func wantItems(t *testing.T, got, want []Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d items %s, want %d %s", len(got), fmtItems(got), len(want), fmtItems(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Ticket != w.Ticket || g.Slots != w.Slots || g.Lost != w.Lost || g.Reason != w.Reason ||
			(w.Data != nil && !bytes.Equal(g.Data, w.Data)) {
			t.Fatalf("item %d: got %s, want %s\nall: %s", i, fmtItems(got[i:i+1]), fmtItems(want[i:i+1]), fmtItems(got))
		}
	}
}

func fmtItems(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		if it.Kind == Gap {
			b.WriteString("gap(" + strconv.FormatUint(it.Ticket, 10) + "+" + strconv.FormatUint(it.Lost, 10) + " " + it.Reason.String() + ") ")
		} else {
			b.WriteString("rec(" + strconv.FormatUint(it.Ticket, 10) + "x" + strconv.Itoa(it.Slots) + ") ")
		}
	}
	return b.String()
}

func rec(t uint64, slots int) Item { return Item{Kind: Record, Ticket: t, Slots: slots} }
func gap(t, n uint64, why LossReason) Item {
	return Item{Kind: Gap, Ticket: t, Lost: n, Reason: why}
}

func TestLayoutMatchesRingH(t *testing.T) {
	// The Go view of struct ring_slot's header.
	type slotHeader struct {
		Seq    uint64
		Len    uint32
		NSlots uint16
		Index  uint16
	}
	var h slotHeader
	if unsafe.Sizeof(h) != SlotHeader || unsafe.Offsetof(h.Len) != metaOffset ||
		unsafe.Offsetof(h.NSlots) != 12 || unsafe.Offsetof(h.Index) != 14 {
		t.Fatal("slot header layout")
	}
	if m := unpackMeta(packMeta(meta{len: 0x01020304, nslots: 0x0506, index: 0x0708})); m != (meta{0x01020304, 0x0506, 0x0708}) {
		t.Fatalf("meta round trip: %+v", m)
	}
	// The field order in memory: len, nslots, index.
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b)) = packMeta(meta{len: 0x01020304, nslots: 0x0506, index: 0x0708})
	if *(*uint32)(unsafe.Pointer(&b[0])) != 0x01020304 || *(*uint16)(unsafe.Pointer(&b[4])) != 0x0506 || *(*uint16)(unsafe.Pointer(&b[6])) != 0x0708 {
		t.Fatalf("meta bytes %x", b)
	}

	// The C side of the format (bpf/ring/ring.h), which must say the same.
	src, err := os.ReadFile("../../bpf/ring/ring.h")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (RING_\w+) (\d+)`).FindAllStringSubmatch(string(src), -1) {
		defs[m[1]], _ = strconv.Atoi(m[2])
	}
	for name, want := range map[string]int{"RING_SLOT_SIZE": SlotSize, "RING_SLOT_HDR": SlotHeader, "RING_MAX_SLOTS": MaxSlots} {
		if got, ok := defs[name]; !ok || got != want {
			t.Errorf("ring.h %s = %d (found %v), Go has %d", name, got, ok, want)
		}
	}
	for _, s := range []string{
		"#define RING_SLOT_PAYLOAD (RING_SLOT_SIZE - RING_SLOT_HDR)",
		"#define RING_WRITING (1ULL << 63)",
		"#define RING_SCRATCH (RING_MAX_SLOTS * RING_SLOT_PAYLOAD)",
		"__u64 head;", "__u64 _pad0[7];", "__u64 parked;", "__u64 tail;", "__u64 _pad1[6];",
		"struct ring_tx_hdr {\n\t__u64 ticket;",
		"__u64 seq;", "__u32 len;", "__u16 nslots;", "__u16 index;", "__u8 data[RING_SLOT_PAYLOAD];",
	} {
		if !strings.Contains(string(src), s) {
			t.Errorf("ring.h no longer says %q", s)
		}
	}
	// The producers count the slots they skip (Producer.Overrun's counterpart).
	if !regexp.MustCompile(`struct ring_stats \{[^}]*\b__u64 overrun;`).MatchString(string(src)) {
		t.Error("ring.h's struct ring_stats has no overrun counter")
	}
	if HeadOffset != 0 || ParkedOffset != 8*8 || CtlSize != 16*8 || Writing != 1<<63 || MaxRecord != MaxSlots*SlotPayload {
		t.Error("control block layout")
	}
}

func TestSlotsFor(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 112: 1, 113: 2, 224: 2, 225: 3, MaxRecord: MaxSlots, MaxRecord + 1: MaxSlots + 1} {
		if got := SlotsFor(n); got != want {
			t.Errorf("SlotsFor(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestValidation(t *testing.T) {
	ctl, slots := NewMemory(4)
	big := alignedBytes(8 * SlotSize)
	for _, c := range []struct {
		name       string
		ctl, slots []byte
		err        string
	}{
		{"short ctl", ctl[:CtlSize-1], slots, "control block is 127 bytes"},
		{"nil ctl", nil, slots, "control block is 0 bytes"},
		{"misaligned ctl", alignedBytes(2 * CtlSize)[4 : 4+CtlSize], slots, "control block is not 8-byte aligned"},
		{"empty slots", ctl, nil, "slot array is empty"},
		{"partial slot", ctl, slots[:SlotSize+1], "not a multiple of the 128-byte slot"},
		{"three slots", ctl, big[:3*SlotSize], "3 slots is not a power of two"},
		{"misaligned slots", ctl, big[4 : 4+4*SlotSize], "slot array is not 8-byte aligned"},
	} {
		if _, err := NewReader(c.ctl, c.slots); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: NewReader error %v, want %q", c.name, err, c.err)
		}
		if _, err := NewProducer(c.ctl, c.slots); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: NewProducer error %v, want %q", c.name, err, c.err)
		}
	}
	for _, n := range []int{1, 2, 4, 1024} {
		c, s := NewMemory(n)
		if _, err := NewReader(c, s); err != nil {
			t.Errorf("%d slots: %v", n, err)
		}
	}
	// A bigger control block (a whole mmap'd page) is fine.
	if _, err := NewReader(alignedBytes(4096), slots); err != nil {
		t.Error(err)
	}
}

// TestRoundTrip writes records of 0..4000 bytes with one producer and reads them
// back, interleaved so that the reader is never lapped.
func TestRoundTrip(t *testing.T) {
	ctl, _, p, r := newRing(t, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 7, 8, 9, 111, 112, 113, 224, 225, MaxRecord - 1, MaxRecord}
	for range 3000 {
		if rng.IntN(3) == 0 {
			sizes = append(sizes, rng.IntN(SlotPayload+1)) // one slot
		} else {
			sizes = append(sizes, rng.IntN(4001))
		}
	}
	var want [][]byte
	var next uint64
	read := func() {
		items, st := readAll(r, 0)
		if st != Idle {
			t.Fatalf("Read stopped %v, want idle", st)
		}
		for _, it := range items {
			if it.Kind != Record {
				t.Fatalf("unexpected %s", fmtItems([]Item{it}))
			}
			if it.Ticket != next || it.Slots != SlotsFor(len(want[0])) {
				t.Fatalf("record at ticket %d x%d, want %d x%d", it.Ticket, it.Slots, next, SlotsFor(len(want[0])))
			}
			if !bytes.Equal(it.Data, want[0]) {
				t.Fatalf("ticket %d: %d bytes differ from the %d written", it.Ticket, len(it.Data), len(want[0]))
			}
			next += uint64(it.Slots)
			want = want[1:]
		}
	}
	for _, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if r.Backlog()+uint64(SlotsFor(n)) > 1024 {
			read()
		}
		tk := p.Write(b)
		if tk != next+uint64(countSlots(want)) {
			t.Fatalf("Write returned ticket %d", tk)
		}
		want = append(want, b)
	}
	read()
	if len(want) != 0 || next != r.Head() || r.Next() != next || atomic.LoadUint64((*uint64)(unsafe.Pointer(&ctl[0]))) != next {
		t.Fatalf("%d records left, next %d, head %d", len(want), next, r.Head())
	}
	if s := r.Stats(); s.Records != uint64(len(sizes)) || s.Lost != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariant(t, r)
}

func countSlots(recs [][]byte) (n int) {
	for _, b := range recs {
		n += SlotsFor(len(b))
	}
	return n
}

func TestPayloadPadding(t *testing.T) {
	_, slots, p, _ := newRing(t, 4)
	for i := range slots {
		if i%SlotSize >= 8 { // garbage everywhere but seq, which must say never written
			slots[i] = 0xff
		}
	}
	p.Write([]byte{1, 2, 3})
	// The last word is padded with zeros; the rest of the payload is untouched.
	if got := slots[SlotHeader : SlotHeader+16]; !bytes.Equal(got, []byte{1, 2, 3, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("payload % x", got)
	}
	m := unpackMeta(*(*uint64)(unsafe.Pointer(&slots[metaOffset])))
	if seq := *(*uint64)(unsafe.Pointer(&slots[0])); seq != 1 || m != (meta{len: 3, nslots: 1, index: 0}) {
		t.Fatalf("header seq %d %+v", seq, m)
	}
}

func TestDefaultStartAndStartAt(t *testing.T) {
	ctl, slots, p, r := newRing(t, 16)
	if r.Start() != 0 || r.Next() != 0 {
		t.Fatal("a fresh ring starts at 0")
	}
	p.Write([]byte("a"))
	p.Write(make([]byte, 200))
	p.Write([]byte("b"))
	late, err := NewReader(ctl, slots)
	if err != nil {
		t.Fatal(err)
	}
	if late.Start() != 4 || late.Backlog() != 0 {
		t.Fatalf("late reader starts at %d, want head 4", late.Start())
	}
	if items, st := readAll(late, 0); len(items) != 0 || st != Idle {
		t.Fatalf("late reader read %s %v", fmtItems(items), st)
	}
	p.Write([]byte("c"))
	items, _ := readAll(late, 0)
	wantItems(t, items, []Item{{Kind: Record, Ticket: 4, Slots: 1, Data: []byte("c")}})
	checkInvariant(t, late)

	from1, _ := NewReader(ctl, slots, StartAt(1))
	items, _ = readAll(from1, 0)
	wantItems(t, items, []Item{rec(1, 2), {Kind: Record, Ticket: 3, Slots: 1, Data: []byte("b")}, rec(4, 1)})
	checkInvariant(t, from1)

	// Started in the middle of a record: its tail is lost, as corrupt.
	from2, _ := NewReader(ctl, slots, StartAt(2))
	items, _ = readAll(from2, 0)
	wantItems(t, items, []Item{gap(2, 1, Corrupt), rec(3, 1), rec(4, 1)})
	checkInvariant(t, from2)

	items, st := readAll(r, 0)
	wantItems(t, items, []Item{rec(0, 1), rec(1, 2), rec(3, 1), rec(4, 1)})
	if st != Idle {
		t.Fatal(st)
	}
}

func TestReadLimit(t *testing.T) {
	_, slots, p, r := newRing(t, 16)
	p.Write([]byte("0"))
	t1 := claim(r.ctl, 1)
	putSlot(slots, t1, t1+1, meta{len: 1, nslots: 2}, nil) // corrupt: a gap that does not count
	for range 4 {
		p.Write([]byte("x"))
	}
	items, st := readAll(r, 2)
	wantItems(t, items, []Item{rec(0, 1), gap(1, 1, Corrupt), rec(2, 1)})
	if st != Full || r.Next() != 3 || r.Backlog() != 3 {
		t.Fatalf("state %v next %d backlog %d", st, r.Next(), r.Backlog())
	}
	items, st = readAll(r, 3)
	wantItems(t, items, []Item{rec(3, 1), rec(4, 1), rec(5, 1)})
	if st != Full {
		t.Fatal(st)
	}
	n, st := r.Read(3, nil)
	if n != 0 || st != Idle {
		t.Fatal(n, st)
	}
	checkInvariant(t, r)
}

// TestLapped: the producers lap a reader that has not read anything.
func TestLapped(t *testing.T) {
	_, _, p, r := newRing(t, 8)
	for range 20 {
		p.Write([]byte("x"))
	}
	if r.Backlog() != 20 {
		t.Fatal(r.Backlog())
	}
	items, st := readAll(r, 0)
	// Resync: head 20 - 8 slots + margin 1 = 13.
	want := []Item{gap(0, 13, Lapped)}
	for tk := uint64(13); tk < 20; tk++ {
		want = append(want, rec(tk, 1))
	}
	wantItems(t, items, want)
	if st != Idle {
		t.Fatal(st)
	}
	s := r.Stats()
	if s.LostLapped != 13 || s.Records != 7 || s.Tickets != 7 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariant(t, r)

	// Lapped in the middle of a multi-slot record: a 6-slot record at
	// tickets 20..25, then 3 more records overwrite its first slots.
	p.Write(make([]byte, 6*SlotPayload))
	for range 3 {
		p.Write([]byte("y"))
	}
	// Slot of ticket 20 now holds 28: lapped at the first slot.
	items, _ = readAll(r, 0)
	// head 29 - 8 + 1 = 22: tickets 22..25 are the cut record's tail, lost as lapped too.
	wantItems(t, items, []Item{gap(20, 6, Lapped), rec(26, 1), rec(27, 1), rec(28, 1)})
	checkInvariant(t, r)
}

// TestTorn: the slot is overwritten between the reader's copy and its second
// seq load; the record must not be delivered.
func TestTorn(t *testing.T) {
	_, _, p, r := newRing(t, 4)
	p.Write([]byte("first"))
	fired := false
	r.hook = func(stage hookStage, tk uint64) {
		if stage == hookBeforeRecheck && tk == 0 && !fired {
			fired = true
			for range 4 { // tickets 1..4; 4 reuses ticket 0's slot
				p.Write([]byte("later"))
			}
		}
	}
	items, st := readAll(r, 0)
	// Resync: head 5 - 4 + 1 = 2.
	wantItems(t, items, []Item{gap(0, 2, Torn), rec(2, 1), rec(3, 1), {Kind: Record, Ticket: 4, Slots: 1, Data: []byte("later")}})
	if !fired || st != Idle || r.Stats().LostTorn != 2 {
		t.Fatalf("fired %v state %v stats %+v", fired, st, r.Stats())
	}
	checkInvariant(t, r)

	// Torn in a continuation slot.
	_, _, p, r = newRing(t, 8)
	p.Write(make([]byte, 3*SlotPayload)) // tickets 0..2
	fired = false
	r.hook = func(stage hookStage, tk uint64) {
		if stage == hookBeforeRecheck && tk == 2 && !fired {
			fired = true
			for range 8 { // tickets 3..10; 10 reuses ticket 2's slot
				p.Write([]byte("x"))
			}
		}
	}
	items, _ = readAll(r, 0)
	// Resync: head 11 - 8 + 1 = 4.
	want := []Item{gap(0, 4, Torn)}
	for tk := uint64(4); tk <= 10; tk++ {
		want = append(want, rec(tk, 1))
	}
	wantItems(t, items, want)
	checkInvariant(t, r)

	// Being rewritten (Writing set) while copied.
	_, slots, p, r := newRing(t, 4)
	p.Write([]byte("x"))
	r.hook = func(stage hookStage, tk uint64) {
		if stage == hookBeforeRecheck && tk == 0 {
			claim(r.ctl, 4)
			putSlot(slots, 4, 5|Writing, meta{}, nil)
		}
	}
	items, st = readAll(r, 1)
	r.hook = nil
	// Resync: head 5 - 4 + 1 = 2; tickets 2 and 3 were claimed by hand and never written.
	wantItems(t, items, []Item{gap(0, 2, Torn)})
	if st != Pending {
		t.Fatal(st)
	}
}

// TestCorrupt writes nonsensical headers by hand.
func TestCorrupt(t *testing.T) {
	ctl, slots, p, r := newRing(t, 16)
	hand := func(m meta) {
		tk := claim(ctl, 1)
		putSlot(slots, tk, tk+1, m, nil)
	}
	p.Write([]byte("0"))                                 // 0
	hand(meta{len: 10, nslots: 2})                       // 1: nslots should be 1
	p.Write([]byte("2"))                                 // 2
	hand(meta{len: 10, nslots: 1, index: 1})             // 3: a continuation with no record before it
	hand(meta{len: 10, nslots: 0})                       // 4: nslots 0
	hand(meta{len: 200, nslots: 2})                      // 5: a record whose
	hand(meta{len: 201, nslots: 2, index: 1})            // 6: continuation has another len
	hand(meta{len: MaxRecord + 1, nslots: MaxSlots + 1}) // 7: too long
	p.Write([]byte("8"))                                 // 8
	hand(meta{len: 300, nslots: 3})                      // 9: says 3 slots, but only 2 were claimed
	hand(meta{len: 300, nslots: 3, index: 1})            // 10
	items, st := readAll(r, 0)
	wantItems(t, items, []Item{
		{Kind: Record, Ticket: 0, Slots: 1, Data: []byte("0")},
		gap(1, 1, Corrupt),
		{Kind: Record, Ticket: 2, Slots: 1, Data: []byte("2")},
		gap(3, 5, Corrupt),
		{Kind: Record, Ticket: 8, Slots: 1, Data: []byte("8")},
		gap(9, 2, Corrupt),
	})
	if st != Idle || r.Stats().LostCorrupt != 8 {
		t.Fatalf("%v %+v", st, r.Stats())
	}
	checkInvariant(t, r)
}

// fakeClock is a settable clock for StuckAfter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Unix(1000, 0)} }
func readN(r *Reader) (int, State, []Item) {
	items, st := readAll(r, 0)
	return countRecs(items), st, items
}
func countRecs(items []Item) (n int) {
	for _, it := range items {
		if it.Kind == Record {
			n++
		}
	}
	return n
}

func TestAbandoned(t *testing.T) {
	clk := newClock()
	ctl, slots, p, r := newRing(t, 16, Clock(clk.now), StuckAfter(time.Second))
	p.Write([]byte("0"))
	claim(ctl, 1) // ticket 1: claimed, never published
	p.Write([]byte("2"))
	p.Write([]byte("3"))
	items, st := readAll(r, 0)
	wantItems(t, items, []Item{rec(0, 1)})
	if st != Pending || r.Next() != 1 || r.Backlog() != 3 {
		t.Fatalf("%v next %d", st, r.Next())
	}
	for _, d := range []time.Duration{0, time.Second / 2, time.Second/2 - 1} {
		clk.add(d)
		if n, st, items := readN(r); n != 0 || st != Pending || len(items) != 0 {
			t.Fatalf("after %v: %d %v %s", d, n, st, fmtItems(items))
		}
	}
	clk.add(1)
	items, st = readAll(r, 0)
	wantItems(t, items, []Item{gap(1, 1, Abandoned), rec(2, 1), rec(3, 1)})
	if st != Idle || r.Stats().LostAbandoned != 1 {
		t.Fatal(st, r.Stats())
	}
	checkInvariant(t, r)

	// Publishing the abandoned ticket late changes nothing.
	putSlot(slots, 1, 2, meta{len: 1, nslots: 1}, []byte("1"))
	if n, st, _ := readN(r); n != 0 || st != Idle {
		t.Fatal(n, st)
	}
	checkInvariant(t, r)

	// A pending ticket published before StuckAfter is delivered.
	tk := claim(ctl, 1)
	if _, st, _ := readN(r); st != Pending {
		t.Fatal(st)
	}
	clk.add(time.Second - 1)
	putSlot(slots, tk, tk+1, meta{len: 1, nslots: 1}, []byte("z"))
	items, _ = readAll(r, 0)
	wantItems(t, items, []Item{{Kind: Record, Ticket: tk, Slots: 1, Data: []byte("z")}})

	// Several tickets claimed and never published are given up together,
	// after one StuckAfter, not one each; a later claim gets its own time.
	first := claim(ctl, 3) // 5..7
	if _, st, _ := readN(r); st != Pending {
		t.Fatal(st)
	}
	clk.add(time.Second)
	late := claim(ctl, 1) // 8, claimed now
	p.Write([]byte("9"))
	items, st = readAll(r, 0)
	wantItems(t, items, []Item{gap(first, 3, Abandoned)})
	if st != Pending || r.Next() != late {
		t.Fatal(st, r.Next())
	}
	clk.add(time.Second)
	items, _ = readAll(r, 0)
	wantItems(t, items, []Item{gap(late, 1, Abandoned), rec(late+1, 1)})
	checkInvariant(t, r)

	// A multi-slot record whose producer published the first slot and died:
	// the whole record is lost.
	tk = claim(ctl, 3)
	putSlot(slots, tk, tk+1, meta{len: 300, nslots: 3}, nil)
	putSlot(slots, tk+2, tk+3, meta{len: 300, nslots: 3, index: 2}, nil)
	p.Write([]byte("after"))
	if n, st, _ := readN(r); n != 0 || st != Pending {
		t.Fatal(n, st)
	}
	clk.add(time.Second)
	items, _ = readAll(r, 0)
	wantItems(t, items, []Item{gap(tk, 3, Abandoned), {Kind: Record, Ticket: tk + 3, Slots: 1, Data: []byte("after")}})
	if r.Stats().LostAbandoned != 8 {
		t.Fatal(r.Stats())
	}
	checkInvariant(t, r)
}

func TestStuckAfterZeroWaitsForever(t *testing.T) {
	clk := newClock()
	ctl, _, _, r := newRing(t, 4, Clock(clk.now), StuckAfter(0))
	claim(ctl, 1)
	for range 3 {
		clk.add(time.Hour)
		if _, st, _ := readN(r); st != Pending {
			t.Fatal(st)
		}
	}
}

// TestGapsMergeByReason: adjacent losses of different reasons are separate
// gaps, of the same reason one gap.
func TestGapsMergeByReason(t *testing.T) {
	clk := newClock()
	ctl, slots, p, r := newRing(t, 16, Clock(clk.now))
	claim(ctl, 1)       // 0: abandoned
	tk := claim(ctl, 1) // 1: corrupt
	putSlot(slots, tk, tk+1, meta{len: 1, nslots: 9}, nil)
	tk = claim(ctl, 1) // 2: corrupt
	putSlot(slots, tk, tk+1, meta{len: 1, nslots: 0}, nil)
	p.Write([]byte("3"))
	readAll(r, 0)
	clk.add(time.Hour)
	items, _ := readAll(r, 0)
	wantItems(t, items, []Item{gap(0, 1, Abandoned), gap(1, 2, Corrupt), rec(3, 1)})
	checkInvariant(t, r)
}

// TestParkDoorbell runs the Dekker handshake of SetParked (Park) against
// concurrent producers: the reader sleeps whenever it has nothing to do and
// must never miss a doorbell.
func TestParkDoorbell(t *testing.T) {
	_, _, p, r := newRing(t, 1<<12)
	bell := make(chan struct{}, 1)
	var rings atomic.Int64
	p.Doorbell = func() {
		rings.Add(1)
		select {
		case bell <- struct{}{}:
		default:
		}
	}
	const producers, each = 4, 500
	done := make(chan struct{})
	for i := range producers {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range each {
				p.Write([]byte("event"))
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
			}
		}()
	}
	got, sleeps := 0, 0
	finished := 0
	for got < producers*each {
		n, st := r.Read(0, nil)
		got += n
		if got == producers*each {
			break
		}
		if st == Pending {
			continue // a producer is between claim and publish: spin
		}
		_, err := Park(r, func(timeout time.Duration) (bool, error) {
			sleeps++
			select {
			case <-bell:
				return true, nil
			case <-time.After(timeout):
				return false, fmt.Errorf("missed a doorbell: head %d next %d, %d records read", r.Head(), r.Next(), got)
			}
		}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
	}
	for finished < producers {
		<-done
		finished++
	}
	if s := r.Stats(); s.Lost != 0 || s.Records != producers*each {
		t.Fatalf("stats %+v", s)
	}
	t.Logf("%d sleeps, %d doorbells", sleeps, rings.Load())
}

// TestLaggingWriter is the scenario that broke the ring's original protocol
// (mark the slot with xchg, write, publish): a producer that stalls for a full
// lap mid-write must neither be overwritten by the producer a lap later nor
// mix its bytes into a newer record. With slot ownership the later producer
// skips the slot (Overrun), the reader never accepts it for the newer ticket,
// and the accounting stays exact, whether the ring then goes quiet (the
// skipped ticket is Abandoned after StuckAfter) or laps again (Lapped).
func TestLaggingWriter(t *testing.T) {
	for _, quiet := range []bool{true, false} {
		name := "lapped again"
		if quiet {
			name = "quiet"
		}
		t.Run(name, func(t *testing.T) { laggingWriter(t, quiet) })
	}
}

func laggingWriter(t *testing.T, quiet bool) {
	clk := newClock()
	_, slots, p, r := newRing(t, 4, Clock(clk.now), StuckAfter(time.Second))
	a := bytes.Repeat([]byte("A"), 16)
	b := bytes.Repeat([]byte("B"), 16)
	s0 := slots[:SlotSize] // the slot of tickets 0, 4, 8
	var items []Item
	read := func(want State) {
		t.Helper()
		got, st := readAll(r, 0)
		if st != want {
			t.Fatalf("Read stopped %v, want %v; items %s", st, want, fmtItems(got))
		}
		for _, it := range got {
			if it.Kind == Record && !bytes.Equal(it.Data, b) {
				t.Fatalf("ticket %d delivered as %q", it.Ticket, it.Data)
			}
		}
		items = append(items, got...)
		checkInvariantStats(t, r)
	}
	r.hook = func(stage hookStage, tk uint64) {
		if tk&3 == 0 && stage == hookAfterFirstLoad {
			// Only ticket 8, in the lapped-again run, may be read from slot 0.
			if quiet || tk != 8 {
				t.Errorf("reader accepted slot 0 for ticket %d", tk)
			}
		}
	}
	stalled := false
	p.hook = func(stage hookStage, tk uint64) {
		if tk != 0 {
			return
		}
		switch stage {
		case hookOwned:
			// Writer A owns ticket 0's slot and stalls before its stores,
			// while the other producers write tickets 1..4; 4 is slot 0's
			// next ticket and cannot be owned: skipped, not written.
			stalled = true
			for range 4 {
				p.Write(b)
			}
			if p.Overrun() != 1 {
				t.Fatalf("overrun %d, want 1", p.Overrun())
			}
			if seq, _ := slotHeaderOf(s0); seq != 1|Writing {
				t.Fatalf("slot 0 seq %#x, want A's 1|Writing", seq)
			}
			if !bytes.Equal(s0[8:], make([]byte, SlotSize-8)) {
				t.Fatalf("ticket 4's producer wrote into A's slot: % x", s0[8:])
			}
			// Lapped: resync to head 5 - 4 + 1 = 2; ticket 4 is pending.
			read(Pending)
		case hookFilled:
			// A has stored its bytes, not yet published: they are only in
			// its own slot, and the reader still does not take them.
			if seq, m := slotHeaderOf(s0); seq != 1|Writing || m != (meta{len: 16, nslots: 1}) || !bytes.Equal(s0[SlotHeader:SlotHeader+16], a) {
				t.Fatalf("slot 0: seq %#x %+v % x", seq, m, s0[SlotHeader:SlotHeader+16])
			}
			read(Pending)
		}
	}
	if tk := p.Write(a); tk != 0 || !stalled {
		t.Fatalf("A wrote ticket %d, stalled %v", tk, stalled)
	}
	p.hook = nil
	if seq, _ := slotHeaderOf(s0); seq != 1 {
		t.Fatalf("A's publish: slot 0 seq %d, want 1", seq)
	}
	read(Pending) // A's late publish is of a ticket already lost; 4 stays pending
	if quiet {
		clk.add(time.Second)
		read(Idle)
		wantItems(t, items, []Item{gap(0, 2, Lapped), rec(2, 1), rec(3, 1), gap(4, 1, Abandoned)})
	} else {
		// Tickets 5..8; A is done, so ticket 8 owns slot 0 again.
		for range 4 {
			p.Write(b)
		}
		read(Idle)
		// Ticket 4 lapped: resync to head 9 - 4 + 1 = 6.
		wantItems(t, items, []Item{gap(0, 2, Lapped), rec(2, 1), rec(3, 1), gap(4, 2, Lapped), rec(6, 1), rec(7, 1), rec(8, 1)})
	}
	if p.Overrun() != 1 {
		t.Fatalf("overrun %d, want 1", p.Overrun())
	}
	if s := r.Stats(); s.Tickets+s.Lost != r.Head() || r.Next() != r.Head() {
		t.Fatalf("delivered %d + lost %d != head %d (next %d)", s.Tickets, s.Lost, r.Head(), r.Next())
	}
}

// TestSkippedMiddleSlot: a producer stalled on ticket 1 makes the producer of
// a 3-slot record at tickets 8..10 skip its middle slot (9, slot 1). That
// producer still writes the record's other slots, and the reader loses the
// whole record, as Abandoned on a quiet ring or as Lapped once ticket 17 is
// claimed, and delivers the records after it.
func TestSkippedMiddleSlot(t *testing.T) {
	for _, quiet := range []bool{true, false} {
		name := "lapped"
		if quiet {
			name = "quiet"
		}
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			_, slots, p, r := newRing(t, 8, Clock(clk.now), StuckAfter(time.Second))
			one := []byte("one")
			var items []Item
			read := func(want State) {
				t.Helper()
				got, st := readAll(r, 0)
				if st != want {
					t.Fatalf("Read stopped %v, want %v; items %s", st, want, fmtItems(got))
				}
				items = append(items, got...)
				checkInvariantStats(t, r)
			}
			p.Write(one) // 0
			p.hook = func(stage hookStage, tk uint64) {
				if stage != hookOwned || tk != 1 {
					return
				}
				p.hook = nil // the stall: ticket 1's producer owns slot 1
				for range 6 {
					p.Write(one) // 2..7
				}
				if tk := p.Write(bytes.Repeat([]byte("R"), 3*SlotPayload)); tk != 8 {
					t.Fatalf("record at %d", tk)
				}
				if p.Overrun() != 1 {
					t.Fatalf("overrun %d, want 1", p.Overrun())
				}
				// Slots 0 and 2 hold the record's first and last slots.
				for _, c := range []struct{ slot, seq uint64 }{{0, 9}, {1, 2 | Writing}, {2, 11}} {
					if seq, _ := slotHeaderOf(slots[c.slot*SlotSize:]); seq != c.seq {
						t.Fatalf("slot %d seq %#x, want %#x", c.slot, seq, c.seq)
					}
				}
				p.Write(one) // 11
				p.Write(one) // 12
				// Lapped at 0 (slot 0 holds 8): resync to 13 - 8 + 1 = 6;
				// then 8 waits on its middle slot.
				read(Pending)
			}
			if tk := p.Write(one); tk != 1 {
				t.Fatal(tk)
			}
			read(Pending) // A published ticket 1, long lost; 9 is still unpublished
			if quiet {
				clk.add(time.Second)
				read(Idle)
				wantItems(t, items, []Item{gap(0, 6, Lapped), rec(6, 1), rec(7, 1), gap(8, 3, Abandoned), rec(11, 1), rec(12, 1)})
			} else {
				for range 5 {
					p.Write(one) // 13..17; 17 owns slot 1 now that A is done
				}
				read(Idle)
				// 9 lapped: resync to max(10, 18 - 8 + 1 = 11), the record's end.
				want := []Item{gap(0, 6, Lapped), rec(6, 1), rec(7, 1), gap(8, 3, Lapped)}
				for tk := uint64(11); tk <= 17; tk++ {
					want = append(want, rec(tk, 1))
				}
				wantItems(t, items, want)
			}
			for _, it := range items {
				if it.Kind == Record && string(it.Data) != "one" {
					t.Fatalf("ticket %d delivered as %q", it.Ticket, it.Data)
				}
			}
			if s := r.Stats(); s.Tickets+s.Lost != r.Head() || r.Next() != r.Head() || p.Overrun() != 1 {
				t.Fatalf("delivered %d + lost %d != head %d (next %d), overrun %d", s.Tickets, s.Lost, r.Head(), r.Next(), p.Overrun())
			}
		})
	}
}

// slotHeaderOf reads a slot's seq and header, atomically.
func slotHeaderOf(slot []byte) (seq uint64, m meta) {
	p := unsafe.Pointer(&slot[0])
	return atomic.LoadUint64(word(p, seqOffset)), unpackMeta(atomic.LoadUint64(word(p, metaOffset)))
}

// checkInvariantStats checks what holds at any time: delivered + lost tickets
// == next - start, and the reasons add up.
func checkInvariantStats(t *testing.T, r *Reader) {
	t.Helper()
	s := r.Stats()
	if s.Tickets+s.Lost != r.Next()-r.Start() {
		t.Fatalf("delivered %d + lost %d tickets, next - start = %d", s.Tickets, s.Lost, r.Next()-r.Start())
	}
	if s.Lost != s.LostLapped+s.LostTorn+s.LostCorrupt+s.LostAbandoned {
		t.Fatalf("lost by reason does not add up: %+v", s)
	}
}
