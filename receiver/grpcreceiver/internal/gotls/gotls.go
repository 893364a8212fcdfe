// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package gotls finds where to probe Go's crypto/tls in an executable: the
// file offsets of the entry, of the end of the stack check and of every RET
// instruction of crypto/tls.(*Conn).Write and Read, and of Close. Return
// probes are placed at the RETs because uretprobes corrupt Go stacks (the
// runtime copies and walks goroutine stacks, and finds the return address
// the kernel replaced). Pure Go: debug/elf, its own streaming readers of
// .symtab and .gopclntab (a stripped executable's: debug/gosym holds the
// table whole, tens of MiB in a large one), and the x86-64 and arm64
// decoders of golang.org/x/arch; amd64 executables of Go 1.17+
// and arm64 ones of Go 1.18+ (the register ABI the probes read), of the
// collector's own architecture (Find, FindFile, FindReader: the probes are
// built for it) or of the one asked for (FindReaderFor).
//
// Every file is untrusted input (any local user can run a program, and the
// collector runs as root): sizes and offsets read from it are checked
// against what the file really holds (Held: not its apparent size, which a
// sparse file makes anything) and against a cap per table before anything
// is allocated or read; every read goes through a budget (MaxRead,
// MaxFileRead); and a panic in the parsers becomes an error wrapping
// ErrMalformed.
package gotls

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"go/version"
	"io"
	"iter"
	"os"
	"runtime"
	"slices"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// The functions probed.
const (
	WriteSym = "crypto/tls.(*Conn).Write"
	ReadSym  = "crypto/tls.(*Conn).Read"
	CloseSym = "crypto/tls.(*Conn).Close"
)

// Why an executable is not probed.
var (
	ErrNotGo   = errors.New("not a Go executable")
	ErrNoTLS   = errors.New("no crypto/tls.(*Conn) Write, Read and Close in it")
	ErrArch    = errors.New("not an executable of the collector's architecture")
	ErrGoABI   = errors.New("built by Go before its register ABI (1.17 on amd64, 1.18 on arm64)")
	ErrNoTable = errors.New("a Go executable with neither a symbol table nor a readable .gopclntab")
	// ErrMalformed: a size or offset in the file points outside it or is
	// beyond sense, or a parser panicked on it.
	ErrMalformed = errors.New("malformed executable")
)

// MaxFuncSize bounds the code of one probed function (crypto/tls's Write,
// Read and Close are a few hundred bytes to a few KiB: 2 KiB at most in
// Go 1.26), and MaxReturns its RET instructions (8 at most), each a
// return probe: the time decoding takes (1 MiB of one-byte instructions
// is 0.3 s) and the probes a file may ask for.
const (
	MaxFuncSize = 64 << 10
	MaxReturns  = 64
)

// Func is one function's probe points, as offsets in the file (what a
// uprobe takes).
type Func struct {
	Name    string
	Addr    uint64   // virtual address of the entry
	Size    uint64   // bytes of code
	Entry   uint64   // file offset of the first instruction
	Returns []uint64 // file offsets of every RET instruction (Write and Read)
	// Body is the file offset of the first instruction after the
	// prologue's stack check (a compare with the goroutine's stack guard,
	// then a conditional jump to code that grows the stack and starts the
	// function over): a probe there fires once per call, the arguments
	// still in their registers. Entry when the function has no stack check.
	Body uint64
}

// Probes are the probe points of an executable's crypto/tls.
type Probes struct {
	Write, Read, Close Func
	GoVersion          string // the toolchain that built it
	Arch               string // its GOARCH: amd64 or arm64
	// Pclntab: the functions were found through .gopclntab (a stripped
	// executable, no .symtab).
	Pclntab bool
}

// Find reads the executable at path. Errors wrap ErrNotGo, ErrNoTLS,
// ErrArch, ErrGoABI or ErrNoTable when the file is not one to probe, and
// ErrMalformed when it is not a sound ELF file.
func Find(path string) (*Probes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FindFile(f)
}

// FindFile reads the open file f, through that descriptor only (what is
// probed later through the same descriptor is what was read); as Find.
func FindFile(f *os.File) (*Probes, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrNotGo)
	}
	size, held, err := HeldFile(f)
	if err != nil {
		return nil, err
	}
	return FindReaderHeld(f, size, held, runtime.GOARCH)
}

// FindReader reads an executable of size bytes from r, all of them held
// (in memory); as Find. Nothing is allocated beyond a small multiple of
// size, and a panic of the parsers on a hostile file is returned as an
// error wrapping ErrMalformed.
func FindReader(r io.ReaderAt, size int64) (*Probes, error) {
	return FindReaderFor(r, size, runtime.GOARCH)
}

// archCode is what differs between the architectures: how a Go function's
// stack check ends and where its RETs are, and the first Go release with
// the register ABI there.
type archCode struct {
	goarch  string
	minGo   string
	body    func([]byte) uint64
	returns func([]byte) ([]uint64, error)
}

var archs = map[elf.Machine]archCode{
	elf.EM_X86_64:  {"amd64", "go1.17", Body, Returns},
	elf.EM_AARCH64: {"arm64", "go1.18", BodyARM64, ReturnsARM64},
}

// FindReaderFor is FindReader for an executable of the architecture goarch
// (amd64 or arm64) whatever the collector's: errors wrap ErrArch for any other.
func FindReaderFor(r io.ReaderAt, size int64, goarch string) (p *Probes, err error) {
	return FindReaderHeld(r, size, Dense(size), goarch)
}

