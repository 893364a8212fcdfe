//go:build linux

package bench

import (
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

func smokeConfig() Config {
	c := DefaultConfig()
	c.Duration = 700 * time.Millisecond
	c.BufferBytes = 8 << 20
	c.Out = ""
	c.Untraced = false
	return c
}

// Every transport on the synthetic workload: every ticket issued is either
// delivered or reported lost, and the kernel's counters agree.
func TestSmokeSynth(t *testing.T) {
	testutil.RequireRoot(t)
	c := smokeConfig()
	for _, tr := range []Transport{Sequencer, RingBuf, RingBufAdaptive, RingBufEvery, PerfBuf, RingBufNative, PerfBufNative} {
		t.Run(string(tr), func(t *testing.T) {
			r, err := RunOne(c, tr, Synth, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r.summary())
			if r.Error != "" {
				t.Error(r.Error)
			}
			if r.Issued == 0 {
				t.Fatal("no tickets issued: the synthetic producer did not run")
			}
			if r.Unaccounted != 0 {
				t.Errorf("unaccounted %d: issued %d, delivered %d, lost %d", r.Unaccounted, r.Issued, r.Delivered, r.Lost)
			}
			if r.KernelEvents != r.Issued {
				t.Errorf("kernel counted %d events, %d issued", r.KernelEvents, r.Issued)
			}
			if r.DecodeErrs != 0 {
				t.Errorf("%d records did not decode", r.DecodeErrs)
			}
			if r.TicketOrderAfter != 0 && r.ReorderLate == 0 {
				t.Errorf("%d ticket-order violations after the reorder stage, none late", r.TicketOrderAfter)
			}
		})
	}
}

// The sequencer under exec: fork, exec and exit of every process in order.
func TestSmokeSequencerExec(t *testing.T) {
	testutil.RequireRoot(t)
	r, err := RunOne(smokeConfig(), Sequencer, Exec, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.summary())
	if r.WorkloadOps == 0 || r.Processes == 0 {
		t.Fatalf("no execs seen (%d ops, %d processes)", r.WorkloadOps, r.Processes)
	}
	if r.Unaccounted != 0 || r.TicketOrderRaw != 0 || r.CausalityRaw != 0 {
		t.Errorf("unaccounted %d, ticket order %d, causality %d: want 0", r.Unaccounted, r.TicketOrderRaw, r.CausalityRaw)
	}
}

// The native arms under exec: every record the programs tried to emit is
// delivered or counted failed; on one CPU the ring buffer's records arrive
// in reservation order, so every process's fork, exec and exit in order.
func TestSmokeNativeExec(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tr := range []Transport{RingBufNative, PerfBufNative} {
		t.Run(string(tr), func(t *testing.T) {
			r, err := RunOne(smokeConfig(), tr, Exec, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r.summary())
			if r.Error != "" {
				t.Error(r.Error)
			}
			if r.WorkloadOps == 0 || r.Processes == 0 || r.Delivered == 0 {
				t.Fatalf("no execs seen (%d ops, %d processes, %d delivered)", r.WorkloadOps, r.Processes, r.Delivered)
			}
			if r.Unaccounted != 0 || r.DecodeErrs != 0 {
				t.Errorf("unaccounted %d (issued %d, delivered %d, lost %d), %d records did not decode: want 0",
					r.Unaccounted, r.Issued, r.Delivered, r.Lost, r.DecodeErrs)
			}
			if r.TicketOrderRaw != 0 {
				t.Errorf("%d ticket-order violations without tickets", r.TicketOrderRaw)
			}
			if tr == RingBufNative && r.CausalityRaw != 0 {
				t.Errorf("%d causality violations from one CPU's ring buffer", r.CausalityRaw)
			}
		})
	}
}

// The baselines run the programs and emit nothing: no ticket is issued.
func TestSmokeBaselines(t *testing.T) {
	testutil.RequireRoot(t)
	restore, err := EnableBPFStats()
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	for _, tr := range []Transport{Hook, Stage} {
		t.Run(string(tr), func(t *testing.T) {
			r, err := RunOne(smokeConfig(), tr, Synth, 1)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r.summary())
			if r.Issued != 0 || r.Delivered != 0 || r.Error != "" {
				t.Errorf("issued %d, delivered %d, error %q: want nothing", r.Issued, r.Delivered, r.Error)
			}
			if r.BPFRuns < r.WorkloadOps {
				t.Errorf("%d program runs for %d getpid calls", r.BPFRuns, r.WorkloadOps)
			}
		})
	}
}
