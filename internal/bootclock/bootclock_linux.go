// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package bootclock reads the boot clock and the boot id: CLOCK_BOOTTIME is
// the clock of bpf_ktime_get_boot_ns, which stamps every record the BPF
// programs write, and the boot id with a pid and a start time names a
// process (internal/procid). Shared by the seq and grpc receivers.
package bootclock

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// idPath is the kernel's boot id, new at every boot.
const idPath = "/proc/sys/kernel/random/boot_id"

// Now is CLOCK_BOOTTIME in nanoseconds, the clock of bpf_ktime_get_boot_ns.
func Now() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return uint64(ts.Nano())
}

// Offset is the wall clock now minus the boot clock, in nanoseconds: wall
// time = boot time + Offset. It is 0 when the boot clock cannot be read.
func Offset(now time.Time) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return now.UnixNano() - ts.Nano()
}

// ID is this boot's id (/proc/sys/kernel/random/boot_id, without the
// newline). An error is the file's (*fs.PathError, naming it).
func ID() (string, error) {
	b, err := os.ReadFile(idPath)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
