// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpctest

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// SetSymbolSize rewrites, in place, the st_size of the function symbol name
// in the .symtab of the 64-bit ELF file at path: a hostile executable for
// tests of what parses other processes' files (a size of 1<<62 made the
// Go TLS probe finder panic). The program still runs as before.
func SetSymbolSize(path, name string, size uint64) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	st := f.SectionByType(elf.SHT_SYMTAB)
	syms, serr := f.Symbols()
	order := f.ByteOrder
	f.Close()
	if st == nil || serr != nil {
		return fmt.Errorf("%s: no symbol table (%v)", path, serr)
	}
	for i, s := range syms {
		if s.Name != name || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		// Symbols() leaves out the null symbol at index 0; st_size is at +16.
		off := int64(st.Offset) + int64(i+1)*elf.Sym64Size + 16
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = w.WriteAt(binary.LittleEndian.AppendUint64(nil, size), off)
		if order != binary.LittleEndian {
			err = fmt.Errorf("%s: big-endian ELF", path)
		}
		return errors.Join(err, w.Close())
	}
	return fmt.Errorf("%s: no function symbol %s", path, name)
}
