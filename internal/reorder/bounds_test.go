package reorder

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	type in struct {
		ticket uint64
		at     int // ms since the start
	}
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name     string
		held     int
		wait     time.Duration
		ins      []in
		tickAt   int    // ms; Tick then, after the inputs (0: no tick)
		flushTo  uint64 // FlushTo(flushTo) at the end (0: no flush)
		want     []uint64
		declared uint64
		late     uint64
		dup      uint64
	}{
		{
			name: "in order goes straight through",
			held: 4, wait: time.Second,
			ins:  []in{{0, 0}, {1, 0}, {2, 0}, {3, 0}},
			want: []uint64{0, 1, 2, 3},
		},
		{
			name: "a swap within the bounds is undone",
			held: 4, wait: time.Second,
			ins:  []in{{1, 0}, {0, 1}, {3, 1}, {2, 2}},
			want: []uint64{0, 1, 2, 3},
		},
		{
			name: "two CPUs' batches interleave back into order",
			held: 8, wait: time.Second,
			ins:  []in{{1, 0}, {3, 0}, {5, 0}, {0, 1}, {2, 1}, {4, 1}},
			want: []uint64{0, 1, 2, 3, 4, 5},
		},
		{
			name: "size bound: a missing ticket is given up on",
			held: 2, wait: time.Second,
			ins:      []in{{0, 0}, {2, 0}, {3, 0}, {4, 0}},
			want:     []uint64{0, 2, 3, 4},
			declared: 1,
		},
		{
			name: "time bound: Tick gives up on a missing ticket",
			held: 100, wait: 10 * time.Millisecond,
			ins:      []in{{0, 0}, {2, 1}, {3, 2}},
			tickAt:   12,
			want:     []uint64{0, 2, 3},
			declared: 1,
		},
		{
			name: "time bound: nothing released before it",
			held: 100, wait: 10 * time.Millisecond,
			ins:    []in{{0, 0}, {2, 1}, {3, 2}},
			tickAt: 9,
			want:   []uint64{0},
		},
		{
			name: "time bound on the next push",
			held: 100, wait: 10 * time.Millisecond,
			ins:      []in{{0, 0}, {2, 1}, {4, 20}},
			want:     []uint64{0, 2},
			declared: 1,
		},
		{
			name: "a late record is released out of order and counted",
			held: 1, wait: time.Second,
			ins:      []in{{0, 0}, {2, 0}, {3, 0}, {1, 1}, {4, 1}},
			want:     []uint64{0, 2, 3, 1, 4},
			declared: 1, late: 1,
		},
		{
			name: "flush gives up on what is missing, the tail too",
			held: 100, wait: time.Second,
			ins:      []in{{0, 0}, {3, 0}, {2, 0}, {6, 0}},
			flushTo:  9,
			want:     []uint64{0, 2, 3, 6},
			declared: 1 + 2 + 2,
		},
		{
			name: "a duplicate that is held is counted",
			held: 100, wait: time.Second,
			ins:  []in{{1, 0}, {1, 0}, {0, 0}, {2, 0}},
			want: []uint64{0, 1, 1, 2},
			dup:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New[rec](0, tt.held, tt.wait)
			var got []uint64
			out := func(x rec) { got = append(got, x.t) }
			for _, x := range tt.ins {
				r.Push(rec{t: x.ticket, n: 1}, ms(x.at), out)
			}
			if tt.tickAt != 0 {
				r.Tick(ms(tt.tickAt), out)
			}
			if tt.flushTo != 0 {
				r.FlushTo(tt.flushTo, out)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("released %v, want %v", got, tt.want)
			}
			if r.Declared != tt.declared || r.Late != tt.late || r.Dup != tt.dup {
				t.Errorf("declared %d late %d dup %d, want %d %d %d", r.Declared, r.Late, r.Dup, tt.declared, tt.late, tt.dup)
			}
			if r.Released != uint64(len(got)) {
				t.Errorf("Released %d, released %d", r.Released, len(got))
			}
		})
	}
}

// A stream shuffled within windows smaller than the size bound, with a few
// tickets missing, comes out sorted, with exactly the missing ones given up on.
func TestShuffledWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, window = 100000, 64
	var tickets []uint64
	missing := uint64(0)
	for i := uint64(0); i < n; i++ {
		if rng.IntN(1000) == 0 {
			missing++
			continue
		}
		tickets = append(tickets, i)
	}
	for i := 0; i < len(tickets); i += window {
		w := tickets[i:min(i+window, len(tickets))]
		rng.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
	}
	r := New[rec](0, 2*window, 0)
	var got []uint64
	out := func(x rec) { got = append(got, x.t) }
	now := time.Now()
	for _, tk := range tickets {
		r.Push(rec{t: tk, n: 1}, now, out)
	}
	r.FlushTo(n, out)
	if !slices.IsSorted(got) || len(got) != len(tickets) {
		t.Fatalf("released %d records, sorted %v; want %d sorted", len(got), slices.IsSorted(got), len(tickets))
	}
	if r.Declared != missing || r.Late != 0 {
		t.Errorf("declared %d late %d, want %d and 0", r.Declared, r.Late, missing)
	}
	if r.MaxSeen > 2*window+1 {
		t.Errorf("held up to %d records, bound %d", r.MaxSeen, 2*window)
	}
}