// FindReaderHeld is FindReaderFor for a file of size bytes that holds the
// bytes held says (a sparse file holds fewer than its size): a table in a
// hole is refused (ErrNotHeld) before anything is allocated for it, and
// no read goes past MaxRead, MaxFileRead or a hole. Nothing is allocated
// beyond a small multiple of the bytes held, and at most the caps.
func FindReaderHeld(r io.ReaderAt, size int64, held Held, goarch string) (p *Probes, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, fmt.Errorf("%w: parser panic: %v", ErrMalformed, v)
		}
	}()
	if size < 0 {
		return nil, fmt.Errorf("%w: negative size", ErrMalformed)
	}
	if err := CheckELF(r, size, held, 0); err != nil {
		return nil, err
	}
	br := newBudgetReader(r, size, held)
	sr := io.NewSectionReader(br, 0, size)
	f, err := elf.NewFile(sr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	defer f.Close()
	if f.Section(".gopclntab") == nil && f.Section(".go.buildinfo") == nil {
		return nil, ErrNotGo
	}
	arch, ok := archs[f.Machine]
	if !ok || arch.goarch != goarch || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%w: %s, not %s", ErrArch, f.Machine, goarch)
	}
	p = &Probes{Arch: arch.goarch}
	names := []string{WriteSym, ReadSym, CloseSym}
	found, err := fromSymtab(f, held, names)
	if errors.Is(err, elf.ErrNoSymbols) {
		found, err = fromPclntab(f, held, names)
		p.Pclntab = true
	}
	if err != nil {
		return nil, err
	}
	// Go 1.13+ records its version (buildinfo); the register ABI is 1.17's
	// (amd64) or 1.18's (arm64).
	goVer, err := goVersion(f)
	if err != nil {
		return nil, fmt.Errorf("no Go version in it (%w): %w", err, ErrGoABI)
	}
	if version.IsValid(goVer) && version.Compare(goVer, arch.minGo) < 0 {
		return nil, fmt.Errorf("%s: %w", goVer, ErrGoABI)
	}
	p.GoVersion = goVer
	for i := range found {
		fn := &found[i]
		if fn.Size == 0 {
			return nil, fmt.Errorf("%s has no size", fn.Name)
		}
		if fn.Size > MaxFuncSize {
			return nil, fmt.Errorf("%w: %s is %d bytes long (more than %d)", ErrMalformed, fn.Name, fn.Size, MaxFuncSize)
		}
		seg := progOf(f, fn.Addr)
		if seg == nil {
			return nil, fmt.Errorf("%s: address %#x in no executable segment", fn.Name, fn.Addr)
		}
		if seg.Off > uint64(size) || seg.Filesz > uint64(size)-seg.Off {
			return nil, fmt.Errorf("%w: the segment of %s (file offset %#x, %d bytes) is past the end of the file (%d bytes)", ErrMalformed, fn.Name, seg.Off, seg.Filesz, size)
		}
		if fn.Size > seg.Vaddr+seg.Filesz-fn.Addr {
			return nil, fmt.Errorf("%w: %s (%#x, %d bytes) runs past the end of its segment's file bytes", ErrMalformed, fn.Name, fn.Addr, fn.Size)
		}
		fn.Entry = fn.Addr - seg.Vaddr + seg.Off
	}
	p.Write, p.Read, p.Close = found[0], found[1], found[2]
	for _, fn := range []*Func{&p.Write, &p.Read, &p.Close} {
		code := make([]byte, fn.Size)
		if _, err := br.ReadAt(code, int64(fn.Entry)); err != nil {
			return nil, fmt.Errorf("read %s: %w", fn.Name, err)
		}
		fn.Body = fn.Entry + arch.body(code)
		rets, err := arch.returns(code)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		if len(rets) == 0 {
			return nil, fmt.Errorf("%s: no RET instruction", fn.Name)
		}
		if len(rets) > MaxReturns {
			return nil, fmt.Errorf("%w: %s has %d RET instructions (more than %d)", ErrMalformed, fn.Name, len(rets), MaxReturns)
		}
		for _, r := range rets {
			fn.Returns = append(fn.Returns, fn.Entry+r)
		}
	}
	return p, nil
}

// checkSection checks that a section's declared bytes are in the file,
// held (no hole) and at most maxN, before they are read.
func checkSection(s *elf.Section, held Held, maxN uint64) error {
	if s.Type == elf.SHT_NOBITS {
		return fmt.Errorf("%w: section %s has no bytes in the file", ErrMalformed, s.Name)
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		return fmt.Errorf("%w: section %s is compressed", ErrMalformed, s.Name)
	}
	if s.Size > maxN {
		return tooLarge("section "+s.Name, s.Size, maxN)
	}
	if !held(s.Offset, s.Size) {
		return notHeld("section "+s.Name, s.Offset, s.Size)
	}
	return nil
}

// Body is the offset in a function's code of the first instruction after
// its stack check, 0 when it has none. Go's amd64 prologue (small frames:
// CMPQ SP, 16(R14); JBE; large ones: LEAQ -n(SP), R12; CMPQ R12, 16(R14);
// JBE) compares with g.stackguard0, R14 being g.
func Body(code []byte) uint64 {
	pc, cmp := 0, false
	for range 4 {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil || inst.Op == 0 {
			return 0
		}
		pc += inst.Len
		switch {
		case inst.Op == x86asm.CMP:
			for _, a := range inst.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.R14 {
					cmp = true
				}
			}
		case cmp && (inst.Op == x86asm.JBE || inst.Op == x86asm.JB):
			return uint64(pc)
		case cmp:
			return 0
		}
	}
	return 0
}

// Returns decodes x86-64 code from its first byte to its end and lists the
// offsets of its RET instructions. Go puts no data in its text, so a linear
// sweep sees every instruction; any byte that does not decode is an error
// (a probe inside an instruction would break the program).
func Returns(code []byte) ([]uint64, error) {
	var rets []uint64
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err == nil && inst.Op == 0 {
			err = errors.New("cut (a prefix with no opcode)") // what the decoder makes of a truncated instruction
		}
		if err != nil {
			return nil, fmt.Errorf("undecodable instruction at +%#x: %w", pc, err)
		}
		if inst.Op == x86asm.RET {
			rets = append(rets, uint64(pc))
		}
		pc += inst.Len
	}
	return rets, nil
}

