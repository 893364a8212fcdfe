// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import "testing"

// TestAbandon: at shutdown the reader gives up on a claimed, unpublished
// ticket and on everything after it, as one Shutdown gap, and the accounting
// closes exactly at the head it returns.
func TestAbandon(t *testing.T) {
	ctl, _, p, r := newRing(t, 16)
	p.Write([]byte("0"))
	claim(ctl, 1) // ticket 1: claimed, still being written
	p.Write([]byte("2"))
	items, st := readAll(r, 0)
	wantItems(t, items, []Item{rec(0, 1)})
	if st != Pending {
		t.Fatal(st)
	}
	var got []Item
	head := r.Abandon(func(it *Item) { got = append(got, *it) })
	wantItems(t, got, []Item{gap(1, 2, Shutdown)})
	if head != 3 || r.Next() != 3 || r.Stats().LostShutdown != 2 {
		t.Fatal(head, r.Next(), r.Stats())
	}
	if s := r.Stats(); s.Tickets+s.Lost != head-r.Start() {
		t.Fatalf("delivered %d + lost %d != issued %d", s.Tickets, s.Lost, head-r.Start())
	}
	// Nothing left: a second Abandon reports nothing.
	got = nil
	r.Abandon(func(it *Item) { got = append(got, *it) })
	if len(got) != 0 {
		t.Fatal(fmtItems(got))
	}
}
