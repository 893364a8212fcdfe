// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// raiseNice sets every thread of this process whose nice value is above n
// to n, and returns how many it set and how many it found already at n or
// below. Linux keeps a nice value per thread, and a thread starts with its
// creator's: the threads the Go runtime starts later inherit it.
//
// Why: the CPU is shared by task (within a cgroup). A user who runs 150
// processes that exec in a loop has 150 tasks to the reader's one; at nice
// 0 the reader got too little of a 2-CPU machine to keep up, and the ring
// lapped it (65 k tickets lost in 20 s, another user's execs among them);
// at -10 none were.
func raiseNice(n int) (set, kept int, err error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		tid, perr := strconv.Atoi(e.Name())
		if perr != nil {
			continue
		}
		// The raw getpriority returns 20 - nice.
		prio, gerr := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if gerr != nil {
			continue // the thread has exited
		}
		if 20-prio <= n {
			kept++
			continue
		}
		if serr := unix.Setpriority(unix.PRIO_PROCESS, tid, n); serr != nil {
			if !errors.Is(serr, unix.ESRCH) && err == nil {
				err = serr // the same for every thread: EACCES without CAP_SYS_NICE
			}
			continue
		}
		set++
	}
	return set, kept, err
}
