// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package reorder

import "time"

// Frontier says, for a transport that hands each CPU's records over in
// ticket order (per-CPU perf buffers: a producer claims its ticket and
// outputs its record on one CPU, with preemption off), below which ticket a
// record that has not arrived never will: every ticket below Min has either
// been read, or was lost on its way (a failed output, a perf sample the
// kernel dropped), or belongs to a producer stuck for longer than Grace
// between its ticket and its output.
//
// A CPU passes ticket t in one of two ways:
//   - its stream went past t: a record at or after t came from it (Seen);
//     anything of its own below that came before or was lost;
//   - it went quiet after t was claimed: its buffer was found empty
//     (Drained) in a reader's pass over the buffers that began at least
//     Grace after the reader had read a head above t (Pass). This is how a
//     CPU that produces nothing (or whose last records were lost) stops
//     holding the others up; Grace is for a producer caught between its
//     ticket and its output.
//
// Where a producer can be preempted between its ticket and its output
// (PREEMPT_RT runs BPF programs with migration, not preemption, disabled),
// another on the same CPU may output a later ticket first: the frontier
// then gives up on the earlier one, counted lost, and its record is late.
// The accounting stays exact; the perf transport warns on such kernels.
type Frontier struct {
	Grace time.Duration
	cpus  []cpuMark
	// The heads read at the starts of passes, oldest first; heads[0] is the
	// newest one at least Grace older than the current pass.
	heads []headAt
	quiet uint64 // the head read at least Grace before the current pass began
}

type cpuMark struct {
	seen  uint64 // end of the highest ticket span read from the CPU
	quiet uint64 // the CPU holds no ticket below this
}

type headAt struct {
	head uint64
	at   time.Time
}

// NewFrontier tracks n CPUs (0 to n-1).
func NewFrontier(n int, grace time.Duration) *Frontier {
	return &Frontier{Grace: grace, cpus: make([]cpuMark, max(n, 1))}
}

func (f *Frontier) cpu(c int) *cpuMark {
	if c < 0 {
		c = 0
	}
	if c >= len(f.cpus) {
		// A CPU the reader was not told about (hot-plugged after start):
		// tracked from now on.
		f.cpus = append(f.cpus, make([]cpuMark, c+1-len(f.cpus))...)
	}
	return &f.cpus[c]
}

// Pass says that the reader begins a pass over the buffers at the time at,
// having read head (the tickets issued) at or before it: every buffer it
// finds empty from now on was empty after those tickets were claimed.
func (f *Frontier) Pass(head uint64, at time.Time) {
	if n := len(f.heads); n == 0 || at.Sub(f.heads[n-1].at) >= f.Grace/8 {
		// (Passes closer together keep the older head: a few per Grace.)
		f.heads = append(f.heads, headAt{head, at})
	}
	cut := at.Add(-f.Grace)
	i := 0
	for i+1 < len(f.heads) && !f.heads[i+1].at.After(cut) {
		i++
	}
	if !f.heads[i].at.After(cut) {
		f.quiet = max(f.quiet, f.heads[i].head)
	}
	if i > 0 {
		f.heads = append(f.heads[:0], f.heads[i:]...)
	}
}

// Seen records that a record spanning [first, end) came from cpu.
func (f *Frontier) Seen(cpu int, end uint64) {
	m := f.cpu(cpu)
	m.seen = max(m.seen, end)
}

// Drained records that cpu's buffer was found empty in the current pass.
func (f *Frontier) Drained(cpu int) {
	m := f.cpu(cpu)
	m.quiet = max(m.quiet, f.quiet)
}

// DrainedAll is Drained for every CPU: the reader emptied all buffers.
func (f *Frontier) DrainedAll() {
	for i := range f.cpus {
		f.cpus[i].quiet = max(f.cpus[i].quiet, f.quiet)
	}
}

// Min is the frontier: every CPU has passed every ticket below it.
func (f *Frontier) Min() uint64 {
	lo := ^uint64(0)
	for i := range f.cpus {
		lo = min(lo, max(f.cpus[i].seen, f.cpus[i].quiet))
	}
	return lo
}
