// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package gotls

import (
	"errors"
	"fmt"
	"io"
)

// What is read from a file, at most: a size or count that the file
// declares is checked against these before anything is allocated for it,
// and every read goes through a budget (budgetReader).
const (
	// MaxHeaderTable bounds the program and section header tables
	// (65535 section headers of 64 bytes are 4 MiB), MaxSections and
	// MaxProgs their entries: debug/elf makes a Section (a Prog) of each,
	// about 300 bytes (65535 sections were 22 MiB allocated for a file of
	// 4 MiB). libc has 64 sections, the most of any executable or library
	// of a Debian system, and 15 program headers at most.
	MaxHeaderTable = 4 << 20
	MaxSections    = 1 << 12
	MaxProgs       = 1 << 10
	// MaxSectionNames bounds the section name table (.shstrtab: a few
	// hundred bytes in any real file; debug/elf reads it whole).
	MaxSectionNames = 64 << 10
	// MaxLibTable bounds each of a shared library's symbol tables and
	// their string and version tables (.symtab, .dynsym, .dynstr,
	// .gnu.version*): cilium/ebpf reads them whole, at several times their
	// size in symbols (libssl's are tens of KiB).
	MaxLibTable = 4 << 20
	// MaxSymtab bounds a Go executable's .symtab and .strtab: read in
	// chunks (maxChunk), so this bounds the time, not the memory.
	MaxSymtab = 256 << 20
	// MaxPclntab bounds a stripped Go executable's .gopclntab, and
	// MaxPclnFuncs the functions it may declare: it is streamed (its name
	// table in chunks of maxChunk, its function table and the functions'
	// records through smaller windows; at most about maxChunk held), so
	// these bound the time, not the memory.
	MaxPclntab   = 64 << 20
	MaxPclnFuncs = 1 << 19
	// MaxRead bounds one read, MaxFileRead all the reads of one file: a
	// .symtab and its .strtab, or (an executable with no .symtab) a
	// .gopclntab read about twice (its name table, then its function
	// table and records), with room for the rest.
	MaxRead     = 16 << 20
	MaxFileRead = 2*MaxSymtab + MaxPclntab + 64<<20
	// maxChunk is the size of the chunks a table is streamed in.
	maxChunk = 1 << 20
)

// Why a file is refused (each also wraps ErrMalformed).
var (
	// ErrNotHeld: a table or section declares bytes that the file does not
	// hold: past its end, or in a hole (a sparse file: `truncate -s 16G`
	// passes any check against the apparent size without using the disk).
	ErrNotHeld = errors.New("declares bytes the file does not hold (past its end or in a hole of a sparse file)")
	// ErrTooLarge: a table or section is larger than what is read of one
	// (MaxHeaderTable, MaxSectionNames, MaxLibTable, MaxSymtab,
	// MaxPclntab), or the reads of one file passed MaxFileRead.
	ErrTooLarge = errors.New("larger than what is read of one file")
)

// Held says whether a file really holds bytes [off, off+n) (written, not a
// hole, not past its end).
type Held func(off, n uint64) bool

// Dense is Held for a file of size bytes with no holes (in memory).
func Dense(size int64) Held {
	return func(off, n uint64) bool { return off <= uint64(size) && n <= uint64(size)-off }
}

// notHeld is the error for bytes [off, off+n) of what, not held.
func notHeld(what string, off, n uint64) error {
	return fmt.Errorf("%w: %s (file offset %#x, %d bytes) %w", ErrMalformed, what, off, n, ErrNotHeld)
}

// tooLarge is the error for what, of n bytes, over max.
func tooLarge(what string, n, maxN uint64) error {
	return fmt.Errorf("%w: %s of %d bytes is %w (%d)", ErrMalformed, what, n, ErrTooLarge, maxN)
}

// budgetReader reads r only where the file holds its bytes, at most
// MaxRead bytes at once and MaxFileRead in all: what the parsers (our own
// and debug/elf's, which allocates a declared size in 10 MiB chunks as it
// reads them) may allocate is bounded by what is there, whatever a header
// says.
type budgetReader struct {
	r    io.ReaderAt
	size int64
	held Held
	left int64
}

func newBudgetReader(r io.ReaderAt, size int64, held Held) *budgetReader {
	return &budgetReader{r: r, size: size, held: held, left: MaxFileRead}
}

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: negative offset", ErrMalformed)
	}
	if off >= b.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), b.size-off)
	if n > MaxRead {
		return 0, tooLarge("a read", uint64(n), MaxRead)
	}
	if n > b.left {
		return 0, tooLarge("what the file's headers make read", uint64(MaxFileRead-b.left+n), MaxFileRead)
	}
	if !b.held(uint64(off), uint64(n)) {
		return 0, notHeld("a read", uint64(off), uint64(n))
	}
	b.left -= n
	m, err := b.r.ReadAt(p[:n], off)
	if err == nil && n < int64(len(p)) {
		err = io.EOF
	}
	return m, err
}
