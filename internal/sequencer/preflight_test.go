//go:build linux

package sequencer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// A verifier's refusal is named by its log's last line (what 5.10 says of
// an atomic fetch), not by cilium/ebpf's summary with "(N line(s)
// omitted)"; any other probe error is quoted whole.
func TestFeatureLacks(t *testing.T) {
	f := Feature{What: "X (Linux 9.9)"}
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
