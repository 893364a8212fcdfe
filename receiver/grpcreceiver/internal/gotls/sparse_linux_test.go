// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package gotls

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls/elftest"
)

// A file of 16 GiB that holds a KiB (truncate -s 16G) and whose headers
// place a table of 1 GiB in the hole: every table that the parsers read is
// refused as not held, without allocating it (debug/elf and CheckELF
// allocated the declared size, which passed every check against the
// apparent size: 13.8 GB RSS with a 16 GiB section name table).
func TestFindSparseFile(t *testing.T) {
	const hole = 1 << 30
	le := binary.LittleEndian
	set := func(i, field int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			le.PutUint64(shdr(b, i)[field:], v)
			return b
		}
	}
	// Each table once just under its cap (refused as not held) and once
	// at 1 GiB (refused as too large, or not held).
	section := func(i int, n uint64) func([]byte) []byte {
		return func(b []byte) []byte { return set(i, 32, n)(set(i, 24, hole)(b)) }
	}
	headers := func(off, entsize, num int, n, count uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			le.PutUint64(b[off:], hole)
			le.PutUint16(b[entsize:], uint16(min(n/count, 0xffff)))
			le.PutUint16(b[num:], uint16(count))
			return b
		}
	}
	type hostile struct {
		name  string
		patch func([]byte) []byte
	}
	var cases []hostile
	for _, n := range []uint64{0, 1 << 30} {
		under := func(c uint64) uint64 {
			if n != 0 {
				return n
			}
			return c - 1<<10
		}
		size := "under its cap"
		if n != 0 {
			size = "1 GiB"
		}
		cases = append(cases,
			hostile{"section name table " + size, section(secShstrtab, under(MaxSectionNames))},
			hostile{"symbol table " + size, section(secSymtab, under(MaxSymtab))},
			hostile{"string table " + size, section(secStrtab, under(MaxSymtab))},
			hostile{".gopclntab " + size, func(b []byte) []byte { return section(secSymtab, under(MaxPclntab))(stripped(b, pclnGo120, nil)) }},
			hostile{".go.buildinfo " + size, section(secBuildinfo, under(MaxSymtab))},
			hostile{"section header table " + size, headers(40, 58, 60, under(MaxHeaderTable), MaxSections)},
			hostile{"program header table " + size, headers(32, 54, 56, under(MaxHeaderTable), MaxProgs)},
		)
	}
	cases = append(cases, hostile{"function code", func(b []byte) []byte {
		// The segment runs to the end of the file, the function far
		// into the hole.
		ph := b[64:]
		le.PutUint64(ph[32:], 16<<30)
		le.PutUint64(ph[40:], 16<<30)
		syms := b[le.Uint64(shdr(b, secSymtab)[24:]):]
		le.PutUint64(syms[24+8:], le.Uint64(ph[16:])+hole) // Write's address
		le.PutUint64(syms[24+16:], MaxFuncSize)
		return b
	}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.patch(elftest.Synthetic("go1.22.0"))
			path := filepath.Join(t.TempDir(), "sparse")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			require.NoError(t, os.Truncate(path, 16<<30))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = FindFile(f)
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "allocated")
			switch {
			case strings.HasPrefix(c.name, ".go.buildinfo"):
				// At most 170 bytes of it read, whatever it declares.
				assert.ErrorIs(t, err, ErrGoABI)
			case strings.HasSuffix(c.name, "1 GiB"):
				assert.ErrorIs(t, err, ErrMalformed)
			default:
				assert.ErrorIs(t, err, ErrMalformed)
				assert.ErrorIs(t, err, ErrNotHeld)
			}
			t.Log(err)
		})
	}
}

// The same executable, dense (every byte written), is found: the checks
// refuse holes, not files.
func TestFindDenseFile(t *testing.T) {
	for name, b := range map[string][]byte{
		"symtab":   elftest.Synthetic("go1.22.0"),
		"pointers": elftest.SyntheticPointers("go1.17.13"),
	} {
		path := filepath.Join(t.TempDir(), "dense")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		p, err := Find(path)
		require.NoError(t, err, name)
		assert.Len(t, p.Write.Returns, 2, name)
	}
}
