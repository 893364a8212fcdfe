// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package gotls

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls/elftest"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
)

const tlsProgram = `package main

import (
	"crypto/tls"
	"os"
)

func main() {
	if len(os.Args) > 5 {
		c := tls.Client(nil, &tls.Config{})
		_, _ = c.Write(nil)
		_, _ = c.Read(nil)
		_ = c.Close()
	}
}
`

const plainProgram = `package main

import "os"

func main() { os.Exit(len(os.Args) - 1) }
`

// buildFor compiles src for goarch (cross-compiled where it is not this
// machine's: no cgo) with the go command running this test, in a module of
// its own (standard library only).
func buildFor(t *testing.T, goarch, src string, flags ...string) string {
	t.Helper()
	return buildEnv(t, []string{"CGO_ENABLED=0", "GOARCH=" + goarch}, src, flags...)
}

// buildEnv is buildFor with the environment env (CGO_ENABLED, GOARCH).
func buildEnv(t *testing.T, env []string, src string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(append([]string{"build", "-o", bin}, flags...), ".")...) //nolint:staticcheck // SA1019: the toolchain that built this test, on this machine
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local"), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// objdumpRets lists the addresses of the RET instructions `go tool objdump`
// prints for one function: an independent disassembly.
func objdumpRets(t *testing.T, bin, fn string) []uint64 {
	t.Helper()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "objdump", "-s", "^"+regexp.QuoteMeta(fn)+"$", bin).CombinedOutput() //nolint:staticcheck // SA1019: the toolchain that built this test, on this machine
	require.NoError(t, err, "%s", out)
	var rets []uint64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		// "  file.go:123\t0x4f1234\t\tc3\t\t\tRET" (arm64: d65f03c0)
		if len(f) >= 4 && f[len(f)-1] == "RET" {
			a, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			require.NoError(t, err, line)
			rets = append(rets, a)
		}
	}
	require.NotEmpty(t, rets, "objdump shows no RET in %s:\n%s", fn, out)
	return rets
}

// findFor is Find for an executable of goarch.
func findFor(t *testing.T, bin, goarch string) (*Probes, error) {
	t.Helper()
	f, err := os.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	return FindReaderFor(f, st.Size(), goarch)
}

// isRet says whether the instruction at raw[off:] is a RET of goarch.
func isRet(t *testing.T, goarch string, raw []byte, off uint64) bool {
	t.Helper()
	if goarch == "arm64" {
		inst, err := arm64asm.Decode(raw[off : off+4])
		require.NoError(t, err)
		return inst.Op == arm64asm.RET
	}
	inst, err := x86asm.Decode(raw[off:], 64)
	require.NoError(t, err)
	return inst.Op == x86asm.RET
}

// stackCheckJump is the target (a file offset) of the conditional jump
// that ends fn's stack check, just before fn.Body.
func stackCheckJump(t *testing.T, goarch string, raw []byte, fn Func) uint64 {
	t.Helper()
	if goarch == "arm64" {
		inst, err := arm64asm.Decode(raw[fn.Body-4 : fn.Body])
		require.NoError(t, err)
		require.Equal(t, arm64asm.B, inst.Op, "%s: %v before the body", fn.Name, inst)
		require.Equal(t, "LS", inst.Args[0].String(), "%s: %v before the body", fn.Name, inst)
		return fn.Body - 4 + uint64(int64(inst.Args[1].(arm64asm.PCRel)))
	}
	jcc, err := x86asm.Decode(raw[fn.Body-6:], 64)
	require.NoError(t, err)
	require.Equal(t, x86asm.JBE, jcc.Op, "%s: %v before the body", fn.Name, jcc)
	return fn.Body + uint64(jcc.Args[0].(x86asm.Rel))
}

// TestFind checks both architectures' executables whatever the host's
// (FindReaderFor; the arm64 ones cross-compiled).
func TestFind(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) { testFind(t, goarch) })
	}
}

