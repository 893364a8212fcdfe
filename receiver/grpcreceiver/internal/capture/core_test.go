// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
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
// arm64=/boot/vmlinuz-6.1.0-56-arm64 (Debian's arm64 kernel package ships an
// uncompressed Image there; its BTF is found inside) or amd64=/sys/kernel/btf/vmlinux:
// raw BTF, an ELF vmlinux, or a kernel image (gzipped or not) holding the BTF.
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
			kernel, err := loadKernelBTF(path)
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

// loadKernelBTF reads a kernel's BTF from path: raw BTF or an ELF vmlinux
// (btf.LoadSpec), else a kernel image, gzipped or not, searched for the BTF
// blob the kernel links between __start_BTF and __stop_BTF: the header
// (magic 0xeb9f, version 1, 24 bytes long) whose type and string sections
// follow it back to back.
func loadKernelBTF(path string) (*btf.Spec, error) {
	if spec, err := btf.LoadSpec(path); err == nil {
		return spec, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	magic := []byte{0x9f, 0xeb, 1, 0, 24, 0, 0, 0}
	for off := 0; ; off++ {
		i := bytes.Index(b[off:], magic)
		if i < 0 {
			return nil, errors.New(path + ": no BTF in it")
		}
		off += i
		if off+24 > len(b) {
			continue
		}
		h := b[off+8 : off+24] // type_off, type_len, str_off, str_len
		typeOff, typeLen := binary.LittleEndian.Uint32(h), binary.LittleEndian.Uint32(h[4:])
		strOff, strLen := binary.LittleEndian.Uint32(h[8:]), binary.LittleEndian.Uint32(h[12:])
		end := 24 + uint64(strOff) + uint64(strLen)
		if typeOff != 0 || strOff != typeLen || end > uint64(len(b)-off) {
			continue
		}
		if spec, err := btf.LoadSpecFromReader(bytes.NewReader(b[off : off+int(end)])); err == nil {
			return spec, nil
		}
	}
}