// BodyARM64 is Body for arm64 code. Go's arm64 prologue (small frames:
// MOVD 16(R28), R16; CMP R16, RSP; BLS; larger ones: MOVD 16(R28), R16;
// SUB $n, RSP, R17; CMP R16, R17; BLS) compares with g.stackguard0, R28
// being g.
func BodyARM64(code []byte) uint64 {
	guard := false
	for pc := 0; pc < 16 && pc+4 <= len(code); pc += 4 {
		inst, err := arm64asm.Decode(code[pc : pc+4])
		if err != nil {
			return 0
		}
		switch {
		case !guard && inst.Op == arm64asm.LDR:
			m, ok := inst.Args[1].(arm64asm.MemImmediate)
			if !ok || m.String() != "[X28,#16]" { // g.stackguard0
				return 0
			}
			guard = true
		case guard && (inst.Op == arm64asm.SUB || inst.Op == arm64asm.CMP):
		case guard && inst.Op == arm64asm.B:
			if c, ok := inst.Args[0].(arm64asm.Cond); ok && c.String() == "LS" {
				return uint64(pc + 4)
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}

// ReturnsARM64 is Returns for arm64 code: its 4-byte words from the first
// to the last, and the offsets of the RETs among them. A word that does
// not decode is skipped, not an error: every instruction is 4 bytes at a
// multiple of 4, so no probe can fall inside one, and Go's arm64 functions
// hold such words (the zeros that pad a function's end; atomics that this
// decoder, like `go tool objdump`, does not know: 88fbfc86 in
// crypto/tls.(*Conn).Write of Go 1.25). Code whose length is not a
// multiple of 4 is an error.
func ReturnsARM64(code []byte) ([]uint64, error) {
	if len(code)%4 != 0 {
		return nil, fmt.Errorf("%d bytes of arm64 code, not a multiple of 4", len(code))
	}
	var rets []uint64
	for pc := 0; pc < len(code); pc += 4 {
		inst, err := arm64asm.Decode(code[pc : pc+4])
		if err == nil && inst.Op == arm64asm.RET {
			rets = append(rets, uint64(pc))
		}
	}
	return rets, nil
}

// maxNameCopies bounds how many times one probed function's name may be
// in .strtab or in .gopclntab's name table (once in any real file).
const maxNameCopies = 16

// nameOffsets finds where each of names, NUL-terminated, is in bytes
// [from, s.Size) of the section s (a table of NUL-terminated names that
// starts at from), as offsets from from: every offset at which a name
// read from that table is that name. It reads s in chunks of maxChunk
// (the last bytes of each again at the start of the next: a name across
// two chunks is found in the second).
func nameOffsets(s *elf.Section, from uint64, names []string) ([][]uint64, error) {
	want := make([][]byte, len(names))
	longest := 0
	for i, n := range names {
		want[i] = append([]byte(n), 0)
		longest = max(longest, len(want[i]))
	}
	at := make([][]uint64, len(names))
	if from >= s.Size {
		return at, nil
	}
	buf := make([]byte, min(maxChunk, s.Size-from)+uint64(longest))
	for base := from; base < s.Size; base += maxChunk {
		n := min(maxChunk, s.Size-base)
		m := min(n+uint64(longest), s.Size-base)
		if _, err := s.ReadAt(buf[:m], int64(base)); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.Name, err)
		}
		for i, w := range want {
			for j := 0; ; {
				k := bytes.Index(buf[j:m], w)
				if k < 0 || uint64(j+k) >= n {
					break
				}
				if len(at[i]) == maxNameCopies {
					return nil, fmt.Errorf("%w: %s is in %s more than %d times", ErrMalformed, names[i], s.Name, maxNameCopies)
				}
				at[i] = append(at[i], base-from+uint64(j+k))
				j += k + 1
			}
		}
	}
	return at, nil
}

// fromSymtab finds the functions in .symtab: where their names are in
// .strtab first, then the symbols that name them, both tables read in
// chunks of maxChunk (a large Go executable has hundreds of thousands of
// symbols; a hostile one declares what it likes, MaxSymtab at most).
func fromSymtab(f *elf.File, held Held, names []string) ([]Func, error) {
	symtab := f.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil || symtab.Link == 0 || int(symtab.Link) >= len(f.Sections) {
		return nil, elf.ErrNoSymbols
	}
	strtab := f.Sections[symtab.Link]
	for _, s := range []*elf.Section{symtab, strtab} {
		if err := checkSection(s, held, MaxSymtab); err != nil {
			return nil, err
		}
	}
	// at[i]: the offsets in .strtab where names[i] is (a symbol's name is
	// an offset there).
	at, err := nameOffsets(strtab, 0, names)
	if err != nil {
		return nil, err
	}
	out := make([]Func, len(names))
	found := 0
	const chunk = maxChunk / elf.Sym64Size * elf.Sym64Size
	buf := make([]byte, min(chunk, symtab.Size))
	for base := uint64(0); base+elf.Sym64Size <= symtab.Size && found < len(names); base += chunk {
		m := min(chunk, (symtab.Size-base)/elf.Sym64Size*elf.Sym64Size)
		if _, err := symtab.ReadAt(buf[:m], int64(base)); err != nil {
			return nil, fmt.Errorf("read %s: %w", symtab.Name, err)
		}
		for off := uint64(0); off+elf.Sym64Size <= m && found < len(names); off += elf.Sym64Size {
			e := buf[off : off+elf.Sym64Size]
			if elf.ST_TYPE(e[4]) != elf.STT_FUNC {
				continue
			}
			name := uint64(f.ByteOrder.Uint32(e[0:4]))
			for i := range names {
				if out[i].Name == "" && slices.Contains(at[i], name) {
					out[i] = Func{Name: names[i], Addr: f.ByteOrder.Uint64(e[8:16]), Size: f.ByteOrder.Uint64(e[16:24])}
					found++
				}
			}
		}
	}
	if found < len(names) {
		return nil, ErrNoTLS
	}
	return out, nil
}

// The magic numbers that start a .gopclntab, by the Go releases that
// write its layout (src/debug/gosym/pclntab.go, src/runtime/symtab.go).
const (
	pclnGo12  = 0xfffffffb // 1.2 to 1.15
	pclnGo116 = 0xfffffffa // 1.16, 1.17
	pclnGo118 = 0xfffffff0 // 1.18, 1.19
	pclnGo120 = 0xfffffff1 // 1.20 on
)

// pclnTab is what fromPclntab reads of a .gopclntab's header (64-bit,
// little-endian), each offset checked against the section's size.
//
// The header: magic uint32, two zero bytes, the instruction size
// quantum, the pointer size, then pointer-sized words: the number of
// functions, of files, (1.18+) the text start, and the offsets from the
// header of the function name table, the compilation unit table, the file
// table, the pc tables and the function table. The function table is
// nfunc+1 entries {entry, funcoff} (uint32 offsets from the text start
// from 1.18, pointers before; the last entry's funcoff is left out),
// sorted by entry: a function ends where the next begins. funcoff is the
// offset of the function's _func record from the function table;
// a _func begins with its entry (a uint32 from 1.18, a pointer before)
// and then nameOff, an int32 offset of its NUL-terminated name in the
// name table.
type pclnTab struct {
	s       *elf.Section
	size    uint64 // bytes of the section
	nfunc   uint64
	names   uint64 // the name table's offset
	functab uint64 // the function table's (and the _func records') offset
	word    uint64 // bytes of a function table field: 4 from 1.18, 8 before
	text    uint64 // what a function table entry is relative to: .text's address from 1.18, 0 before
	nameOff uint64 // offset of nameOff in a _func: after its entry
}

// fromPclntab finds the functions in .gopclntab (a stripped executable:
// no .symtab), streaming it, what debug/gosym.Table.LookupFunc returns
// without debug/gosym, which holds the table whole and makes a Func for
// each of its functions. It reads the header first, then where the names
// are in the name table (nameOffsets: as fromSymtab in .strtab), then the
// function table in chunks of pclnChunk entries, and the _func record of
// each entry through a window of pclnWindow bytes over the records (they
// follow each other in the order of the entries), until every function is
// found: at most about maxChunk held, whatever the table's size. It is
// refused when not held, or larger than MaxPclntab, or when it declares
// more than MaxPclnFuncs functions.
func fromPclntab(f *elf.File, held Held, names []string) ([]Func, error) {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil, ErrNoTable
	}
	if err := checkSection(pcln, held, MaxPclntab); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTable, err)
	}
	t, err := readPclnHeader(pcln, text, f.Section(".go.module"))
	if err != nil {
		return nil, err
	}
	// The name table is in there: no name, no need to read the rest.
	at, err := nameOffsets(pcln, t.names, names)
	if err != nil {
		return nil, err
	}
	for _, a := range at {
		if len(a) == 0 {
			return nil, ErrNoTLS
		}
	}
	return t.lookup(names, at)
}