func testFind(t *testing.T, goarch string) {
	var ref *Probes
	for _, v := range []struct {
		name    string
		flags   []string
		pclntab bool
	}{
		{"symtab", nil, false},
		{"stripped", []string{"-ldflags=-s -w"}, true},
		{"pie", []string{"-buildmode=pie"}, false},
	} {
		t.Run(v.name, func(t *testing.T) {
			bin := buildFor(t, goarch, tlsProgram, v.flags...)
			p, err := findFor(t, bin, goarch)
			require.NoError(t, err)
			assert.Equal(t, v.pclntab, p.Pclntab)
			assert.Equal(t, runtime.Version(), p.GoVersion)
			assert.Equal(t, goarch, p.Arch)
			if goarch != runtime.GOARCH {
				_, err = Find(bin)
				assert.ErrorIs(t, err, ErrArch, "an executable of another architecture")
			}
			raw, err := os.ReadFile(bin)
			require.NoError(t, err)
			for _, fn := range []Func{p.Write, p.Read, p.Close} {
				// The body starts after the stack check's jump to the end of the function.
				require.Greater(t, fn.Body, fn.Entry, fn.Name)
				target := stackCheckJump(t, goarch, raw, fn)
				require.Greater(t, target, fn.Body, fn.Name)
				require.Less(t, target, fn.Entry+fn.Size, fn.Name)
			}
			for _, fn := range []Func{p.Write, p.Read} {
				require.NotEmpty(t, fn.Returns, fn.Name)
				for _, off := range fn.Returns {
					require.Greater(t, off, fn.Entry)
					require.Less(t, off, fn.Entry+fn.Size)
					assert.True(t, isRet(t, goarch, raw, off), "%s at file offset %#x", fn.Name, off)
				}
				if v.pclntab {
					continue // objdump needs the symbols; compared with the unstripped build below
				}
				// The same RETs as the Go toolchain's own disassembler.
				var addrs []uint64
				for _, off := range fn.Returns {
					addrs = append(addrs, fn.Addr+off-fn.Entry)
				}
				assert.Equal(t, objdumpRets(t, bin, fn.Name), addrs, fn.Name)
			}
			// The entries are the symbols' (the stripped build is checked
			// against the unstripped one: the same code at the same place).
			if !v.pclntab {
				f, err := elf.Open(bin)
				require.NoError(t, err)
				defer f.Close()
				syms, err := f.Symbols()
				require.NoError(t, err)
				for _, fn := range []Func{p.Write, p.Read, p.Close} {
					var sym elf.Symbol
					for _, s := range syms {
						if s.Name == fn.Name {
							sym = s
						}
					}
					assert.Equal(t, sym.Value, fn.Addr, fn.Name)
					assert.Equal(t, sym.Size, fn.Size, fn.Name)
					off, err := fileOffset(f, sym.Value)
					require.NoError(t, err)
					assert.Equal(t, off, fn.Entry, fn.Name)
					assert.Equal(t, raw[off:off+16], raw[fn.Entry:fn.Entry+16])
				}
			}
			if v.name == "symtab" {
				ref = p
			}
			if v.name == "stripped" && ref != nil {
				for i, fn := range []Func{p.Write, p.Read, p.Close} {
					want := []Func{ref.Write, ref.Read, ref.Close}[i]
					assert.Equal(t, want.Addr, fn.Addr, fn.Name)
					assert.Equal(t, want.Returns, fn.Returns, fn.Name)
					assert.Equal(t, want.Body, fn.Body, fn.Name)
				}
			}
		})
	}
}

func TestFindRefuses(t *testing.T) {
	_, err := Find(buildFor(t, runtime.GOARCH, plainProgram))
	assert.ErrorIs(t, err, ErrNoTLS)
	_, err = Find(buildFor(t, runtime.GOARCH, plainProgram, "-ldflags=-s -w"))
	assert.ErrorIs(t, err, ErrNoTLS)
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	_, err = Find(sh)
	assert.ErrorIs(t, err, ErrNotGo)
	_, err = Find(filepath.Join(t.TempDir(), "missing"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

func TestBody(t *testing.T) {
	for _, c := range []struct {
		code []byte
		body uint64
	}{
		// CMPQ SP, 0x10(R14); JBE rel32; PUSHQ BP
		{[]byte{0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x7a, 0x03, 0x00, 0x00, 0x55}, 10},
		// LEAQ -0x48(SP), R12; CMPQ R12, 0x10(R14); JBE rel32; PUSHQ BP
		{[]byte{0x4c, 0x8d, 0x64, 0x24, 0xb8, 0x4d, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x93, 0x07, 0x00, 0x00, 0x55}, 15},
		// no stack check: PUSHQ BP; MOVQ SP, BP; RET
		{[]byte{0x55, 0x48, 0x89, 0xe5, 0xc3}, 0},
		// a compare with something else
		{[]byte{0x48, 0x39, 0xc3, 0x0f, 0x86, 0, 0, 0, 0, 0x55}, 0},
	} {
		assert.Equal(t, c.body, Body(c.code), "%x", c.code)
	}
}

func TestReturns(t *testing.T) {
	// mov %rax,%rbx; ret; ret $8; nop; call rel32
	code := []byte{0x48, 0x89, 0xc3, 0xc3, 0xc2, 0x08, 0x00, 0x90, 0xe8, 0, 0, 0, 0}
	rets, err := Returns(code)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 4}, rets)
	// A cut instruction is an error, never a guess.
	for _, cut := range []int{1, 2, 9, 12} {
		_, err = Returns(code[:cut])
		assert.Error(t, err, "cut at %d", cut)
	}
}

func TestBodyARM64(t *testing.T) {
	for _, c := range []struct {
		code []uint32
		body uint64
	}{
		// MOVD 16(R28), R16; CMP R16, RSP; BLS; MOVD.W R30, -112(RSP)
		{[]uint32{0xf9400b90, 0xeb3063ff, 0x54001909, 0xf8190ffe}, 12},
		// MOVD 16(R28), R16; SUB $80, RSP, R17; CMP R16, R17; BLS; MOVD.W R30, -208(RSP)
		{[]uint32{0xf9400b90, 0xd10143f1, 0xeb10023f, 0x540033a9, 0xf8130ffe}, 16},
		// no stack check: MOVD.W R30, -112(RSP); RET
		{[]uint32{0xf8190ffe, 0xd65f03c0}, 0},
		// a load from another offset of g: MOVD 24(R28), R16; CMP R16, RSP; BLS
		{[]uint32{0xf9400f90, 0xeb3063ff, 0x54001909}, 0},
		// BHI instead of BLS
		{[]uint32{0xf9400b90, 0xeb3063ff, 0x54001908}, 0},
	} {
		assert.Equal(t, c.body, BodyARM64(words(c.code...)), "%x", c.code)
	}
}

func TestReturnsARM64(t *testing.T) {
	// MOVD R0, R1; RET; (zero padding); an atomic the decoder does not know; RET; RET (R1)
	code := words(0xaa0003e1, 0xd65f03c0, 0, 0x88fbfc86, 0xd65f03c0, 0xd65f0020)
	rets, err := ReturnsARM64(code)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 16, 20}, rets)
	for _, cut := range []int{1, 2, 3, 5, 23} {
		_, err = ReturnsARM64(code[:cut])
		assert.Error(t, err, "cut at %d", cut)
	}
}

