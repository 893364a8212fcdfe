// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package elftest builds and damages ELF files for the tests of the TLS
// probing: a minimal synthetic x86-64 Go-like executable (the fuzz seeds)
// and a patch of one symbol's st_size (a hostile executable).
package elftest

import (
	"debug/elf"
	"encoding/binary"
)

// TLSSymbols are the functions the synthetic executable defines (those
// gotls looks for).
var TLSSymbols = []string{"crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read", "crypto/tls.(*Conn).Close"}

// funcCode is each synthetic function: CMPQ SP, 0x10(R14); JBE +2; NOP;
// RET; NOP; RET (Go's stack check, a body, two returns).
var funcCode = []byte{0x49, 0x3b, 0x66, 0x10, 0x76, 0x02, 0x90, 0xc3, 0x90, 0xc3}

// Synthetic is a minimal x86-64 ELF executable of well under a KiB: one
// PT_LOAD R+X segment over the whole file, a .text with the three crypto/tls
// functions (each with a stack check and two RETs), a .go.buildinfo naming
// goVersion in Go 1.18's layout, and .symtab, .strtab and .shstrtab.
func Synthetic(goVersion string) []byte { return synthetic(goVersion, false) }

// SyntheticPointers is Synthetic with .go.buildinfo in the layout of Go
// 1.13 to 1.17: the version reached through a pointer to a string header.
func SyntheticPointers(goVersion string) []byte { return synthetic(goVersion, true) }

func synthetic(goVersion string, pointers bool) []byte {
	const base = 0x400000
	le := binary.LittleEndian
	var text []byte
	for range TLSSymbols {
		text = append(text, funcCode...)
	}
	// .go.buildinfo: magic, pointer size, flags, padding to 32. Go 1.18+
	// (flags 2: inline strings): then the version and module info as
	// varint-prefixed strings. Before: at 16, a pointer to the version's
	// string header {data, len} (here at 32, its bytes at 48), at 24 the
	// module info's (none here).
	var bi []byte
	if pointers {
		bi = append([]byte("\xff Go buildinf:"), 8, 0)
		bi = append(bi, make([]byte, 48-len(bi))...)
		le.PutUint64(bi[40:], uint64(len(goVersion)))
		bi = append(bi, goVersion...)
	} else {
		bi = append([]byte("\xff Go buildinf:"), 8, 2)
		bi = append(bi, make([]byte, 32-len(bi))...)
		bi = binary.AppendUvarint(bi, uint64(len(goVersion)))
		bi = append(bi, goVersion...)
		bi = append(bi, 0)
	}
	strtab := []byte{0}
	var nameOff []uint32
	for _, n := range TLSSymbols {
		nameOff = append(nameOff, uint32(len(strtab)))
		strtab = append(append(strtab, n...), 0)
	}
	shstr := []byte{0}
	shName := map[string]uint32{}
	for _, n := range []string{".text", ".go.buildinfo", ".symtab", ".strtab", ".shstrtab"} {
		shName[n] = uint32(len(shstr))
		shstr = append(append(shstr, n...), 0)
	}
	// Layout: ELF header, one program header, then the sections' bytes,
	// then the section headers.
	off := uint64(64 + 56)
	textOff := off
	off += uint64(len(text))
	biOff := (off + 15) &^ 15
	off = biOff + uint64(len(bi))
	if pointers {
		le.PutUint64(bi[16:], base+biOff+32)
		le.PutUint64(bi[32:], base+biOff+48)
	}
	symOff := (off + 7) &^ 7
	syms := make([]byte, elf.Sym64Size*(1+len(TLSSymbols)))
	for i := range TLSSymbols {
		e := syms[elf.Sym64Size*(i+1):]
		le.PutUint32(e[0:], nameOff[i])
		e[4] = byte(elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC))
		le.PutUint16(e[6:], 1) // .text
		le.PutUint64(e[8:], base+textOff+uint64(i*len(funcCode)))
		le.PutUint64(e[16:], uint64(len(funcCode)))
	}
	off = symOff + uint64(len(syms))
	strOff := off
	off += uint64(len(strtab))
	shstrOff := off
	off += uint64(len(shstr))
	shOff := (off + 7) &^ 7
	const nsec = 6
	size := shOff + nsec*64
	b := make([]byte, size)
	copy(b[textOff:], text)
	copy(b[biOff:], bi)
	copy(b[symOff:], syms)
	copy(b[strOff:], strtab)
	copy(b[shstrOff:], shstr)
	// ELF header.
	copy(b, elf.ELFMAG)
	b[4], b[5], b[6] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[24:], base+textOff) // entry
	le.PutUint64(b[32:], 64)           // phoff
	le.PutUint64(b[40:], shOff)
	le.PutUint16(b[52:], 64) // ehsize
	le.PutUint16(b[54:], 56) // phentsize
	le.PutUint16(b[56:], 1)
	le.PutUint16(b[58:], 64) // shentsize
	le.PutUint16(b[60:], nsec)
	le.PutUint16(b[62:], nsec-1) // shstrndx
	// The program header: PT_LOAD R+X over the whole file.
	ph := b[64:]
	le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
	le.PutUint32(ph[4:], uint32(elf.PF_R|elf.PF_X))
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], size)
	le.PutUint64(ph[40:], size)
	le.PutUint64(ph[48:], 0x1000)
	sec := func(i int, name string, typ elf.SectionType, flags elf.SectionFlag, addr, off, n uint64, link, info uint32, align, entsize uint64) {
		h := b[shOff+uint64(i)*64:]
		le.PutUint32(h[0:], shName[name])
		le.PutUint32(h[4:], uint32(typ))
		le.PutUint64(h[8:], uint64(flags))
		le.PutUint64(h[16:], addr)
		le.PutUint64(h[24:], off)
		le.PutUint64(h[32:], n)
		le.PutUint32(h[40:], link)
		le.PutUint32(h[44:], info)
		le.PutUint64(h[48:], align)
		le.PutUint64(h[56:], entsize)
	}
	sec(1, ".text", elf.SHT_PROGBITS, elf.SHF_ALLOC|elf.SHF_EXECINSTR, base+textOff, textOff, uint64(len(text)), 0, 0, 16, 0)
	sec(2, ".go.buildinfo", elf.SHT_PROGBITS, elf.SHF_ALLOC|elf.SHF_WRITE, base+biOff, biOff, uint64(len(bi)), 0, 0, 16, 0)
	sec(3, ".symtab", elf.SHT_SYMTAB, 0, 0, symOff, uint64(len(syms)), 4, 1, 8, elf.Sym64Size)
	sec(4, ".strtab", elf.SHT_STRTAB, 0, 0, strOff, uint64(len(strtab)), 0, 0, 1, 0)
	sec(5, ".shstrtab", elf.SHT_STRTAB, 0, 0, shstrOff, uint64(len(shstr)), 0, 0, 1, 0)
	return b
}
