// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package gotls

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls/elftest"
)

// shdr is section i's header in the synthetic executable b.
func shdr(b []byte, i int) []byte {
	return b[binary.LittleEndian.Uint64(b[40:])+uint64(i)*64:][:64]
}

// The synthetic executable's sections (elftest.Synthetic).
const (
	secText = 1 + iota
	secBuildinfo
	secSymtab
	secStrtab
	secShstrtab
)

// pclnFunc is a function of a synthetic .gopclntab.
type pclnFunc struct {
	name  string
	entry uint64
}

// pclnRecord is the size of a synthetic _func record: its entry, then
// the nine 4-byte fields debug/gosym may read.
const pclnRecord = 8 + 9*4

// synthPclntab is a .gopclntab in the layout of magic (pclnGo116,
// pclnGo118, pclnGo120) for funcs (sorted by entry), the last one ending
// at end, of an executable whose .text is at text: the header, the name
// table, (empty) compilation unit, file and pc tables, the function table,
// then the _func records in its order.
func synthPclntab(magic uint32, text uint64, funcs []pclnFunc, end uint64) []byte {
	le := binary.LittleEndian
	word, words, entryField := 4, 8, 4 // 1.18+
	if magic == pclnGo116 {
		word, words, entryField = 8, 7, 8
	}
	hdr := 8 + 8*words
	var names []byte
	nameOff := make([]uint32, len(funcs))
	for i, f := range funcs {
		nameOff[i] = uint32(len(names))
		names = append(append(names, f.name...), 0)
	}
	namesAt := uint64(hdr)
	functabAt := (namesAt + uint64(len(names)) + 7) &^ 7
	functabSize := uint64((2*len(funcs) + 1) * word)
	recordsAt := (functabSize + 7) &^ 7 // from the function table
	b := make([]byte, functabAt+recordsAt+uint64(len(funcs)*pclnRecord))
	le.PutUint32(b, magic)
	b[6], b[7] = 1, 8
	le.PutUint64(b[8:], uint64(len(funcs)))
	offsets := []uint64{namesAt, functabAt, functabAt, functabAt, functabAt} // names, cu, files, pc, functab
	if magic != pclnGo116 {
		offsets = append([]uint64{text}, offsets...) // the text start (1.18+)
	}
	for i, o := range offsets {
		le.PutUint64(b[8+8*(2+i):], o)
	}
	copy(b[namesAt:], names)
	put := func(at []byte, v uint64) {
		if word == 4 {
			le.PutUint32(at, uint32(v))
		} else {
			le.PutUint64(at, v)
		}
	}
	rel := func(pc uint64) uint64 {
		if magic == pclnGo116 {
			return pc
		}
		return pc - text
	}
	ft := b[functabAt:]
	for i, f := range funcs {
		rec := recordsAt + uint64(i*pclnRecord)
		put(ft[2*i*word:], rel(f.entry))
		put(ft[(2*i+1)*word:], rec)
		put(ft[rec:], rel(f.entry))
		le.PutUint32(ft[rec+uint64(entryField):], nameOff[i])
	}
	put(ft[2*len(funcs)*word:], rel(end))
	return b
}

// pclnHeaderAt is the offset of header word i (after the magic and the
// four bytes that follow it) of a synthetic .gopclntab.
func pclnHeaderAt(i int) int { return 8 + 8*i }

// synthFuncs are the functions of the synthetic executable b, from its
// .symtab, and where its .text ends; with decoys after them: a name that
// ends with a probed one, one that starts with one, and a second
// crypto/tls.(*Conn).Write (the first is the one looked up, as
// debug/gosym's LookupFunc finds it).
func synthFuncs(b []byte) (funcs []pclnFunc, text, end uint64) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		panic(err)
	}
	for _, s := range syms {
		funcs = append(funcs, pclnFunc{s.Name, s.Value})
		end = max(end, s.Value+s.Size)
	}
	for _, n := range []string{"vendor/" + ReadSym, WriteSym + "r", WriteSym} {
		funcs = append(funcs, pclnFunc{n, end})
		end += 16
	}
	return funcs, f.Section(".text").Addr, end
}

// stripped turns the synthetic executable b into a stripped one, whose
// functions are in a .gopclntab of the layout magic (synthPclntab): its
// .symtab becomes that table, moved to the end of the file with the
// section names (".gopclntab" added). patch, when not nil, changes the
// table before.
func stripped(b []byte, magic uint32, patch func([]byte)) []byte {
	funcs, text, end := synthFuncs(b)
	return strippedFuncs(b, magic, funcs, text, end, patch)
}

