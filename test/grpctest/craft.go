// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpctest

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
)

// Hostile executables for tests of what parses other processes' files (a
// symbol size of 1<<62 made the Go TLS probe finder panic); the programs
// still run as before.

// PatchSymbolSize sets the st_size of the .symtab entry named name in the
// ELF image b, in place.
func PatchSymbolSize(b []byte, name string, size uint64) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer f.Close()
	symtab := f.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil {
		return elf.ErrNoSymbols
	}
	syms, err := f.Symbols() // entry i+1 of .symtab (the null symbol skipped)
	if err != nil {
		return err
	}
	for i, s := range syms {
		if s.Name == name {
			at := symtab.Offset + uint64(i+1)*elf.Sym64Size + 16
			f.ByteOrder.PutUint64(b[at:], size)
			return nil
		}
	}
	return fmt.Errorf("%s: %w", name, errors.New("no such symbol"))
}

// PatchFileSymbolSize patches the executable at path (PatchSymbolSize),
// keeping its mode.
func PatchFileSymbolSize(path, name string, size uint64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := PatchSymbolSize(b, name, size); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o755)
}