// readPclnHeader reads and checks the header of the .gopclntab s, of an
// executable whose .text and (Go 1.26+) .go.module are those.
func readPclnHeader(s, text, module *elf.Section) (*pclnTab, error) {
	le := binary.LittleEndian
	var h [8 + 8*8]byte
	n, _ := s.ReadAt(h[:min(uint64(len(h)), s.Size)], 0)
	// Two zero bytes, the quantum (1, 2 or 4), the pointer size: as
	// debug/gosym checks them.
	if n < 16 || h[4] != 0 || h[5] != 0 || h[6] != 1 && h[6] != 2 && h[6] != 4 {
		return nil, fmt.Errorf("%w: .gopclntab has no header", ErrNoTable)
	}
	if h[7] != 8 {
		return nil, fmt.Errorf("%w: .gopclntab header: not a 64-bit table", ErrNoTable)
	}
	t := &pclnTab{s: s, size: s.Size, nfunc: le.Uint64(h[8:])}
	var namesWord, functabWord int // the header words that hold their offsets
	switch magic := le.Uint32(h[:]); magic {
	case pclnGo118, pclnGo120:
		t.word, t.text, t.nameOff = 4, textStart(text, le.Uint64(h[8+8*2:]), s.Addr, module), 4
		namesWord, functabWord = 3, 7
	case pclnGo116:
		t.word, t.nameOff = 8, 8
		namesWord, functabWord = 2, 6
	case pclnGo12:
		return nil, fmt.Errorf("a .gopclntab of Go 1.2 to 1.15: %w", ErrGoABI)
	default:
		return nil, fmt.Errorf("%w: .gopclntab magic %#x", ErrNoTable, magic)
	}
	if n < 8+8*(functabWord+1) {
		return nil, fmt.Errorf("%w: .gopclntab of %d bytes, shorter than its header", ErrMalformed, s.Size)
	}
	// At least 8 bytes (an entry of the function table) per function
	// declared must be there.
	if t.nfunc > t.size/8 || t.nfunc > MaxPclnFuncs {
		return nil, fmt.Errorf("%w: .gopclntab declares %d functions in %d bytes (at most one per 8 bytes, and %d)", ErrMalformed, t.nfunc, t.size, MaxPclnFuncs)
	}
	t.names, t.functab = le.Uint64(h[8+8*namesWord:]), le.Uint64(h[8+8*functabWord:])
	if t.names >= t.size {
		return nil, fmt.Errorf("%w: .gopclntab's name table at %#x, past its end (%d bytes)", ErrMalformed, t.names, t.size)
	}
	// nfunc is at most MaxPclnFuncs: no overflow.
	if t.functab > t.size || (2*t.nfunc+1)*t.word > t.size-t.functab {
		return nil, fmt.Errorf("%w: .gopclntab's function table (%d functions at %#x) runs past its end (%d bytes)", ErrMalformed, t.nfunc, t.functab, t.size)
	}
	return t, nil
}