// strippedFuncs is stripped with the functions funcs in its .gopclntab
// (synthPclntab), the last one ending at end, .text being at text.
func strippedFuncs(b []byte, magic uint32, funcs []pclnFunc, text, end uint64, patch func([]byte)) []byte {
	le := binary.LittleEndian
	tab := synthPclntab(magic, text, funcs, end)
	if patch != nil {
		patch(tab)
	}
	sh := shdr(b, secShstrtab)
	off, n := le.Uint64(sh[24:]), le.Uint64(sh[32:])
	names := append(slices.Clone(b[off:off+n]), ".gopclntab\x00"...)
	namesAt := uint64(len(b))
	b = append(b, names...)
	tabAt := (uint64(len(b)) + 15) &^ 15
	b = append(b, make([]byte, tabAt-uint64(len(b)))...)
	b = append(b, tab...)
	sh = shdr(b, secShstrtab)
	le.PutUint64(sh[24:], namesAt)
	le.PutUint64(sh[32:], uint64(len(names)))
	sym := shdr(b, secSymtab)
	le.PutUint32(sym[0:], uint32(n))
	le.PutUint32(sym[4:], uint32(elf.SHT_PROGBITS))
	le.PutUint64(sym[24:], tabAt)
	le.PutUint64(sym[32:], uint64(len(tab)))
	le.PutUint32(sym[40:], 0) // no link
	le.PutUint64(sym[56:], 0) // no entry size
	return b
}

// pclnLayouts are the layouts of .gopclntab read, and a synthetic
// executable of the Go release that writes each.
var pclnLayouts = []struct {
	name  string
	magic uint32
	exe   func() []byte
}{
	{"go1.16", pclnGo116, func() []byte { return elftest.SyntheticPointers("go1.17.13") }},
	{"go1.18", pclnGo118, func() []byte { return elftest.Synthetic("go1.19.8") }},
	{"go1.20", pclnGo120, func() []byte { return elftest.Synthetic("go1.22.0") }},
}

// gosymLookup is what debug/gosym finds of names in the .gopclntab of f:
// the oracle (it holds the table and a Func for each of its functions).
func gosymLookup(t *testing.T, f *elf.File, names []string) []Func {
	t.Helper()
	data, err := f.Section(".gopclntab").Data()
	require.NoError(t, err)
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, gosymText(t, f)))
	require.NoError(t, err)
	var out []Func
	for _, n := range names {
		fn := tab.LookupFunc(n)
		require.NotNil(t, fn, n)
		out = append(out, Func{Name: n, Addr: fn.Entry, Size: fn.End - fn.Entry})
	}
	return out
}

// gosymText is the address debug/gosym is given for the .text of f: the
// start of .text, what it takes, or (a table of Go 1.18+) where the
// table's header or the module data (Go 1.26+) place runtime.text
// (textStart: 0x100 bytes on in an externally linked executable), not
// debug/gosym's business.
func gosymText(t *testing.T, f *elf.File) uint64 {
	t.Helper()
	tab, err := readPclnHeader(f.Section(".gopclntab"), f.Section(".text"), f.Section(".go.module"))
	require.NoError(t, err)
	if tab.word == 4 {
		return tab.text
	}
	return f.Section(".text").Addr
}

// The synthetic stripped executables of each layout are found as their
// .symtab says, and fromPclntab gives what debug/gosym gives for every
// name of the table (the decoys too).
func TestPclntabSynthetic(t *testing.T) {
	for _, l := range pclnLayouts {
		t.Run(l.name, func(t *testing.T) {
			want, err := FindReaderFor(bytes.NewReader(l.exe()), int64(len(l.exe())), "amd64")
			require.NoError(t, err)
			b := stripped(l.exe(), l.magic, nil)
			p, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
			require.NoError(t, err)
			assert.True(t, p.Pclntab)
			assert.Equal(t, []Func{want.Write, want.Read, want.Close}, []Func{p.Write, p.Read, p.Close})

			f, err := elf.NewFile(bytes.NewReader(b))
			require.NoError(t, err)
			funcs, _, _ := synthFuncs(l.exe())
			var names []string
			for _, fn := range funcs {
				if !slices.Contains(names, fn.name) {
					names = append(names, fn.name)
				}
			}
			got, err := fromPclntab(f, Dense(int64(len(b))), names)
			require.NoError(t, err)
			assert.Equal(t, gosymLookup(t, f, names), got)
		})
	}
}