// words is arm64 code: each instruction word little-endian.
func words(w ...uint32) []byte {
	b := make([]byte, 0, 4*len(w))
	for _, x := range w {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

// The synthetic executable (the fuzz seeds' base) is one Find accepts: the
// three functions, their stack checks and their two RETs each.
func TestFindSynthetic(t *testing.T) {
	b := elftest.Synthetic("go1.22.0")
	p, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	require.NoError(t, err)
	assert.Equal(t, "go1.22.0", p.GoVersion)
	for _, fn := range []Func{p.Write, p.Read, p.Close} {
		assert.Equal(t, fn.Entry+6, fn.Body, fn.Name)
		assert.Equal(t, []uint64{fn.Entry + 7, fn.Entry + 9}, fn.Returns, fn.Name)
	}
	b = elftest.Synthetic("go1.16")
	_, err = FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	assert.ErrorIs(t, err, ErrGoABI)
}

// The Go version is read from both build info layouts; a version string
// whose declared length is hostile is refused without reading it (debug/
// buildinfo made a 10 MiB buffer for it: FuzzFind's find, kept in
// testdata/fuzz/FuzzFind/699af8ced094209f).
func TestGoVersionLayouts(t *testing.T) {
	find := func(b []byte) (*Probes, error) {
		return FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	}
	p, err := find(elftest.SyntheticPointers("go1.17.13"))
	require.NoError(t, err)
	assert.Equal(t, "go1.17.13", p.GoVersion)
	_, err = find(elftest.SyntheticPointers("go1.16.15"))
	require.ErrorIs(t, err, ErrGoABI)
	assert.Contains(t, err.Error(), "go1.16.15")

	biOff := func(b []byte) int {
		f, err := elf.NewFile(bytes.NewReader(b))
		require.NoError(t, err)
		return int(f.Section(".go.buildinfo").Offset)
	}
	for name, patch := range map[string]func([]byte){
		"inline 2^40": func(b []byte) {
			o := biOff(b)
			n := binary.PutUvarint(b[o+32:], 1<<40)
			copy(b[o+32+n:], "go1.22.0")
		},
		"pointer 2^40":            func(b []byte) { binary.LittleEndian.PutUint64(b[biOff(b)+40:], 1<<40) },
		"pointer out of the file": func(b []byte) { binary.LittleEndian.PutUint64(b[biOff(b)+16:], 1<<50) },
		"no magic":                func(b []byte) { b[biOff(b)] = 0 },
	} {
		b := elftest.SyntheticPointers("go1.17.13")
		if strings.HasPrefix(name, "inline") {
			b = elftest.Synthetic("go1.22.0")
		}
		patch(b)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := find(b)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrGoABI, name)
		assert.Contains(t, err.Error(), ".go.buildinfo", name)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), name)
	}
}

