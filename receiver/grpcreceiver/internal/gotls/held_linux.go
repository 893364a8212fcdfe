// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package gotls

import (
	"os"

	"golang.org/x/sys/unix"
)

// HeldFile is the size of the open file f and what it really holds: bytes
// inside its size and in no hole (lseek SEEK_HOLE on f's descriptor); where
// the filesystem cannot say (EINVAL), no more bytes than its blocks
// (st_blocks*512). A filesystem that compresses holds more than its blocks,
// and says so through SEEK_HOLE.
func HeldFile(f *os.File) (int64, Held, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	size, blocks := uint64(st.Size), uint64(st.Blocks)*512
	fd := int(f.Fd())
	return st.Size, func(off, n uint64) bool {
		if off > size || n > size-off {
			return false
		}
		if n == 0 {
			return true
		}
		hole, err := unix.Seek(fd, int64(off), unix.SEEK_HOLE)
		if err != nil {
			return n <= blocks
		}
		return uint64(hole) >= off+n
	}, nil
}