// A .gopclntab whose header or tables lie is refused with an error naming
// why (ErrMalformed, ErrNoTable, ErrNoTLS, or ErrGoABI for Go 1.2's
// layout), never a panic, a large allocation or a long loop; and where
// debug/gosym finds the functions all the same, so does fromPclntab.
func TestPclntabHostile(t *testing.T) {
	le := binary.LittleEndian
	type hostile struct {
		name  string
		patch func(tab []byte)
		want  error
	}
	for _, l := range pclnLayouts {
		word, namesWord, functabWord, nameField := 4, 3, 7, 4
		if l.magic == pclnGo116 {
			word, namesWord, functabWord, nameField = 8, 2, 6, 8
		}
		functab := func(tab []byte) []byte { return tab[le.Uint64(tab[pclnHeaderAt(functabWord):]):] }
		funcoff := func(tab []byte, i int) []byte { return functab(tab)[(2*i+1)*word:] }
		record := func(tab []byte, i int) []byte {
			return functab(tab)[le.Uint32(funcoff(tab, i)):]
		}
		cases := []hostile{
			{"nfunc 2^40", func(tab []byte) { le.PutUint64(tab[8:], 1<<40) }, ErrMalformed},
			{"nfunc 2^64-1", func(tab []byte) { le.PutUint64(tab[8:], ^uint64(0)) }, ErrMalformed},
			{"nfunc one per 8 bytes and one", func(tab []byte) { le.PutUint64(tab[8:], uint64(len(tab)/8+1)) }, ErrMalformed},
			{"nfunc past the function table", func(tab []byte) { le.PutUint64(tab[8:], uint64(len(tab)/8)) }, ErrMalformed},
			{"name table past the end", func(tab []byte) { le.PutUint64(tab[pclnHeaderAt(namesWord):], uint64(len(tab))) }, ErrMalformed},
			{"name table at 2^64-1", func(tab []byte) { le.PutUint64(tab[pclnHeaderAt(namesWord):], ^uint64(0)) }, ErrMalformed},
			{"function table past the end", func(tab []byte) { le.PutUint64(tab[pclnHeaderAt(functabWord):], uint64(len(tab))+8) }, ErrMalformed},
			{"function table at 2^64-1", func(tab []byte) { le.PutUint64(tab[pclnHeaderAt(functabWord):], ^uint64(0)) }, ErrMalformed},
			{"function table running past the end", func(tab []byte) {
				le.PutUint64(tab[pclnHeaderAt(functabWord):], uint64(len(tab)-word))
			}, ErrMalformed},
			{"funcoff past the end", func(tab []byte) { le.PutUint32(funcoff(tab, 0), uint32(len(tab))) }, ErrMalformed},
			{"funcoff 2^32-1", func(tab []byte) { le.PutUint32(funcoff(tab, 1), ^uint32(0)) }, ErrMalformed},
			{"funcoff at the last bytes", func(tab []byte) {
				le.PutUint32(funcoff(tab, 0), uint32(len(functab(tab))-nameField-2))
			}, ErrMalformed},
			{"nameOff negative", func(tab []byte) { le.PutUint32(record(tab, 0)[nameField:], uint32(0xffffffff)) }, ErrMalformed},
			{"nameOff past the end", func(tab []byte) { le.PutUint32(record(tab, 1)[nameField:], uint32(len(tab))) }, ErrMalformed},
			{"funcoff not increasing", func(tab []byte) {
				// Every function's record is the last one's: every function is that decoy.
				last := le.Uint32(funcoff(tab, 5))
				for i := range 6 {
					le.PutUint32(funcoff(tab, i), last)
				}
			}, ErrNoTLS},
			{"funcoff decreasing", func(tab []byte) {
				// The records in the reverse order: Write, Read and
				// Close are found at the decoys' entries.
				offs := make([]uint32, 6)
				for i := range offs {
					offs[i] = le.Uint32(funcoff(tab, i))
				}
				for i := range offs {
					le.PutUint32(funcoff(tab, i), offs[5-i])
				}
			}, nil},
			{"entries decreasing", func(tab []byte) {
				le.PutUint32(functab(tab)[2*word:], le.Uint32(functab(tab)[4*word:])+1)
			}, ErrMalformed},
			{"no function", func(tab []byte) { le.PutUint64(tab[8:], 0) }, ErrNoTLS},
			{"a name unterminated", func(tab []byte) {
				names := tab[le.Uint64(tab[pclnHeaderAt(namesWord):]):]
				names[bytes.Index(names, []byte(CloseSym))+len(CloseSym)] = '!'
			}, ErrNoTLS},
			{"Go 1.2's magic", func(tab []byte) { le.PutUint32(tab, pclnGo12) }, ErrGoABI},
			{"unknown magic", func(tab []byte) { le.PutUint32(tab, 0xfffffff2) }, ErrNoTable},
			{"32-bit", func(tab []byte) { tab[7] = 4 }, ErrNoTable},
			{"pad", func(tab []byte) { tab[5] = 1 }, ErrNoTable},
			{"quantum 3", func(tab []byte) { tab[6] = 3 }, ErrNoTable},
		}
		for _, c := range cases {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				b := stripped(l.exe(), l.magic, c.patch)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				p, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
				runtime.ReadMemStats(&after)
				assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "allocated")
				if c.want != nil {
					require.ErrorIs(t, err, c.want)
					assert.NotContains(t, err.Error(), "parser panic")
					t.Log(err)
					return
				}
				// Found (at entries that are no crypto/tls code: Find
				// refuses them, or not), as debug/gosym finds them.
				t.Log(p, err)
				f, err := elf.NewFile(bytes.NewReader(b))
				require.NoError(t, err)
				names := []string{WriteSym, ReadSym, CloseSym}
				got, err := fromPclntab(f, Dense(int64(len(b))), names)
				require.NoError(t, err)
				assert.Equal(t, gosymLookup(t, f, names), got)
			})
		}
	}
	// Cut: the section ends inside the header, or is empty.
	for _, n := range []uint64{0, 12, 40} {
		b := stripped(elftest.Synthetic("go1.22.0"), pclnGo120, nil)
		le.PutUint64(shdr(b, secSymtab)[32:], n)
		_, err := FindReaderFor(bytes.NewReader(b), int64(len(b)), "amd64")
		if n < 16 {
			assert.ErrorIs(t, err, ErrNoTable, n)
		} else {
			assert.ErrorIs(t, err, ErrMalformed, n)
		}
	}
}

