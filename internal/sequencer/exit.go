// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package sequencer

// ExitTracking is how the producers tell a process exit from a thread exit
// at sched_process_exit. Both give the same records: exactly one process
// exit per process, with the exit code wait() reports.
type ExitTracking string

const (
	// ExitAuto uses group_dead where the kernel passes it, else the live count.
	ExitAuto ExitTracking = ""
	// ExitGroupDead reads the tracepoint's group_dead argument (Linux 6.16+).
	ExitGroupDead ExitTracking = "group_dead"
	// ExitLiveCount reads the thread group's live count, which do_exit has
	// already decremented at the tracepoint; two threads ending together
	// may both see it at zero, so the one process exit is claimed in a map
	// keyed by the process's identity (every kernel with BTF and atomics).
	ExitLiveCount ExitTracking = "live_count"
)
