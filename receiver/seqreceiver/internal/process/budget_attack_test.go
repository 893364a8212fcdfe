// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// attackArgs is what the kernel hands over for one exec of the attack: ~510
// distinct one- and two-byte arguments in one fresh string (longer than the
// interner takes), as event.DecodeInterned splits it.
func attackArgs(proc, exec int) []string {
	var b strings.Builder
	b.Grow(1024)
	b.WriteString(strconv.Itoa(proc%100) + "\x00")
	for i := 0; b.Len() < 1020; i++ {
		b.WriteByte(byte('a' + (proc+exec+i)%26))
		b.WriteByte(0)
	}
	s := strings.TrimSuffix(b.String(), "\x00")
	return strings.Split(s, "\x00")
}

// TestArgvFlood replays issue 31's attack on the process model: 300
// unprivileged processes each exec themselves 130 times with ~510 short
// distinct arguments, pause, and then are all killed at once. Under the
// default Config the Go heap must stay within the budget plus a small
// overhead, while they live and while their spans are built.
func TestArgvFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ~40k exec events")
	}
	t.Run("default", func(t *testing.T) { argvFlood(t, Config{}) })
	// A budget the attack exceeds: the argv of exec events, span events and
	// finished spans give way, counted.
	t.Run("budget 2 MiB", func(t *testing.T) { argvFlood(t, Config{MaxMemory: 2 << 20}) })
}

func argvFlood(t *testing.T, cfg Config) {
	const (
		procs    = 300
		execs    = 130
		overhead = 8 << 20 // the table's maps, the recycled entries, the test's own
	)
	budget := uint64(orDefault(cfg.MaxMemory, DefaultMaxMemory))
	base := heapInUse()
	cfg.BootID, cfg.BootOffset = bootID, offset
	m := New(cfg)
	m.EndSnapshot()
	var peak, peakAcc uint64
	check := func(stage string) {
		t.Helper()
		acc := uint64(m.MemoryBytes())
		peakAcc = max(peakAcc, acc)
		if acc > budget {
			t.Fatalf("%s: %d bytes accounted, over the budget of %d", stage, acc, budget)
		}
		h := heapInUse()
		if h > base {
			peak = max(peak, h-base)
		}
		if h > base+budget+overhead {
			t.Fatalf("%s: heap grew by %d MiB, over the budget (%d MiB) plus %d MiB", stage, (h-base)>>20, budget>>20, overhead>>20)
		}
	}
	kt := uint64(1_000_000)
	shell := pk{100, 1}
	m.AddRunning(snapEv(kt, shell, pk{1, 1}, "sh", 100))
	for i := range procs {
		p := pk{uint32(1000 + i), uint64(10_000 + i)}
		kt++
		m.Apply(forkEv(kt, p, shell, "sh", 100))
		for j := range execs {
			kt++
			ev := execEv(kt, p, shell, "attack", "/tmp/attack")
			ev.Args = attackArgs(i, j)
			m.Apply(ev)
		}
		if i%50 == 49 {
			check("execs of " + strconv.Itoa(i+1) + " processes")
		}
	}
	check("all paused")
	for i := range procs {
		kt++
		m.Apply(exitEv(kt, pk{uint32(1000 + i), uint64(10_000 + i)}, shell, "attack", 9))
	}
	check("all killed")
	built := 0
	for range 10_000 {
		spans := ptrace.NewSpanSlice()
		n := m.AppendFinished(spans)
		if n == 0 {
			break
		}
		built += n
		check("spans built")
		_ = spans
	}
	st := m.Stats()
	t.Logf("heap peak +%d MiB, accounted peak %d KiB; %d spans built, %d dropped; stats %+v", peak>>20, peakAcc>>10, built, st.DroppedSpans, st)
	if lost := int(st.DroppedSpans + st.DroppedSpansMem); built+lost != procs {
		t.Errorf("%d spans built + %d dropped, want %d", built, lost, procs)
	}
	if st.ArgsTruncated != procs*execs {
		t.Errorf("%d execs counted cut at max_args, want %d", st.ArgsTruncated, procs*execs)
	}
	if cfg.MaxMemory != 0 && st.EventArgsDroppedMem+st.DroppedEventsMem == 0 {
		t.Errorf("the budget never bit: %+v", st)
	}
}
