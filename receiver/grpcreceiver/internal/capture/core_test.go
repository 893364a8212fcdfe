// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed object of each architecture (gen.go: bpf2go -target amd64,arm64).
var archObjects = map[string]string{"amd64": "h2_x86_bpfel.o", "arm64": "h2_arm64_bpfel.o"}

// coreOptional are the programs that need not relocate on every kernel:
// the sock_* pair (Linux 6.3+; the loader picks another hook where the
// tracepoints are missing).
var coreOptional = []string{"h2_sock_send", "h2_sock_recv"}

// TestCOREAgainstKernelBTF computes the CO-RE relocations of every program
// of an architecture's committed object against a kernel BTF given as a
// file, without loading anything (no root, any host): what the loader does
// first, and where the arm64 collector once failed (`bad CO-RE relocation:
// invalid func`: a field of x86-64's struct pt_regs that arm64's lacks).
// H2_CORE_BTF=arch=path[,arch=path...], e.g.
// arm64=/tmp/vmlinux-arm64.btf: raw BTF (an ELF vmlinux's .BTF section, or
// the blob that starts with 9f eb 01 00 in an arm64 Image) or an ELF vmlinux.
// Skipped without it; the kernel tests load the objects for real.
func TestCOREAgainstKernelBTF(t *testing.T) {
	env := os.Getenv("H2_CORE_BTF")
	if env == "" {
		t.Skip("H2_CORE_BTF=arch=path (a kernel BTF file) not set")
	}
	for _, ap := range strings.Split(env, ",") {
		arch, path, ok := strings.Cut(ap, "=")
		obj := archObjects[arch]
		require.True(t, ok && obj != "", "H2_CORE_BTF: %q is not arch=path with arch amd64 or arm64", ap)
		t.Run(arch, func(t *testing.T) {
			kernel, err := btf.LoadSpec(path)
			require.NoError(t, err)
			spec, err := ebpf.LoadCollectionSpec(obj)
			require.NoError(t, err)
			require.NotEmpty(t, spec.Programs)
			for name, p := range spec.Programs {
				poisoned := corePoisoned(t, p, kernel)
				if slices.Contains(coreOptional, name) {
					t.Logf("%s (optional): %d unresolved", name, len(poisoned))
					continue
				}
				assert.Empty(t, poisoned, "%s: CO-RE relocations without a target in %s", name, path)
			}
		})
	}
}

// corePoisoned lists the CO-RE relocations of p that have no target in
// kernel (those cilium/ebpf replaces with a call to an invalid function).
func corePoisoned(t *testing.T, p *ebpf.ProgramSpec, kernel *btf.Spec) []string {
	t.Helper()
	var relos []*btf.CORERelocation
	for i := range p.Instructions {
		if r := btf.CORERelocationMetadata(&p.Instructions[i]); r != nil {
			relos = append(relos, r)
		}
	}
	b, err := btf.NewBuilder(nil, nil)
	require.NoError(t, err)
	fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, binary.LittleEndian, b.Add)
	require.NoError(t, err, p.Name)
	var bad []string
	for i, f := range fixups {
		if strings.Contains(f.String(), "poison") {
			bad = append(bad, relos[i].String())
		}
	}
	return bad
}
