// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxCallChainStack is what kernels without BPF private stacks (6.1, the
// kernel matrix's 6.1 and 6.1-rt guests; before 6.10's per-program
// stacks) allow a chain of calls: each frame rounded up to 32 bytes.
const maxCallChainStack = 512

// TestStackFitsOlderVerifiers: in every committed object (both builds,
// both architectures), each program's frame plus its deepest callee's
// (the bpf_loop callback, the bounded loop's global functions), each
// rounded up to 32 bytes, stays within maxCallChainStack. 6.1 refused
// h2_raw_sys at 544 once, and h2_go_read_ret at 544 after the HTTP/1.x
// checks grew its frame by 24 bytes: this catches it here, without a
// 6.1 guest.
func TestStackFitsOlderVerifiers(t *testing.T) {
	for _, obj := range []string{"h2_x86_bpfel.o", "h2_arm64_bpfel.o", "h2nf_x86_bpfel.o", "h2nf_arm64_bpfel.o"} {
		spec, err := ebpf.LoadCollectionSpec(obj)
		require.NoError(t, err, obj)
		for name, p := range spec.Programs {
			frames := frameDepths(p.Instructions)
			main := frames[0]
			deepest := 0
			for _, f := range frames[1:] {
				deepest = max(deepest, f)
			}
			assert.LessOrEqual(t, main+deepest, maxCallChainStack, "%s %s: its frame %d + its deepest callee's %d (rounded to 32)", obj, name, main, deepest)
		}
	}
}

// frameDepths returns the stack each function of insns uses (the program
// first, then its subprograms by symbol), rounded up to 32 bytes as the
// verifier rounds it: the deepest fp-relative access, or fp-relative
// address taken (rX = r10; rX += -N).
func frameDepths(insns asm.Instructions) []int {
	var frames []int
	depth, fromFP := 0, map[asm.Register]bool{}
	end := func() {
		frames = append(frames, (max(depth, 1)+31)&^31)
		depth, fromFP = 0, map[asm.Register]bool{}
	}
	for i, ins := range insns {
		if i > 0 && ins.Symbol() != "" {
			end()
		}
		op := ins.OpCode
		switch {
		case op.Class() == asm.LdXClass && ins.Src == asm.R10, (op.Class() == asm.StXClass || op.Class() == asm.StClass) && ins.Dst == asm.R10:
			depth = max(depth, -int(ins.Offset))
		case op.Class().IsALU() && op.ALUOp() == asm.Mov && op.Source() == asm.RegSource:
			fromFP[ins.Dst] = ins.Src == asm.R10
		case op.Class().IsALU() && op.ALUOp() == asm.Add && op.Source() == asm.ImmSource && fromFP[ins.Dst]:
			depth = max(depth, -int(ins.Constant))
			fromFP[ins.Dst] = false
		case op.Class().IsALU() || op.Class().IsLoad():
			fromFP[ins.Dst] = false
		}
	}
	end()
	return frames
}
