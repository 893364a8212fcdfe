// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ring

import (
	"time"

	"golang.org/x/sys/unix"
)

// Sleep waits d; unlike time.Sleep it honours waits below a millisecond
// (a Pacer's back-off and linger), in a system call: for short waits only.
func Sleep(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