// strippedGoExecutables are the stripped Go executables of amd64 or
// arm64 on this machine's PATH with a .gopclntab of Go 1.16+ of at most
// maxPcln bytes, at most max of them (debug/gosym, the oracle, holds each
// table several times over).
func strippedGoExecutables(maxPcln uint64, maxN int) []string {
	var out []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			path, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name()))
			if err != nil || seen[path] || len(out) == maxN {
				continue
			}
			seen[path] = true
			f, err := elf.Open(path)
			if err != nil {
				continue
			}
			pcln := f.Section(".gopclntab")
			var magic [4]byte
			ok := pcln != nil && f.SectionByType(elf.SHT_SYMTAB) == nil && pcln.Size <= maxPcln &&
				(f.Machine == elf.EM_X86_64 || f.Machine == elf.EM_AARCH64)
			if ok {
				_, err = pcln.ReadAt(magic[:], 0)
				m := binary.LittleEndian.Uint32(magic[:])
				ok = err == nil && (m == pclnGo116 || m == pclnGo118 || m == pclnGo120)
			}
			f.Close()
			if ok {
				out = append(out, path)
			}
		}
	}
	return out
}

// On real stripped Go executables (built here for both architectures, and
// those of this machine), fromPclntab finds what debug/gosym finds: the
// entry and end of crypto/tls's functions where they are, and of a sample
// of the others.
func TestPclntabMatchesGosym(t *testing.T) {
	bins := []string{
		buildFor(t, "amd64", tlsProgram, "-ldflags=-s -w"),
		buildFor(t, "arm64", tlsProgram, "-ldflags=-s -w"),
	}
	others := strippedGoExecutables(24<<20, 8)
	t.Logf("stripped Go executables on this machine: %v", others)
	for _, bin := range append(bins, others...) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			f, err := elf.Open(bin)
			require.NoError(t, err)
			defer f.Close()
			data, err := f.Section(".gopclntab").Data()
			require.NoError(t, err)
			tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, gosymText(t, f)))
			require.NoError(t, err)
			require.NotEmpty(t, tab.Funcs)
			var names []string
			for _, n := range []string{WriteSym, ReadSym, CloseSym} {
				if tab.LookupFunc(n) != nil {
					names = append(names, n)
				}
			}
			if slices.Contains(bins, bin) {
				require.Len(t, names, 3, "crypto/tls in %s", bin)
			}
			// A sample across the table (debug/gosym's LookupFunc finds
			// the first of a name: those that are their name's first),
			// of names not in the table more than maxNameCopies times
			// (the same name, or the end of others: Go writes one copy of
			// a name per symbol, and generic instantiations' shapes
			// share theirs, "type..eq.[...]string" 13 times in a Go 1.19
			// executable).
			step := max(1, len(tab.Funcs)/64)
			for i := 0; i < len(tab.Funcs); i += step {
				n := tab.Funcs[i].Name
				if tab.LookupFunc(n) == &tab.Funcs[i] && !slices.Contains(names, n) && bytes.Count(data, append([]byte(n), 0)) <= maxNameCopies {
					names = append(names, n)
				}
			}
			got, err := fromPclntab(f, Dense(1<<62), names)
			require.NoError(t, err)
			assert.Equal(t, gosymLookup(t, f, names), got)
			t.Logf("%d functions compared of %d, table of %d bytes, magic %#x", len(names), len(tab.Funcs), len(data), binary.LittleEndian.Uint32(data))
		})
	}
}

