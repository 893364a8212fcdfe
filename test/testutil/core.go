// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

// CoreBTFEnv names kernel BTFs to check BPF objects' CO-RE relocations
// against, by architecture: arch=path[,arch=path...], arch amd64 or arm64,
// path raw BTF (/sys/kernel/btf/vmlinux), an ELF vmlinux, or a kernel image,
// gzipped or not, holding the BTF (Debian's arm64 boot/vmlinuz-*).
const CoreBTFEnv = "OTELCOL_SEQ_CORE_BTF"

// CoreKernels are the kernel BTFs CoreBTFEnv names, by architecture; the
// test is skipped where it is not set. Nothing is loaded: any host, no root.
func CoreKernels(t *testing.T) map[string]*btf.Spec {
	t.Helper()
	env := os.Getenv(CoreBTFEnv)
	if env == "" {
		t.Skip(CoreBTFEnv + "=arch=path (a kernel's BTF) not set")
	}
	out := map[string]*btf.Spec{}
	for _, ap := range strings.Split(env, ",") {
		arch, path, ok := strings.Cut(ap, "=")
		require.True(t, ok && (arch == "amd64" || arch == "arm64"), "%s: %q is not arch=path with arch amd64 or arm64", CoreBTFEnv, ap)
		spec, err := loadKernelBTF(path)
		require.NoError(t, err)
		out[arch] = spec
	}
	return out
}

// UnresolvedCORE computes the CO-RE relocations of every program of the
// object at path against kernel, as the loader does first, and lists by
// program those with no target there (the ones cilium/ebpf replaces with a
// call to an invalid function: `bad CO-RE relocation: invalid func` when
// the kernel verifies it). Programs with none are left out. A relocation
// whose field the same program first checks with bpf_core_field_exists
// (the same type and accessor: the classic guard for a field a kernel
// release renamed) is not listed: its poisoned instruction is in the branch
// the check rules out.
func UnresolvedCORE(t *testing.T, path string, kernel *btf.Spec) map[string][]string {
	t.Helper()
	spec, err := ebpf.LoadCollectionSpec(path)
	require.NoError(t, err)
	require.NotEmpty(t, spec.Programs, path)
	out := map[string][]string{}
	for name, p := range spec.Programs {
		var relos []*btf.CORERelocation
		for i := range p.Instructions {
			if r := btf.CORERelocationMetadata(&p.Instructions[i]); r != nil {
				relos = append(relos, r)
			}
		}
		b, err := btf.NewBuilder(nil, nil)
		require.NoError(t, err)
		fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, binary.LittleEndian, b.Add)
		require.NoError(t, err, "%s: %s", path, name)
		guarded := map[string]bool{}
		for _, r := range relos {
			if s := r.String(); strings.HasPrefix(s, "CORERelocation(field_exists, ") {
				guarded[coreTarget(s)] = true
			}
		}
		for i, f := range fixups {
			if strings.Contains(f.String(), "poison") && !guarded[coreTarget(relos[i].String())] {
				out[name] = append(out[name], relos[i].String())
			}
		}
	}
	return out
}

// coreTarget is a relocation's type and accessor without its kind and id:
// `Struct:"x"[0:1]` of `CORERelocation(byte_off, Struct:"x"[0:1], local_id=7)`.
func coreTarget(s string) string {
	if i := strings.Index(s, ", "); i >= 0 {
		s = s[i+2:]
	}
	if i := strings.LastIndex(s, ", local_id"); i >= 0 {
		s = s[:i]
	}
	return s
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