// textStart is what the function table of a .gopclntab of Go 1.18+ at
// pclnAddr counts its entries from: runtime.text, which the linker
// writes in the table's header (hdr: Go 1.18 to 1.25) and in the module
// data (module: the .go.module section of Go 1.26+, whose header says 0),
// where that is in .text; else .text's start, what debug/gosym takes: the
// same in an internally linked executable, but an externally linked one
// (cgo) has the C runtime's code first, runtime.text 0x100 bytes on (and
// every function found 0x100 bytes early, inside the one before).
func textStart(text *elf.Section, hdr, pclnAddr uint64, module *elf.Section) uint64 {
	in := func(a uint64) bool { return a >= text.Addr && a-text.Addr < text.Size }
	if in(hdr) {
		return hdr
	}
	// The module data: the table's address (pcHeader), five slices of
	// it, findfunctab, minpc, maxpc, then text.
	var m [23 * 8]byte
	if module != nil && module.Type != elf.SHT_NOBITS {
		le := binary.LittleEndian
		if n, _ := module.ReadAt(m[:], 0); n == len(m) && le.Uint64(m[:]) == pclnAddr && in(le.Uint64(m[22*8:])) {
			return le.Uint64(m[22*8:])
		}
	}
	return text.Addr
}

// Bytes read and held at once of .gopclntab after its name table: the
// function table's entries in chunks of pclnChunk (pointer-sized fields
// before 1.18: 64 KiB), and the _func records through a window of
// pclnWindow.
const (
	pclnChunk  = 1 << 12
	pclnWindow = maxChunk / 4
)

// lookup walks the function table for the functions whose _func's nameOff
// is one of at[i] (nameOffsets), the first one for each name (as
// debug/gosym's LookupFunc), and stops once every name is found.
func (t *pclnTab) lookup(names []string, at [][]uint64) ([]Func, error) {
	le := binary.LittleEndian
	field := func(b []byte) uint64 {
		if t.word == 4 {
			return uint64(le.Uint32(b))
		}
		return le.Uint64(b)
	}
	out := make([]Func, len(names))
	found := 0
	// Entries i..i+k-1 are the fields 2i..2(i+k)-1 of the function
	// table, and the next's entry (where the last one ends) field 2(i+k).
	buf := make([]byte, (2*min(pclnChunk, t.nfunc)+1)*t.word)
	win := pclnWin{s: t.s, buf: make([]byte, min(pclnWindow, t.size-t.functab)), left: t.size - t.functab + pclnWindow}
	for i := uint64(0); i < t.nfunc && found < len(names); i += pclnChunk {
		k := min(pclnChunk, t.nfunc-i)
		b := buf[:(2*k+1)*t.word]
		if _, err := t.s.ReadAt(b, int64(t.functab+2*i*t.word)); err != nil {
			return nil, fmt.Errorf("read %s: %w", t.s.Name, err)
		}
		for j := uint64(0); j < k && found < len(names); j++ {
			funcoff := field(b[(2*j+1)*t.word:])
			if funcoff > t.size-t.functab || t.nameOff+4 > t.size-t.functab-funcoff {
				return nil, fmt.Errorf("%w: .gopclntab: function %d's record at %#x is past its end (%d bytes)", ErrMalformed, i+j, t.functab+funcoff, t.size)
			}
			nameOff, err := win.uint32(t.functab + funcoff + t.nameOff)
			if err != nil {
				return nil, err
			}
			if uint64(nameOff) >= t.size-t.names {
				return nil, fmt.Errorf("%w: .gopclntab: function %d's name at %#x past its end (%d bytes)", ErrMalformed, i+j, t.names+uint64(nameOff), t.size)
			}
			for n := range names {
				if out[n].Name == "" && slices.Contains(at[n], uint64(nameOff)) {
					entry, end := t.text+field(b[2*j*t.word:]), t.text+field(b[2*(j+1)*t.word:])
					out[n] = Func{Name: names[n], Addr: entry, Size: end - entry}
					found++
				}
			}
		}
	}
	if found < len(names) {
		return nil, ErrNoTLS
	}
	return out, nil
}

// pclnWin is a window over a section: the bytes [base, base+len(b)) of
// it, read again from where the next read starts when that is outside,
// left bytes more at most: the records' bytes and a window (they follow
// each other in the order of the function table: each read once).
// Records out of order, each out of the window, would read a window for
// each function (MaxFileRead of a table of 1 MiB).
type pclnWin struct {
	s    *elf.Section
	buf  []byte
	b    []byte
	base uint64
	left uint64
}

// uint32 is the little-endian uint32 at off, which the caller checked is
// inside the section.
func (w *pclnWin) uint32(off uint64) (uint32, error) {
	if off < w.base || off+4 > w.base+uint64(len(w.b)) {
		n := min(uint64(len(w.buf)), w.s.Size-off)
		if n > w.left {
			return 0, fmt.Errorf("%w: %s's function records are out of order: reading them again is %w (their bytes and a window)", ErrMalformed, w.s.Name, ErrTooLarge)
		}
		w.left -= n
		w.b = w.buf[:n]
		w.base = off
		if _, err := w.s.ReadAt(w.b, int64(off)); err != nil {
			w.b = nil
			return 0, fmt.Errorf("read %s: %w", w.s.Name, err)
		}
	}
	return binary.LittleEndian.Uint32(w.b[off-w.base:]), nil
}

// progOf is the executable PT_LOAD segment holding addr, or nil.
// maxGoVersion bounds the version string goVersion reads ("go1.26.8" and
// experiment suffixes are far shorter).
const maxGoVersion = 128