// largeStripped is a large Go executable with crypto/tls, stripped (its
// .symtab removed by objcopy), and the original: the collector
// (OTELCOL_SEQ_BIN, or bin/otelcol-seq of the repository: `make build`)
// where there is one, else the go command running this test.
func largeStripped(t *testing.T) (strippedBin, orig string) {
	t.Helper()
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Fatalf("objcopy is missing to strip an executable (%v): apt-get install binutils, or make deps", err)
	}
	orig = os.Getenv("OTELCOL_SEQ_BIN")
	for dir, _ := filepath.Abs("."); orig == "" && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "bin", "otelcol-seq")); err == nil {
			orig = filepath.Join(dir, "bin", "otelcol-seq")
		}
	}
	if orig == "" {
		orig = filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // SA1019: the toolchain that built this test, on this machine
	}
	strippedBin = filepath.Join(t.TempDir(), "stripped")
	out, err := exec.Command(objcopy, "--strip-all", orig, strippedBin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strippedBin, orig
}

// Looking a large stripped executable's functions up holds its .gopclntab
// no more than a small one's: a few hundred KiB allocated besides the
// chunk of its name table, where debug/gosym allocated the table and a
// Func per function (tens of MiB for the collector's table of 40 MiB).
// And it finds what debug/gosym finds, and the probes that the
// executable before stripping gives (from its .symtab where it has one:
// the same but for the sizes, up to the next function there).
func TestPclntabMemory(t *testing.T) {
	bin, orig := largeStripped(t)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	require.Nil(t, f.SectionByType(elf.SHT_SYMTAB))
	pclnSize := f.Section(".gopclntab").Size

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := Find(bin)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.True(t, p.Pclntab)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%s stripped: .gopclntab of %d bytes, %d bytes allocated by Find", orig, pclnSize, allocated)
	assert.Less(t, allocated, uint64(2*maxChunk), "allocated")
	if strings.HasSuffix(orig, "otelcol-seq") {
		assert.Greater(t, pclnSize, uint64(16<<20), "the collector's table")
	}

	got := []Func{p.Write, p.Read, p.Close}
	var names []string
	for _, fn := range got {
		names = append(names, fn.Name)
	}
	for i, g := range gosymLookup(t, f, names) {
		assert.Equal(t, g.Addr, got[i].Addr, g.Name)
		assert.Equal(t, g.Size, got[i].Size, g.Name)
	}
	want, err := Find(orig)
	require.NoError(t, err)
	for i, fn := range []Func{want.Write, want.Read, want.Close} {
		g := got[i]
		assert.GreaterOrEqual(t, g.Size, fn.Size, fn.Name)
		assert.Less(t, g.Size, fn.Size+64, fn.Name)
		g.Size = fn.Size
		assert.Equal(t, fn, g)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// A .gopclntab of 1 MiB whose functions' funcoffs alternate between two
// records 440 KiB apart (the records follow each other in the order of
// the function table in every real one): each function's record is out of
// the window over the records, read again (256 KiB) for it. That read
// 639 MiB (MaxFileRead) of the file of 1 MiB, 14 ms of copying in memory,
// 45 to 75 ms from a file, more than the collector's own table of 46 MB
// costs: refused once the window has read the records' bytes and a window
// more.
func TestPclntabWindowRereads(t *testing.T) {
	le := binary.LittleEndian
	exe := elftest.Synthetic("go1.22.0")
	funcs, text, end := synthFuncs(exe)
	const fillers = 20000
	all := slices.Repeat([]pclnFunc{{"f", text}}, fillers)
	b := strippedFuncs(exe, pclnGo120, append(all, funcs...), text, end, func(tab []byte) {
		functab := tab[le.Uint64(tab[pclnHeaderAt(7):]):]
		recs := [2]uint32{le.Uint32(functab[4:]), le.Uint32(functab[(fillers+1)*4:])}
		for i := range fillers {
			le.PutUint32(functab[(2*i+1)*4:], recs[i%2])
		}
	})
	r := &countingReader{r: bytes.NewReader(b)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := FindReaderFor(r, int64(len(b)), "amd64")
	runtime.ReadMemStats(&after)
	t.Logf("a file of %d bytes: %d bytes read, %d allocated: %v", len(b), r.n, after.TotalAlloc-before.TotalAlloc, err)
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Less(t, r.n, 3*int64(len(b)), "read")
}

// A name table of more than a chunk (maxChunk), with crypto/tls's names
// across the end of the first chunk, at it, and in the bytes read again
// at the start of the second: each is found once, where debug/gosym
// finds it.
func TestPclntabChunkBoundary(t *testing.T) {
	exe := elftest.Synthetic("go1.22.0")
	funcs, text, end := synthFuncs(exe)
	for _, at := range []int{maxChunk - len(WriteSym) - 1, maxChunk - len(WriteSym), maxChunk - 10, maxChunk - 1, maxChunk, maxChunk + 1} {
		// A function whose name (and NUL) fills the name table up to at.
		all := append([]pclnFunc{{strings.Repeat("x", at-1), text}}, funcs...)
		b := strippedFuncs(exe, pclnGo120, all, text, end, nil)
		f, err := elf.NewFile(bytes.NewReader(b))
		require.NoError(t, err)
		names := []string{WriteSym, ReadSym, CloseSym, WriteSym + "r", "vendor/" + ReadSym}
		got, err := fromPclntab(f, Dense(int64(len(b))), names)
		require.NoError(t, err, at)
		assert.Equal(t, gosymLookup(t, f, names), got, at)
		t2, err := readPclnHeader(f.Section(".gopclntab"), f.Section(".text"), nil)
		require.NoError(t, err)
		offs, err := nameOffsets(f.Section(".gopclntab"), t2.names, names)
		require.NoError(t, err)
		// Write twice (itself, and the decoy), the others once (Read's
		// is also the end of vendor/'s).
		assert.Equal(t, []int{2, 2, 1, 1, 1}, []int{len(offs[0]), len(offs[1]), len(offs[2]), len(offs[3]), len(offs[4])}, at)
		assert.Equal(t, uint64(at), offs[0][0], at)
	}
}

// A stripped Go executable linked by the C linker (cgo: the C runtime's
// code first in .text, runtime.text, which the function table counts
// from, 0x100 bytes on): its functions are found where its .symtab says,
// not 0x100 bytes early, inside the function before (they were, by
// taking .text's start for runtime.text as debug/gosym does).
func TestPclntabExternalLink(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is missing to link an executable with (%v): apt-get install gcc, or make deps", err)
	}
	env := []string{"CGO_ENABLED=1", "GOARCH=" + runtime.GOARCH}
	bin := buildEnv(t, env, tlsProgram, "-ldflags=-linkmode=external")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "runtime.text" })
	require.GreaterOrEqual(t, i, 0)
	require.Greater(t, syms[i].Value, f.Section(".text").Addr, "runtime.text after .text's start")

	want, err := Find(bin)
	require.NoError(t, err)
	got, err := Find(buildEnv(t, env, tlsProgram, "-ldflags=-linkmode=external -s -w"))
	require.NoError(t, err)
	require.True(t, got.Pclntab)
	for i, w := range []Func{want.Write, want.Read, want.Close} {
		g := []Func{got.Write, got.Read, got.Close}[i]
		assert.GreaterOrEqual(t, g.Size, w.Size, w.Name)
		g.Size = w.Size
		assert.Equal(t, w, g)
	}
}
