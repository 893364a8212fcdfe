// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The committed objects of each architecture (gen.go: bpf2go -target
// amd64,arm64): with BPF atomic fetch, and without (h2nf).
var archObjects = map[string][]string{
	"amd64": {"h2_x86_bpfel.o", "h2nf_x86_bpfel.o"},
	"arm64": {"h2_arm64_bpfel.o", "h2nf_arm64_bpfel.o"},
}

// TestCOREAgainstKernelBTF computes the CO-RE relocations of every program
// of an architecture's committed object against a kernel's BTF given as a
// file (OTELCOL_SEQ_CORE_BTF, e.g. arm64=/boot/vmlinuz-6.1.0-56-arm64 of
// Debian's arm64 kernel package; skipped without it), without loading
// anything: what the loader does first, and where the arm64 collector once
// failed (`bad CO-RE relocation: invalid func`: fields of x86-64's struct
// pt_regs that arm64's lacks). The sock_* pair may miss (Linux 6.3+: the
// loader picks another hook where the tracepoints are missing). The kernel
// tests load the objects for real.
func TestCOREAgainstKernelBTF(t *testing.T) {
	for arch, kernel := range testutil.CoreKernels(t) {
		for _, obj := range archObjects[arch] {
			t.Run(arch+"/"+obj, func(t *testing.T) {
				bad := testutil.UnresolvedCORE(t, obj, kernel)
				for _, name := range []string{"h2_sock_send", "h2_sock_recv"} {
					t.Logf("%s (optional): %d unresolved", name, len(bad[name]))
					delete(bad, name)
				}
				assert.Empty(t, bad, "CO-RE relocations without a target, by program")
			})
		}
	}
}