// A Go executable whose symbol table says crypto/tls.(*Conn).Write is 2^62
// bytes long (or whose .symtab runs past its end) is an error naming the
// problem, never a panic (it was: makeslice: len out of range).
func TestFindHostileSizes(t *testing.T) {
	bin := buildFor(t, runtime.GOARCH, tlsProgram)
	require.NoError(t, grpctest.PatchFileSymbolSize(bin, WriteSym, 1<<62))
	_, err := Find(bin)
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), WriteSym)

	syn := elftest.Synthetic("go1.22.0")
	for name, size := range map[string]uint64{"max": 1 << 62, "past the segment": 1 << 19, "wraps": ^uint64(0)} {
		b := slices.Clone(syn)
		require.NoError(t, grpctest.PatchSymbolSize(b, ReadSym, size))
		_, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
		require.ErrorIs(t, err, ErrMalformed, name)
		assert.Contains(t, err.Error(), ReadSym, name)
	}
	// .symtab declared 2^40 bytes long: refused before debug/elf allocates it.
	b := slices.Clone(syn)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	sh := f.SectionByType(elf.SHT_SYMTAB)
	shOff := binary.LittleEndian.Uint64(b[40:])
	idx := slices.Index(f.Sections, sh)
	binary.LittleEndian.PutUint64(b[shOff+uint64(idx)*64+32:], 1<<40)
	_, err = FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), fmt.Sprintf("section %d (file offset", idx))
}

// FuzzFind feeds mutated executables to FindReader: it must not panic (the
// parsers' panics are recovered, and counted as ErrMalformed), allocate more
// than a small multiple of the input, nor take long. Each is read twice:
// as it is, and as the start of a sparse file of 16 GiB (the input, then a
// hole: zeros that the file does not hold), where what is allocated must
// still be bounded by the bytes held, whatever the headers say of the
// rest. Seeds in testdata/fuzz/FuzzFind (TestFuzzSeeds writes them).
func FuzzFind(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Both architectures' paths, whatever the collector's: an arm64
		// executable is read by FindReaderFor(…, "arm64") on an amd64 host.
		for _, goarch := range []string{"amd64", "arm64"} {
			for _, sparse := range []bool{false, true} {
				var r io.ReaderAt = bytes.NewReader(b)
				size := int64(len(b))
				if sparse {
					r, size = sparseFile{b}, 16<<30
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				_, err := FindReaderHeld(r, size, Dense(int64(len(b))), goarch)
				took := time.Since(start)
				runtime.ReadMemStats(&after)
				if err != nil && strings.Contains(err.Error(), "parser panic") {
					t.Logf("%s: recovered: %v", goarch, err) // allowed, but worth seeing
				}
				if d := after.TotalAlloc - before.TotalAlloc; d > 64*uint64(len(b))+4<<20 {
					t.Fatalf("%s (sparse %v): %d bytes allocated for %d bytes held", goarch, sparse, d, len(b))
				}
				if took > 5*time.Second {
					t.Fatalf("%s (sparse %v): took %s for %d bytes held", goarch, sparse, took, len(b))
				}
			}
		}
	})
}

// sparseFile is a file of 16 GiB that holds b at its start: a hole after
// (reads as zeros).
type sparseFile struct{ b []byte }

func (s sparseFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= 16<<30 {
		return 0, io.EOF
	}
	n := len(p)
	if rest := 16<<30 - off; int64(n) > rest {
		n = int(rest)
	}
	clear(p[:n])
	if off < int64(len(s.b)) {
		copy(p[:n], s.b[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fuzzSeeds are the synthetic executable, one built by an old Go, one
// with a hostile symbol size, the first marked arm64 (e_machine
// EM_AARCH64), which takes the arm64 decoder over its bytes, one with
// Go 1.17's build info layout, and stripped ones (the functions in a
// .gopclntab) of each layout of that table.
func fuzzSeeds() [][]byte {
	huge := elftest.Synthetic("go1.22.0")
	_ = grpctest.PatchSymbolSize(huge, WriteSym, 1<<62)
	arm := elftest.Synthetic("go1.22.0")
	binary.LittleEndian.PutUint16(arm[18:], uint16(elf.EM_AARCH64))
	seeds := [][]byte{elftest.Synthetic("go1.22.0"), elftest.Synthetic("go1.16"), huge, arm, elftest.SyntheticPointers("go1.17.13")}
	for _, l := range pclnLayouts {
		seeds = append(seeds, stripped(l.exe(), l.magic, nil))
	}
	return seeds
}

// The committed seeds are fuzzSeeds (GOTLS_WRITE_SEEDS=1 rewrites them).
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzFind")
	for i, s := range fuzzSeeds() {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		path := filepath.Join(dir, fmt.Sprintf("synthetic-%d", i))
		if os.Getenv("GOTLS_WRITE_SEEDS") != "" {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%s: run with GOTLS_WRITE_SEEDS=1", path)
	}
}