// goVersion reads the Go version the linker recorded at the start of
// .go.buildinfo (Go 1.13+, the layout debug/buildinfo reads): a 32-byte
// header (magic, pointer size, flags), then, with flags&2 (Go 1.18+), the
// version as a uvarint length and its bytes, or else (1.13–1.17) a
// pointer to a Go string header {data, len}. Its own reader rather than
// debug/buildinfo.Read: that one makes a 10 MiB buffer for any string
// length the file declares (found by FuzzFind), and reads the module list
// too. This reads at most maxGoVersion bytes of the string.
func goVersion(f *elf.File) (string, error) {
	s := f.Section(".go.buildinfo")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", errors.New("no .go.buildinfo section")
	}
	var h [32 + binary.MaxVarintLen64 + maxGoVersion]byte
	n, _ := s.ReadAt(h[:], 0)
	if n < 32 || string(h[:14]) != "\xff Go buildinf:" {
		return "", errors.New(".go.buildinfo has no build info header")
	}
	ptrSize, flags := int(h[14]), h[15]
	if flags&2 != 0 {
		l, k := binary.Uvarint(h[32:n])
		if k <= 0 || l > maxGoVersion || uint64(n-32-k) < l {
			return "", errors.New(".go.buildinfo: bad version string length")
		}
		return string(h[32+k : 32+k+int(l)]), nil
	}
	if ptrSize != 4 && ptrSize != 8 {
		return "", fmt.Errorf(".go.buildinfo: pointer size %d", ptrSize)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if flags&1 != 0 {
		bo = binary.BigEndian
	}
	ptr := func(b []byte) uint64 {
		if ptrSize == 4 {
			return uint64(bo.Uint32(b))
		}
		return bo.Uint64(b)
	}
	hdr := make([]byte, 2*ptrSize)
	if err := readVirt(f, ptr(h[16:]), hdr); err != nil {
		return "", fmt.Errorf(".go.buildinfo: version string header: %w", err)
	}
	if l := ptr(hdr[ptrSize:]); l > maxGoVersion {
		return "", fmt.Errorf(".go.buildinfo: version string of %d bytes", l)
	}
	v := make([]byte, ptr(hdr[ptrSize:]))
	if err := readVirt(f, ptr(hdr), v); err != nil {
		return "", fmt.Errorf(".go.buildinfo: version string: %w", err)
	}
	return string(v), nil
}

// readVirt fills b from virtual address addr of the loaded segment whose
// file bytes hold all of it.
func readVirt(f *elf.File, addr uint64, b []byte) error {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr-p.Vaddr >= p.Filesz || uint64(len(b)) > p.Filesz-(addr-p.Vaddr) {
			continue
		}
		if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
			return fmt.Errorf("address %#x: %w", addr, err)
		}
		return nil
	}
	return fmt.Errorf("address %#x (%d bytes) in no loaded segment", addr, len(b))
}

func progOf(f *elf.File, addr uint64) *elf.Prog {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Vaddr <= addr && addr < p.Vaddr+p.Filesz {
			return p
		}
	}
	return nil
}

// fileOffset turns a virtual address in an executable segment into its file offset.
func fileOffset(f *elf.File, addr uint64) (uint64, error) {
	p := progOf(f, addr)
	if p == nil {
		return 0, fmt.Errorf("address %#x in no executable segment", addr)
	}
	return addr - p.Vaddr + p.Off, nil
}

// CheckLibrary is CheckELF for the shared library open as f, as
// cilium/ebpf reads it to find its symbols (its symbol, string and version
// tables whole): each of those at most MaxLibTable.
func CheckLibrary(f *os.File) error {
	size, held, err := HeldFile(f)
	if err != nil {
		return err
	}
	return CheckELF(f, size, held, MaxLibTable)
}

// symbolTables are the sections debug/elf reads whole for Symbols and
// DynamicSymbols (with the string tables they link to).
var symbolTables = []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM, elf.SHT_GNU_VERSYM, elf.SHT_GNU_VERNEED, elf.SHT_GNU_VERDEF}

