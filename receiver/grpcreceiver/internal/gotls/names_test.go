// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package gotls

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls/elftest"
)

// moveSection appends data to the synthetic executable b as section i's
// bytes (its header's offset and size changed to them).
func moveSection(b []byte, i int, data []byte) []byte {
	le := binary.LittleEndian
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	le.PutUint64(shdr(b, i)[24:], uint64(len(b)))
	le.PutUint64(shdr(b, i)[32:], uint64(len(data)))
	return append(b, data...)
}

// nameBomb is the synthetic executable with a name of nameLen bytes
// added to its section name table, and n more sections, each named by it
// (what, n = 0, sections named as usual; sections: when false, the
// .symtab has n more symbols named by a name of nameLen bytes in its
// .strtab instead). A file of a few hundred KiB: debug/elf makes a string
// of each section's (or symbol's) name, nameLen bytes each time.
func nameBomb(n, nameLen int, sections bool) []byte {
	le := binary.LittleEndian
	b := elftest.Synthetic("go1.22.0")
	table := secStrtab
	if sections {
		table = secShstrtab
	}
	sh := shdr(b, table)
	names := bytes.Clone(b[le.Uint64(sh[24:]):][:le.Uint64(sh[32:])])
	long := uint32(len(names))
	names = append(append(names, bytes.Repeat([]byte{'x'}, nameLen)...), 0)
	b = moveSection(b, table, names)
	if !sections {
		sh := shdr(b, secSymtab)
		syms := bytes.Clone(b[le.Uint64(sh[24:]):][:le.Uint64(sh[32:])])
		for range n {
			sym := make([]byte, elf.Sym64Size)
			le.PutUint32(sym, long)
			sym[4] = byte(elf.STT_FUNC)
			syms = append(syms, sym...)
		}
		return moveSection(b, secSymtab, syms)
	}
	shoff, shnum := le.Uint64(b[40:]), int(le.Uint16(b[60:]))
	headers := bytes.Clone(b[shoff:][:shnum*64])
	for range n {
		h := make([]byte, 64)
		le.PutUint32(h, long)
		le.PutUint32(h[4:], uint32(elf.SHT_PROGBITS))
		headers = append(headers, h...)
	}
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	le.PutUint64(b[40:], uint64(len(b)))
	le.PutUint16(b[60:], uint16(shnum+n))
	return append(b, headers...)
}

// A file of a few hundred KiB whose sections all name the same name of
// 60 KiB (the section name table holds it once) is refused before
// debug/elf makes a string of it for each section: it allocated 514 MiB
// for 8192 sections (4 GiB and 3 s for 65535, a file of 4 MiB; now at
// most MaxSections). The same
// for a shared library whose symbols all name the same long name in its
// string table (debug/elf's Symbols, which cilium/ebpf calls, copies it
// once per symbol; and scans it to its end once per symbol when it has
// no NUL): CheckLibrary refuses it.
func TestNameBombs(t *testing.T) {
	for _, c := range []struct {
		name     string
		sections bool
		n        int
		nameLen  int
		tableCap uint64
	}{
		{"section names", true, MaxSections - 16, 60 << 10, 0},
		{"section names, library", true, MaxSections - 16, 60 << 10, MaxLibTable},
		{"too many sections", true, 1 << 15, 1, 0},
		{"symbol names, library", false, 8192, 60 << 10, MaxLibTable},
		{"symbol names, unterminated, library", false, 8192, 60 << 10, MaxLibTable},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := nameBomb(c.n, c.nameLen, c.sections)
			if c.name == "symbol names, unterminated, library" {
				le := binary.LittleEndian
				sh := shdr(b, secStrtab)
				b[le.Uint64(sh[24:])+le.Uint64(sh[32:])-1] = 'x' // its NUL
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			var err error
			if c.tableCap == 0 {
				_, err = FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
			} else {
				err = CheckELF(bytes.NewReader(b), int64(len(b)), Dense(int64(len(b))), c.tableCap)
			}
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Logf("a file of %d KiB: %v, %d KiB allocated, %s", len(b)>>10, err, (after.TotalAlloc-before.TotalAlloc)>>10, took)
			require.ErrorIs(t, err, ErrMalformed)
			require.ErrorIs(t, err, ErrTooLarge)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(b))+4<<20, "allocated")
		})
	}
	// A compressed string table, which debug/elf decompresses to the
	// size its compression header declares (a zlib stream of 1 MiB is
	// 1 GiB of zeros): refused by CheckLibrary.
	b := elftest.Synthetic("go1.22.0")
	binary.LittleEndian.PutUint64(shdr(b, secStrtab)[8:], uint64(elf.SHF_COMPRESSED))
	err := CheckELF(bytes.NewReader(b), int64(len(b)), Dense(int64(len(b))), MaxLibTable)
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "compressed")
	// The synthetic executable and its library check pass, with their
	// usual names.
	for _, sections := range []bool{true, false} {
		b := nameBomb(16, 64, sections)
		require.NoError(t, CheckELF(bytes.NewReader(b), int64(len(b)), Dense(int64(len(b))), MaxLibTable))
	}
}

// withCode is the synthetic executable with code appended to it, its
// segment running to its end, and crypto/tls.(*Conn).Read that code.
func withCode(code []byte) []byte {
	le := binary.LittleEndian
	b := elftest.Synthetic("go1.22.0")
	at := uint64(len(b))
	b = append(b, code...)
	ph := b[64:]
	le.PutUint64(ph[32:], uint64(len(b)))
	le.PutUint64(ph[40:], uint64(len(b)))
	syms := b[le.Uint64(shdr(b, secSymtab)[24:]):]
	read := syms[2*elf.Sym64Size:] // after the null symbol and Write
	le.PutUint64(read[8:], le.Uint64(ph[16:])+at)
	le.PutUint64(read[16:], uint64(len(code)))
	return b
}

// A crypto/tls.(*Conn).Read of 1 MiB of RETs took 0.3 s to decode (1 MiB
// of NOPs as long; three such functions a second per file, 25 times what
// the collector's own stripped table costs), and gave a million return
// probes to attach (uprobe_multi takes 2^20). Real ones are a few KiB
// with a few RETs: at most MaxFuncSize bytes and MaxReturns RETs.
func TestFindHostileCode(t *testing.T) {
	ret := []byte{0x90, 0xc3}
	b := withCode(bytes.Repeat(ret, 2*MaxReturns))
	_, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "RET instructions")

	b = withCode(append(bytes.Repeat([]byte{0x90}, MaxFuncSize), 0xc3))
	_, err = FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	require.ErrorIs(t, err, ErrMalformed)
	assert.Contains(t, err.Error(), "bytes long")

	// At the caps: found.
	b = withCode(append(bytes.Repeat([]byte{0x90}, MaxFuncSize-2*MaxReturns), bytes.Repeat(ret, MaxReturns)...))
	p, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
	require.NoError(t, err)
	assert.Len(t, p.Read.Returns, MaxReturns)
}
