// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// recount computes from scratch what the model holds, as budget.go charges
// it, checks each entry's invariants, and returns the total.
func (m *Model) recount() (int, error) {
	total := 0
	check := func(p *proc) error {
		data := len(p.name) + len(p.execPath) + strBytes(p.args) + strBytes(p.arena)
		used := 0
		for i := range p.events {
			e := &p.events[i]
			data += len(e.path)
			if e.argHi > e.argLo {
				if i < int(p.argsFrom) {
					return fmt.Errorf("pid %d: event %d before argsFrom %d has argv", p.pid, i, p.argsFrom)
				}
				if int(e.argLo) != used {
					return fmt.Errorf("pid %d: event %d argv at %d, want %d", p.pid, i, e.argLo, used)
				}
				used = int(e.argHi)
			}
		}
		if used != len(p.arena) {
			return fmt.Errorf("pid %d: events use %d arena strings of %d", p.pid, used, len(p.arena))
		}
		if a := strBytes(p.arena); a != p.arenaData || strBytes(p.args) != p.argsData {
			return fmt.Errorf("pid %d: arenaData %d, recounted %d", p.pid, p.arenaData, a)
		}
		if c := argsCost(p.arena); c > m.cfg.MaxEventArgsBytes {
			return fmt.Errorf("pid %d: exec events keep %d argv bytes, over %d", p.pid, c, m.cfg.MaxEventArgsBytes)
		}
		if len(p.args) > m.cfg.MaxArgs || strBytes(p.args)+len(p.args) > m.cfg.MaxArgsBytes {
			return fmt.Errorf("pid %d: %d args kept, over the per-exec limits", p.pid, len(p.args))
		}
		size := entryBytes + data + strHdr*(cap(p.args)+cap(p.arena)) + eventBytes*cap(p.events)
		if data != p.data || size != p.bytes {
			return fmt.Errorf("pid %d: charged %d (data %d), recounted %d (data %d)", p.pid, p.bytes, p.data, size, data)
		}
		total += size
		return nil
	}
	for _, p := range m.heap {
		if err := check(p); err != nil {
			return 0, err
		}
	}
	for _, p := range m.finished[m.fhead:] {
		if err := check(p); err != nil {
			return 0, err
		}
	}
	for _, p := range m.free {
		if p.bytes != 0 || cap(p.args) > maxFreeArgs || cap(p.arena) > maxFreeArena || cap(p.events) > maxFreeEvents {
			return 0, fmt.Errorf("free entry charged %d, capacities %d %d %d", p.bytes, cap(p.args), cap(p.arena), cap(p.events))
		}
	}
	if total != m.bytes {
		return total, fmt.Errorf("accounted %d, recounted %d", m.bytes, total)
	}
	return total, nil
}

// budgetOps drives a Model with random operations read from ops, checking
// the account after each.
func budgetOps(t testing.TB, cfg Config, ops []byte) *Model {
	cfg.BootID, cfg.BootOffset, cfg.ThreadEvents = bootID, offset, true
	m := New(cfg)
	shell := pk{100, 1}
	m.AddRunning(snapEv(1, shell, pk{1, 1}, "sh", 100))
	m.EndSnapshot()
	kt := uint64(1000)
	const pids = 48
	starts := map[uint32]uint64{}
	next := func(i int) byte {
		if i < len(ops) {
			return ops[i]
		}
		return 0
	}
	for i := 0; i < len(ops); i += 3 {
		op, a, b := ops[i], next(i+1), next(i+2)
		pid := uint32(1000 + int(a)%pids)
		kt++
		p := pk{pid, starts[pid]}
		switch op % 8 {
		case 0, 1: // fork (a new process at pid; a live one there misses its exit)
			starts[pid] = kt
			m.Apply(forkEv(kt, pk{pid, kt}, shell, "sh", 100))
		case 2, 3: // exec with b%64 arguments of random lengths
			ev := execEv(kt, p, shell, "x"+strconv.Itoa(int(b)%5), "/bin/"+strings.Repeat("p", int(b)))
			var sb strings.Builder
			for j := range int(b) % 64 {
				sb.WriteString(strings.Repeat(string(rune('a'+j%26)), int(a+b+byte(j))%40))
				sb.WriteByte(0)
			}
			if sb.Len() > 0 {
				ev.Args = strings.Split(strings.TrimSuffix(sb.String(), "\x00"), "\x00")
			}
			if b&0x80 != 0 {
				ev.Flags |= event.FlagArgsTruncated
			}
			m.Apply(ev)
		case 4: // a thread event
			m.Apply(threadEv(event.ThreadStart, kt, p, pid+1, p.start+1))
		case 5: // exit
			m.Apply(exitEv(kt, p, shell, "x", uint32(b)))
		case 6: // the pipeline takes spans
			m.AppendFinished(ptrace.NewSpanSlice())
		case 7: // a process seen at start, with a long /proc cmdline
			ev := snapEv(kt, pk{pid + 100, kt}, shell, "y", 100)
			ev.Filename = "/usr/bin/y"
			ev.Args = strings.Split(strings.Repeat("arg\x00", int(a)*int(b)%3000+1), "\x00")
			m.AddRunning(ev)
		}
		if _, err := m.recount(); err != nil {
			t.Fatalf("op %d (%d): %v", i/3, op%8, err)
		}
		if m.bytes > m.cfg.MaxMemory {
			t.Fatalf("op %d: %d bytes accounted, over %d", i/3, m.bytes, m.cfg.MaxMemory)
		}
	}
	for m.Stats().Pending > 0 {
		m.AppendFinished(ptrace.NewSpanSlice())
		if _, err := m.recount(); err != nil {
			t.Fatal(err)
		}
	}
	m.CloseAll(kt)
	m.DiscardFinished()
	if _, err := m.recount(); err != nil {
		t.Fatal(err)
	}
	if m.bytes != 0 {
		t.Fatalf("%d bytes accounted with nothing held", m.bytes)
	}
	return m
}

