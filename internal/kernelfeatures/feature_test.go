// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package kernelfeatures

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A verifier's refusal is named by its log's last line (what 5.10 says of
// an atomic fetch), not by cilium/ebpf's summary with "(N line(s)
// omitted)"; any other probe error is quoted whole.
func TestLacks(t *testing.T) {
	f := newFeature("X", "Linux 9.9", "run Linux 9.9 or newer", nil)
	// The log as 5.10 writes it for an atomic fetch-add.
	ve := &ebpf.VerifierError{Cause: unix.EINVAL, Log: []string{
		"0: R1=ctx() R10=fp0", "BPF_STX uses reserved fields",
		"processed 0 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0", ""}}
	err := fmt.Errorf("load program: %w", ve)
	assert.Contains(t, err.Error(), "omitted", "cilium/ebpf's own text, which Lacks replaces")
	assert.Equal(t, "this kernel lacks X (Linux 9.9) (its verifier: BPF_STX uses reserved fields)", f.Lacks(err))
	assert.Equal(t, "this kernel lacks X (Linux 9.9) (FnTaskPtRegs for program type TracePoint not supported)",
		f.Lacks(errors.New("FnTaskPtRegs for program type TracePoint not supported")))
}

// A loader that cannot go on says what the kernel lacks, who needs it and
// the fix, and wraps the probe's error.
func TestRequire(t *testing.T) {
	notSupported := fmt.Errorf("probe: %w", ebpf.ErrNotSupported)
	has := newFeature("A", "Linux 1.0", "run Linux 1.0", func() error { return nil })
	lacks := newFeature("the B", "Linux 9.9", "run Linux 9.9 or newer", func() error { return notSupported })
	never := newFeature("C", "Linux 1.0", "", func() error { panic("probed after a missing feature") })

	require.NoError(t, Require("the test", has))
	err := Require("the test", has, lacks, never)
	require.EqualError(t, err, "this kernel lacks the B (Linux 9.9), which the test needs; run Linux 9.9 or newer (probe: not supported)")
	require.ErrorIs(t, err, ebpf.ErrNotSupported)
	var me *MissingError
	require.ErrorAs(t, err, &me)
	require.Same(t, lacks, me.Feature)
	require.Equal(t, "the test", me.Who)

	require.Equal(t, "kernel has A; lacks the B", Summary(has, lacks))
	require.Equal(t, "kernel has A", Summary(has))
}

// Every probe runs once per process, however many ask at once; its answer,
// an error included, is kept.
func TestProbeOnce(t *testing.T) {
	var runs atomic.Int32
	refused := errors.New("refused")
	f := newFeature("X", "Linux 9.9", "", func() error { runs.Add(1); return refused })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { assert.Same(t, refused, f.Probe()) })
	}
	wg.Wait()
	assert.False(t, f.Present())
	assert.Equal(t, int32(1), runs.Load())
}
