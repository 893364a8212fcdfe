// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"strconv"
	"strings"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/internal/redact"
)

// redTeamArgs is one exec's argv as the kernel hands it over (4096 bytes at
// most, split from one fresh string, as event.Decode does): a short flag
// and a secret that fills the rest. Redaction replaces the secret by
// REDACTED, and what is kept ("x", "--password") is substrings of the
// 4 KiB string.
func redTeamArgs(i int) []string {
	s := "x\x00--password\x00" + strconv.Itoa(i) + strings.Repeat("s", 4050)
	return strings.Split(s, "\x00")
}

// TestRedTeamRedactedArgvRetention: arguments kept after redaction share
// their exec's argv string, so an entry charged ~70 bytes for an exec
// event's argv keeps 4 KiB alive. 1000 processes that each exec 130 times
// with a secret filling argv took the heap 520 MiB up under the default
// budget, 20 MiB accounted (the agent's memory limit is 300 MiB).
func TestRedTeamRedactedArgvRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ~40k exec events")
	}
	rd, err := redact.New(redact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		procs    = 1000
		execs    = 130
		budget   = DefaultMaxMemory
		overhead = 8 << 20
	)
	base := heapInUse()
	m := New(Config{BootID: bootID, BootOffset: offset, MaxMemory: budget})
	m.EndSnapshot()
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
			ev.Args = redTeamArgs(i*execs + j)
			Redact(rd, ev) // as the receiver does
			m.Apply(ev)
		}
	}
	h := heapInUse()
	grew := int64(h) - int64(base)
	t.Logf("accounted %d KiB, heap +%d MiB; stats %+v", m.MemoryBytes()>>10, grew>>20, m.Stats())
	if grew > budget+overhead {
		t.Errorf("heap grew by %d MiB, over the budget (%d MiB) plus %d MiB: accounted %d KiB",
			grew>>20, budget>>20, overhead>>20, m.MemoryBytes()>>10)
	}
}
