// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package bpfload loads a BPF collection so that, when the kernel refuses
// it, the error carries the verifier's log: what it rejected, and where.
// Every loader of this module's own BPF objects (internal/sequencer, the
// grpc receiver's capture, tools/seqbench's native arms) loads through it,
// and the sequencer and the benchmark sum their programs' run time with it.
package bpfload

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
)

// verifierLog is how a refused load is tried again: the verifier's log at
// branch level, with room for a large program's log from the start.
var verifierLog = ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch, LogSizeStart: 1 << 24}}

// NewCollection loads spec. When the load fails it loads again with the
// verifier's log on, so that the error says what the verifier rejected; a
// successful load pays nothing for the log. Where the second load succeeds
// after all, the first error is returned.
func NewCollection(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	coll, err := ebpf.NewCollection(spec)
	if err == nil {
		return coll, nil
	}
	if again, err2 := ebpf.NewCollectionWithOptions(spec, verifierLog); err2 != nil {
		err = err2
	} else {
		again.Close()
	}
	return nil, err
}

// ProgramIDs are the kernel's ids of progs (for bpf_stats and bpftool),
// leaving out any whose id the kernel does not tell.
func ProgramIDs(progs []*ebpf.Program) []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	for _, p := range progs {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// RunStats are the kernel's run-time statistics of some programs, summed
// (kernel.bpf_stats_enabled must be on while they run).
type RunStats struct {
	RunTime   time.Duration
	RunCount  uint64
	Recursion uint64 // runs skipped: another BPF program was running on that CPU
}

// SumRunStats sums the run-time statistics of progs.
func SumRunStats(progs []*ebpf.Program) (RunStats, error) {
	var r RunStats
	for _, p := range progs {
		st, err := p.Stats()
		if err != nil {
			return r, fmt.Errorf("program stats: %w", err)
		}
		r.RunTime += st.Runtime
		r.RunCount += st.RunCount
		r.Recursion += st.RecursionMisses
	}
	return r, nil
}
