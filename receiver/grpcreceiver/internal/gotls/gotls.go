// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package gotls finds where to probe Go's crypto/tls in an executable: the
// file offsets of the entry, of the end of the stack check and of every RET
// instruction of crypto/tls.(*Conn).Write and Read, and of Close. Return
// probes are placed at the RETs because uretprobes corrupt Go stacks (the
// runtime copies and walks goroutine stacks, and finds the return address
// the kernel replaced). Pure Go: debug/elf, debug/gosym and an x86-64
// decoder; amd64 executables of Go 1.17+ only (the register ABI the probes
// read).
package gotls

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"go/version"

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
	ErrArch    = errors.New("not an x86-64 executable")
	ErrGoABI   = errors.New("built by Go before 1.17 (no register ABI)")
	ErrNoTable = errors.New("Go executable with neither a symbol table nor a readable .gopclntab")
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
	// Pclntab: the functions were found through .gopclntab (a stripped
	// executable, no .symtab).
	Pclntab bool
}

// Find reads the executable at path. Errors wrap ErrNotGo, ErrNoTLS,
// ErrArch, ErrGoABI or ErrNoTable when the file is not one to probe.
func Find(path string) (*Probes, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Section(".gopclntab") == nil && f.Section(".go.buildinfo") == nil {
		return nil, ErrNotGo
	}
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, ErrArch
	}
	p := &Probes{}
	names := []string{WriteSym, ReadSym, CloseSym}
	found, err := fromSymtab(f, names)
	if errors.Is(err, elf.ErrNoSymbols) {
		found, err = fromPclntab(f, names)
		p.Pclntab = true
	}
	if err != nil {
		return nil, err
	}
	// Go 1.13+ records its version (buildinfo); the register ABI is 1.17's.
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no Go version in it (%w): %w", err, ErrGoABI)
	}
	if version.IsValid(bi.GoVersion) && version.Compare(bi.GoVersion, "go1.17") < 0 {
		return nil, fmt.Errorf("%s: %w", bi.GoVersion, ErrGoABI)
	}
	p.GoVersion = bi.GoVersion
	for i := range found {
		fn := &found[i]
		if fn.Size == 0 {
			return nil, fmt.Errorf("%s has no size", fn.Name)
		}
		if fn.Entry, err = fileOffset(f, fn.Addr); err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
	}
	p.Write, p.Read, p.Close = found[0], found[1], found[2]
	for _, fn := range []*Func{&p.Write, &p.Read, &p.Close} {
		code, seg := make([]byte, fn.Size), progOf(f, fn.Addr)
		if _, err := seg.ReadAt(code, int64(fn.Addr-seg.Vaddr)); err != nil {
			return nil, fmt.Errorf("read %s: %w", fn.Name, err)
		}
		fn.Body = fn.Entry + Body(code)
		rets, err := Returns(code)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		if len(rets) == 0 {
			return nil, fmt.Errorf("%s: no RET instruction", fn.Name)
		}
		for _, r := range rets {
			fn.Returns = append(fn.Returns, fn.Entry+r)
		}
	}
	return p, nil
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

// fromSymtab finds the functions in .symtab, reading its entries and names
// in place (a large Go executable has hundreds of thousands of symbols).
func fromSymtab(f *elf.File, names []string) ([]Func, error) {
	symtab := f.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil || symtab.Link == 0 || int(symtab.Link) >= len(f.Sections) {
		return nil, elf.ErrNoSymbols
	}
	syms, err := symtab.Data()
	if err != nil {
		return nil, err
	}
	strs, err := f.Sections[symtab.Link].Data()
	if err != nil {
		return nil, err
	}
	want := make([][]byte, len(names))
	for i, n := range names {
		want[i] = append([]byte(n), 0)
	}
	out := make([]Func, len(names))
	n := 0
	for off := 0; off+elf.Sym64Size <= len(syms) && n < len(names); off += elf.Sym64Size {
		e := syms[off : off+elf.Sym64Size]
		if elf.ST_TYPE(e[4]) != elf.STT_FUNC {
			continue
		}
		name := int(f.ByteOrder.Uint32(e[0:4]))
		for i, w := range want {
			if out[i].Name == "" && name+len(w) <= len(strs) && bytes.Equal(strs[name:name+len(w)], w) {
				out[i] = Func{Name: names[i], Addr: f.ByteOrder.Uint64(e[8:16]), Size: f.ByteOrder.Uint64(e[16:24])}
				n++
			}
		}
	}
	if n < len(names) {
		return nil, ErrNoTLS
	}
	return out, nil
}

func fromPclntab(f *elf.File, names []string) ([]Func, error) {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil, ErrNoTable
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTable, err)
	}
	// The function name table is in there: no name, no need to decode it all.
	for _, n := range names {
		if !bytes.Contains(data, append([]byte(n), 0)) {
			return nil, ErrNoTLS
		}
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTable, err)
	}
	out := make([]Func, len(names))
	for i, name := range names {
		fn := tab.LookupFunc(name)
		if fn == nil {
			return nil, ErrNoTLS
		}
		out[i] = Func{Name: name, Addr: fn.Entry, Size: fn.End - fn.Entry}
	}
	return out, nil
}

// progOf is the executable PT_LOAD segment holding addr, or nil.
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