// CheckELF checks, before debug/elf reads anything, that the ELF file of
// size bytes in r has its program and section header tables, and every
// segment's and section's bytes, inside the file (debug/elf allocates what
// a header declares, in chunks of up to 10 MiB); that the tables read
// whole are held (held: no hole, a sparse file's table refused before it is
// allocated) and at most their caps (MaxHeaderTable, MaxSections,
// MaxProgs, MaxSectionNames and, when tableCap is not 0, tableCap for the
// symbol tables, their string tables and the version tables). Errors wrap ErrMalformed (with
// ErrNotHeld or ErrTooLarge), or ErrNotGo when r is no ELF file at all.
func CheckELF(r io.ReaderAt, size int64, held Held, tableCap uint64) error {
	var h [64]byte
	if size < 52 {
		return fmt.Errorf("%w: %d bytes, too short for an ELF header", ErrNotGo, size)
	}
	if !held(0, uint64(min(int64(len(h)), size))) {
		return notHeld("the ELF header", 0, uint64(min(int64(len(h)), size)))
	}
	n, _ := r.ReadAt(h[:min(int64(len(h)), size)], 0)
	if n < 52 || string(h[:4]) != elf.ELFMAG {
		return fmt.Errorf("%w: no ELF header", ErrNotGo)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch elf.Data(h[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return fmt.Errorf("%w: ELF data encoding %d", ErrMalformed, h[elf.EI_DATA])
	}
	var phoff, shoff uint64
	var phentsize, phnum, shentsize, shnum, shstrndx uint64
	is64 := false
	switch elf.Class(h[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		if n < 64 {
			return fmt.Errorf("%w: short ELF header", ErrMalformed)
		}
		is64 = true
		phoff, shoff = bo.Uint64(h[32:]), bo.Uint64(h[40:])
		phentsize, phnum = uint64(bo.Uint16(h[54:])), uint64(bo.Uint16(h[56:]))
		shentsize, shnum, shstrndx = uint64(bo.Uint16(h[58:])), uint64(bo.Uint16(h[60:])), uint64(bo.Uint16(h[62:]))
	case elf.ELFCLASS32:
		phoff, shoff = uint64(bo.Uint32(h[28:])), uint64(bo.Uint32(h[32:]))
		phentsize, phnum = uint64(bo.Uint16(h[42:])), uint64(bo.Uint16(h[44:]))
		shentsize, shnum, shstrndx = uint64(bo.Uint16(h[46:])), uint64(bo.Uint16(h[48:])), uint64(bo.Uint16(h[50:]))
	default:
		return fmt.Errorf("%w: ELF class %d", ErrMalformed, h[elf.EI_CLASS])
	}
	fsize := uint64(size)
	within := func(off, n uint64) bool { return off <= fsize && n <= fsize-off }
	table := func(what string, off, entsize, num, min, maxNum uint64) ([]byte, error) {
		if num == 0 {
			return nil, nil
		}
		if entsize < min || !within(off, entsize*num) { // entsize and num are 16-bit: no overflow
			return nil, fmt.Errorf("%w: %s table (offset %#x, %d entries of %d bytes) outside the file (%d bytes)", ErrMalformed, what, off, num, entsize, size)
		}
		if num > maxNum {
			return nil, fmt.Errorf("%w: %s table of %d entries is %w (%d entries)", ErrMalformed, what, num, ErrTooLarge, maxNum)
		}
		if entsize*num > MaxHeaderTable {
			return nil, tooLarge(what+" table", entsize*num, MaxHeaderTable)
		}
		if !held(off, entsize*num) {
			return nil, notHeld(what+" table", off, entsize*num)
		}
		b := make([]byte, entsize*num)
		if _, err := r.ReadAt(b, int64(off)); err != nil {
			return nil, fmt.Errorf("%w: %s table: %w", ErrMalformed, what, err)
		}
		return b, nil
	}
	if shnum == 0 && shoff != 0 || shstrndx == uint64(elf.SHN_XINDEX) {
		return fmt.Errorf("%w: extended section numbering", ErrMalformed)
	}
	if shnum > 0 && shstrndx >= shnum {
		return fmt.Errorf("%w: section name table %d of %d sections", ErrMalformed, shstrndx, shnum)
	}
	phMin, shMin := uint64(32), uint64(40)
	if is64 {
		phMin, shMin = 56, 64
	}
	ph, err := table("program header", phoff, phentsize, phnum, phMin, MaxProgs)
	if err != nil {
		return err
	}
	for i := range phnum {
		e := ph[i*phentsize:]
		off, filesz := uint64(bo.Uint32(e[4:])), uint64(bo.Uint32(e[16:]))
		if is64 {
			off, filesz = bo.Uint64(e[8:]), bo.Uint64(e[32:])
		}
		if !within(off, filesz) {
			return fmt.Errorf("%w: segment %d (file offset %#x, %d bytes) outside the file (%d bytes)", ErrMalformed, i, off, filesz, size)
		}
	}
	sh, err := table("section header", shoff, shentsize, shnum, shMin, MaxSections)
	if err != nil {
		return err
	}
	secs := make([]section, shnum)
	for i := range shnum {
		e := sh[i*shentsize:]
		s := &secs[i]
		s.typ = elf.SectionType(bo.Uint32(e[4:]))
		s.flags = elf.SectionFlag(bo.Uint32(e[8:]))
		s.off, s.n, s.link = uint64(bo.Uint32(e[16:])), uint64(bo.Uint32(e[20:])), uint64(bo.Uint32(e[24:]))
		if is64 {
			s.flags = elf.SectionFlag(bo.Uint64(e[8:]))
			s.off, s.n, s.link = bo.Uint64(e[24:]), bo.Uint64(e[32:]), uint64(bo.Uint32(e[40:]))
		}
		// debug/elf reads the section names whatever their type says (a
		// NOBITS one reads as zeros, of the declared size).
		if (s.typ != elf.SHT_NOBITS || i == shstrndx) && !within(s.off, s.n) {
			return fmt.Errorf("%w: section %d (file offset %#x, %d bytes) outside the file (%d bytes)", ErrMalformed, i, s.off, s.n, size)
		}
		// ... and decompress them to the size their header declares.
		if i == shstrndx && s.flags&elf.SHF_COMPRESSED != 0 {
			return fmt.Errorf("%w: compressed section name table", ErrMalformed)
		}
	}
	for i := range secs {
		s := &secs[i]
		if tableCap != 0 && slices.Contains(symbolTables, s.typ) {
			s.wholeRead = true
			if s.link < shnum {
				secs[s.link].wholeRead = true
			}
		}
	}
	for i, s := range secs {
		switch {
		case uint64(i) == shstrndx:
			if s.n > MaxSectionNames {
				return tooLarge("the section name table", s.n, MaxSectionNames)
			}
		case s.wholeRead: // a NOBITS one too: read as zeros of its declared size
			if s.n > tableCap {
				return tooLarge(fmt.Sprintf("section %d (%s)", i, s.typ), s.n, tableCap)
			}
			// ... decompressed to the size its header declares.
			if s.flags&elf.SHF_COMPRESSED != 0 {
				return fmt.Errorf("%w: section %d (%s) is compressed", ErrMalformed, i, s.typ)
			}
		default:
			continue
		}
		if !held(s.off, s.n) {
			return notHeld(fmt.Sprintf("section %d (%s)", i, s.typ), s.off, s.n)
		}
	}
	return checkNames(r, bo, is64, sh, shentsize, shstrndx, secs, tableCap)
}

// section is what CheckELF reads of a section header.
type section struct {
	typ       elf.SectionType
	flags     elf.SectionFlag
	off, n    uint64
	link      uint64
	wholeRead bool
}

// checkNames checks, for CheckELF, what debug/elf makes of the names in
// the ELF file in r (byte order bo, 64-bit or not) whose section header
// table is sh (entries of shentsize bytes), its sections secs (their
// tables checked: held, at most their caps), the section names in
// section shstrndx: a string of each section's name, at most
// MaxSectionNames bytes in all; and, when tableCap is not 0, of each
// symbol's, and of the version tables' names, at most tableCap bytes
// for each table.
func checkNames(r io.ReaderAt, bo binary.ByteOrder, is64 bool, sh []byte, shentsize, shstrndx uint64, secs []section, tableCap uint64) error {
	shnum := uint64(len(secs))
	if shnum > 0 && shstrndx != 0 && secs[shstrndx].typ == elf.SHT_STRTAB {
		s := secs[shstrndx]
		offs := func(yield func(uint64) bool) {
			for i := range shnum {
				if !yield(uint64(bo.Uint32(sh[i*shentsize:]))) {
					return
				}
			}
		}
		if err := nameBytes(r, "the section names", s.off, s.n, offs, 0, MaxSectionNames); err != nil {
			return err
		}
	}
	symSize := uint64(elf.Sym32Size)
	if is64 {
		symSize = elf.Sym64Size
	}
	for i, s := range secs {
		if tableCap == 0 || s.typ != elf.SHT_SYMTAB && s.typ != elf.SHT_DYNSYM || s.link >= shnum || secs[s.link].typ == elf.SHT_NOBITS {
			continue
		}
		syms := make([]byte, s.n)
		if _, err := r.ReadAt(syms, int64(s.off)); err != nil {
			return fmt.Errorf("%w: section %d (%s): %w", ErrMalformed, i, s.typ, err)
		}
		offs := func(yield func(uint64) bool) {
			for o := uint64(0); o+symSize <= s.n; o += symSize {
				if !yield(uint64(bo.Uint32(syms[o:]))) {
					return
				}
			}
		}
		str := secs[s.link]
		if err := nameBytes(r, fmt.Sprintf("the names of section %d's symbols", i), str.off, str.n, offs, 0, tableCap); err != nil {
			return err
		}
	}
	// ... and, with a .gnu.version, of the version definitions' and
	// needs' names (in the first .dynsym's string table), and an entry
	// for each, walking them.
	first := func(typ elf.SectionType) int {
		return slices.IndexFunc(secs, func(s section) bool { return s.typ == typ })
	}
	dynsym := first(elf.SHT_DYNSYM)
	if tableCap == 0 || first(elf.SHT_GNU_VERSYM) < 0 || dynsym < 0 || secs[dynsym].link == 0 || secs[dynsym].link >= shnum {
		return nil
	}
	str := secs[secs[dynsym].link]
	if str.typ == elf.SHT_NOBITS {
		str.n = 0 // zeros: every name empty
	}
	for _, typ := range []elf.SectionType{elf.SHT_GNU_VERDEF, elf.SHT_GNU_VERNEED} {
		i := first(typ)
		if i < 0 || secs[i].typ == elf.SHT_NOBITS {
			continue
		}
		d := make([]byte, secs[i].n)
		if _, err := r.ReadAt(d, int64(secs[i].off)); err != nil {
			return fmt.Errorf("%w: section %d (%s): %w", ErrMalformed, i, typ, err)
		}
		what := fmt.Sprintf("what debug/elf makes of the versions of section %d (%s)", i, typ)
		if err := nameBytes(r, what, str.off, str.n, versionNames(d, bo, typ == elf.SHT_GNU_VERNEED), versionEntry, tableCap); err != nil {
			return err
		}
	}
	return nil
}

// versionEntry is about what debug/elf allocates for an entry of a
// version table besides its name (a string header, a struct, in slices
// that double).
const versionEntry = 64

// versionNames yields the offsets in the string table of the names that
// debug/elf's DynamicSymbols reads as it walks the version definitions d
// (.gnu.version_d) or, need, needs (.gnu.version_r), and ^0 for each
// definition (an entry allocated, whatever its names): an entry says how
// many names it has (up to 65535) and where their chain starts and the
// next entry is, and a definition's names do not end their chain (the
// same one again and again): 64 definitions of 20 bytes each naming one
// name 65535 times made debug/elf allocate 434 MiB (2.6 s).
func versionNames(d []byte, bo binary.ByteOrder, need bool) iter.Seq[uint64] {
	nextAt := 16 // of an entry: where the next one is
	if need {
		nextAt = 12
	}
	return func(yield func(uint64) bool) {
		for i := 0; ; {
			if need {
				if i+16 > len(d) || bo.Uint16(d[i:]) != 1 || !yield(uint64(bo.Uint32(d[i+4:]))) {
					return
				}
				j := i + int(bo.Uint32(d[i+8:]))
				for c := 0; c < int(bo.Uint16(d[i+2:])) && j+16 <= len(d); c++ {
					if !yield(uint64(bo.Uint32(d[j+8:]))) {
						return
					}
					next := bo.Uint32(d[j+12:])
					if next == 0 {
						break
					}
					j += int(next)
				}
			} else {
				if i+20 > len(d) || bo.Uint16(d[i:]) != 1 || bo.Uint16(d[i+6:]) == 0 || !yield(^uint64(0)) {
					return
				}
				j := i + int(bo.Uint32(d[i+12:]))
				for c := 0; c < int(bo.Uint16(d[i+6:])) && j+8 <= len(d); c++ {
					if !yield(uint64(bo.Uint32(d[j:]))) {
						return
					}
					j += int(bo.Uint32(d[j+4:]))
				}
			}
			next := bo.Uint32(d[i+nextAt:])
			if next == 0 {
				return
			}
			i += int(next)
		}
	}
}

// nameBytes checks the bytes that debug/elf makes strings of, or scans,
// in the string table of n bytes at off in r for the names at offs (each
// from its offset to the next NUL, or to the table's end, scanned, when
// there is none), and per bytes more for each: at most maxN in all, what
// (the section names, a symbol table's) being named in the error. A table holds a name as long as
// itself, which every section header or symbol may name: debug/elf made
// 512 MiB of strings of a file of 252 KiB. The table was checked (held,
// and at most its cap).
func nameBytes(r io.ReaderAt, what string, off, n uint64, offs iter.Seq[uint64], per, maxN uint64) error {
	tab := make([]byte, n)
	if _, err := r.ReadAt(tab, int64(off)); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	total := uint64(0)
	for o := range offs {
		l := 0 // debug/elf refuses a section name past the table, and makes a symbol's empty
		if o < n {
			if l = bytes.IndexByte(tab[o:], 0); l < 0 {
				l = len(tab[o:])
			}
		}
		if total += per + uint64(l); total > maxN {
			return tooLarge(what+" (at least)", total, maxN)
		}
	}
	return nil
}
