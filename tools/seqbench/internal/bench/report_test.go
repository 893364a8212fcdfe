//go:build linux

package bench

import (
	"strings"
	"testing"
)

// A row that erred fails the run (seqbench exits non-zero on Failures) and
// shows in the table with its error, whether or not it has numbers.
func TestFailedRowFailsTheRun(t *testing.T) {
	ok := Result{Transport: string(Sequencer), Workload: string(Exec), CPUs: 1, Issued: 10, Delivered: 10}
	if err := Failures([]Result{ok}); err != nil {
		t.Fatalf("no row erred, got %v", err)
	}
	failed := []Result{
		ok,
		{Transport: string(RingBufNative), Workload: string(Exec), CPUs: 2, Error: "attach rb_fork: permission denied"},
		{Transport: string(PerfBuf), Workload: string(Fork), CPUs: 1, Issued: 5, Delivered: 5, Error: "kernel per-CPU tickets 4 != head 5"},
	}
	err := Failures(failed)
	if err == nil {
		t.Fatal("two rows erred, Failures says none did")
	}
	md := Markdown(failed, DefaultConfig())
	for _, want := range []string{
		"ringbuf-native | exec | 2 | error: attach rb_fork: permission denied",
		"| perfbuf (error: below) | fork | 1 | 5 | 5 |",
		"- perfbuf fork 1 CPU: kernel per-CPU tickets 4 != head 5",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "!= head 5") {
		t.Errorf("Failures: %v, want both rows' errors", err)
	}
}

// The native arms have no tickets: their ticket-order cell is n/a.
func TestNativeRowHasNoTicketOrder(t *testing.T) {
	r := Result{Transport: string(PerfBufNative), Workload: string(Exec), CPUs: 2, Issued: 3, Delivered: 3, CapturePct: 100, CausalityRaw: 1}
	md := Markdown([]Result{r}, DefaultConfig())
	if !strings.Contains(md, "| perfbuf-native | exec | 2 | 3 | 3 | 0 | 0 | 100 | n/a | 1 | 0 | — |") {
		t.Errorf("want ticket order n/a, causality raw 1, no reorder stage:\n%s", md)
	}
}
