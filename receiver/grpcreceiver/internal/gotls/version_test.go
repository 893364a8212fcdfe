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

// versionBomb is the synthetic executable made a library with version
// tables (its .symtab a .dynsym, its .go.buildinfo a .gnu.version, its
// .text the version table): need false, n definitions (.gnu.version_d)
// of 20 bytes, each of 65535 names that are one (their chain shares one
// entry, which says no next); need, n needs (.gnu.version_r) of 16
// bytes, each of the same chain of 256 names.
func versionBomb(n int, need bool) []byte {
	le := binary.LittleEndian
	b := elftest.Synthetic("go1.22.0")
	le.PutUint32(shdr(b, secSymtab)[4:], uint32(elf.SHT_DYNSYM))
	le.PutUint32(shdr(b, secBuildinfo)[4:], uint32(elf.SHT_GNU_VERSYM))
	typ, entry, chain := elf.SHT_GNU_VERDEF, 20, 1
	if need {
		typ, entry, chain = elf.SHT_GNU_VERNEED, 16, 256
	}
	le.PutUint32(shdr(b, secText)[4:], uint32(typ))
	aux := entry * n
	d := make([]byte, aux+16*chain)
	for k := range n {
		e := d[entry*k:]
		le.PutUint16(e, 1) // version
		next := 20 * uint32(min(1, n-1-k))
		if need {
			le.PutUint16(e[2:], uint16(chain))
			le.PutUint32(e[8:], uint32(aux-entry*k))
			le.PutUint32(e[12:], 16*uint32(min(1, n-1-k)))
			continue
		}
		le.PutUint16(e[4:], 1)      // index
		le.PutUint16(e[6:], 0xffff) // names
		le.PutUint32(e[12:], uint32(aux-entry*k))
		le.PutUint32(e[16:], next)
	}
	for c := range chain {
		a := d[aux+16*c:]
		le.PutUint32(a, 1) // a name of .strtab; no next (a definition's)
		if need {
			le.PutUint32(a[8:], 1)
			le.PutUint32(a[12:], 16*uint32(min(1, chain-1-c)))
		}
	}
	return moveSection(b, secText, d)
}

// A library whose version definitions name one name 65535 times each (a
// definition's chain of names is followed as many times as it says,
// whatever its links), or whose needs share one chain of names, is
// refused by CheckLibrary (CheckELF with MaxLibTable) before cilium/ebpf
// reads it: debug/elf's DynamicSymbols walks them, a string and an entry
// for each name. 64 definitions (a file of 2 KiB) made it allocate 434 MiB
// in 2.6 s; a table of 4 MiB holds 209715.
func TestVersionBomb(t *testing.T) {
	b := versionBomb(1, false)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	_, err = f.DynamicSymbols()
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	t.Logf("one definition, a file of %d bytes: debug/elf's DynamicSymbols allocated %d KiB", len(b), (after.TotalAlloc-before.TotalAlloc)>>10)
	assert.Greater(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20))

	for _, c := range []struct {
		n    int
		need bool
	}{{1, false}, {1 << 10, false}, {1 << 14, true}} {
		b := versionBomb(c.n, c.need)
		runtime.ReadMemStats(&before)
		start := time.Now()
		err := CheckELF(bytes.NewReader(b), int64(len(b)), Dense(int64(len(b))), MaxLibTable)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		t.Logf("%d (needs %v), a file of %d bytes: %v, %d KiB allocated, %s", c.n, c.need, len(b), err, (after.TotalAlloc-before.TotalAlloc)>>10, took)
		require.ErrorIs(t, err, ErrMalformed)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(b))+1<<20)
	}
	// A few definitions and needs, as a real library has: passed.
	for _, need := range []bool{false, true} {
		b := versionBomb(4, need)
		d := b[binary.LittleEndian.Uint64(shdr(b, secText)[24:]):]
		for k := range 4 { // one name each
			binary.LittleEndian.PutUint16(d[k*20+6:], 1)
			if need {
				binary.LittleEndian.PutUint16(d[k*16+2:], 1)
			}
		}
		require.NoError(t, CheckELF(bytes.NewReader(b), int64(len(b)), Dense(int64(len(b))), MaxLibTable), "needs %v", need)
	}
}