var budgetCfgs = []Config{
	{},
	{MaxMemory: 64 << 10, MaxEventArgsBytes: 600, MaxArgs: 16, MaxArgsBytes: 200, MaxSpanEvents: 8},
	{MaxMemory: 24 << 10, MaxProcesses: 16, MaxFinished: 8, BuildSpans: 3, BuildBytes: 4096},
}

// TestBudgetRandom: after random operations, under generous and tight
// budgets, the account equals a recount of what is held and stays within
// the budget, and reaches zero once everything is built.
func TestBudgetRandom(t *testing.T) {
	for ci, cfg := range budgetCfgs {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, uint64(ci)))
			ops := make([]byte, 6000)
			for i := range ops {
				ops[i] = byte(rng.Uint32())
			}
			budgetOps(t, cfg, ops)
		}
	}
	// The tight budget bites, by each reason.
	rng := rand.New(rand.NewPCG(7, 7))
	ops := make([]byte, 30000)
	for i := range ops {
		ops[i] = byte(rng.Uint32())
	}
	st := budgetOps(t, budgetCfgs[2], ops).Stats()
	t.Logf("%+v", st)
	assert.Positive(t, st.EventArgsDroppedMem)
	assert.Positive(t, st.DroppedEventsMem)
	assert.Positive(t, st.DroppedSpansMem)
	assert.Positive(t, st.ArgsTruncated)
	st = budgetOps(t, budgetCfgs[1], ops).Stats()
	assert.Positive(t, st.EventArgsDropped)
}

func FuzzModelBudget(f *testing.F) {
	f.Add(uint8(0), []byte{0, 1, 0, 2, 1, 60, 2, 1, 61, 5, 1, 0, 6, 0, 0})
	f.Add(uint8(2), []byte{0, 3, 0, 2, 3, 200, 4, 3, 0, 7, 9, 99, 5, 3, 1})
	f.Fuzz(func(t *testing.T, c uint8, ops []byte) {
		budgetOps(t, budgetCfgs[int(c)%len(budgetCfgs)], ops)
	})
}

// TestArgsCaps: argv is cut at MaxArgs and MaxArgsBytes, marked on the span
// and its exec event, counted; the exec events of one process keep at most
// MaxEventArgsBytes of argv, dropping the oldest first, marked.
func TestArgsCaps(t *testing.T) {
	r := newRunner(t, Config{MaxArgs: 3, MaxArgsBytes: 12, MaxEventArgsBytes: 2 * (3*16 + 4)})
	p := pk{1000, 100}
	r.apply(forkEv(100, p, initP, "sh", 1))
	r.apply(execEv(101, p, initP, "a", "/a", "a", "b", "c", "d"))            // count: a b c
	r.apply(execEv(102, p, initP, "b", "/b", "aaaa", "bbbb", "cccccccc"))    // bytes: aaaa bbbb cc (5+5+2)
	r.apply(execEv(103, p, initP, "c", "/c", "x", "y"))                      // fits; drops the first event's argv
	r.apply(execEv(104, p, initP, "d", "/d", "\xe4\xb8\xadxxxxxxxxxxxxxxx")) // cut at 11 bytes
	r.apply(exitEv(105, p, initP, "d", 0))
	require.Equal(t, 1, r.drain())
	sp := r.span(p)
	assert.Equal(t, []string{"\xe4\xb8\xadxxxxxxxx"}, strs(attr(t, sp.Attributes(), pdatamap.AttrProcessCommandArgs)))
	assert.True(t, attr(t, sp.Attributes(), pdatamap.AttrArgsTruncated).Bool())
	evs := sp.Events()
	require.Equal(t, 4, evs.Len())
	type want struct {
		args             []string
		truncated, dropd bool
	}
	wants := []want{{nil, true, true}, {nil, true, true}, {[]string{"x", "y"}, false, false}, {[]string{"\xe4\xb8\xadxxxxxxxx"}, true, false}}
	for i, w := range wants {
		a := evs.At(i).Attributes()
		var args []string
		if v, ok := a.Get(pdatamap.AttrProcessCommandArgs); ok {
			args = strs(v)
		}
		_, tr := a.Get(pdatamap.AttrArgsTruncated)
		_, dr := a.Get(pdatamap.AttrArgsDropped)
		assert.Equal(t, w, want{args, tr, dr}, "event %d", i)
	}
	st := r.m.Stats()
	assert.Equal(t, uint64(3), st.ArgsTruncated)
	assert.Equal(t, uint64(2), st.EventArgsDropped)
	assert.Zero(t, st.Memory) // nothing held
}
