// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package pdatamap

import semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

// Event names (LogRecord.EventName).
const (
	EventNameFork        = "process.fork"
	EventNameExec        = "process.exec"
	EventNameExit        = "process.exit"
	EventNameThreadStart = "thread.start"
	EventNameThreadExit  = "thread.exit"
	EventNameSynth       = "seq.synth" // the bench-only synthetic producer
	EventNameLost        = "seq.lost"  // a gap in the tickets
	EventNameUnknown     = "seq.unknown"
)

// Attribute keys. Semantic-convention keys come from semconv; the others are
// this receiver's own, under "seq.", except process.group.id, which semconv
// does not define (yet).
const (
	// AttrSeqNumber is the event's ticket: its place in the global order.
	// On seq.lost, the first lost ticket.
	AttrSeqNumber = "seq.number"
	// AttrSeqTickets is how many tickets (ring slots) a record used, set by
	// the receiver only when more than one: the next seq.number is
	// seq.number + seq.tickets.
	AttrSeqTickets = "seq.tickets"

	// AttrServiceName is the resource attribute the receiver sets on its logs and spans.
	AttrServiceName = string(semconv.ServiceNameKey)

	AttrProcessPID            = string(semconv.ProcessPIDKey)            // int; for a fork, the child
	AttrProcessParentPID      = string(semconv.ProcessParentPIDKey)      // int; for a fork, the forking process
	AttrProcessExecutableName = string(semconv.ProcessExecutableNameKey) // string: comm
	AttrProcessExecutablePath = string(semconv.ProcessExecutablePathKey) // string: exec filename
	AttrProcessCommandArgs    = string(semconv.ProcessCommandArgsKey)    // []string: exec argv, argv[0] included
	AttrProcessExitCode       = string(semconv.ProcessExitCodeKey)       // int; 128+signal when killed by one
	AttrProcessUserID         = string(semconv.ProcessUserIDKey)         // int
	AttrProcessGroupID        = "process.group.id"                       // int: the gid (not in semconv)
	AttrProcessCreationTime   = string(semconv.ProcessCreationTimeKey)   // string, RFC 3339, UTC
	AttrThreadID              = string(semconv.ThreadIDKey)              // int
	AttrProcessLinuxCgroup    = string(semconv.ProcessLinuxCgroupKey)    // string: "0::" + the cgroup v2 path, as /proc/PID/cgroup writes it

	// Resource attributes of the processes in a container or a pod.
	AttrContainerID          = string(semconv.ContainerIDKey)          // string: 64 hex digits
	AttrContainerRuntimeName = string(semconv.ContainerRuntimeNameKey) // string: docker, containerd, cri-o, podman
	AttrK8SPodUID            = string(semconv.K8SPodUIDKey)            // string, with dashes
	// AttrContainerDelegatedID is the id of a container in a user's
	// delegated cgroup subtree (rootless podman, ...), which that user
	// chose: never container.id, so nothing associates it with another
	// container or pod.
	AttrContainerDelegatedID = "seq.container.delegated_id"

	AttrParentCreationTime = "seq.parent.creation.time" // string, RFC 3339, UTC; process.fork only: the parent's start, which with process.parent_pid names it
	AttrCgroupID           = "seq.cgroup.id"            // int: cgroup v2 id
	AttrCPU                = "seq.cpu"                  // int: the CPU that saw the event
	AttrExitSignal         = "seq.exit.signal"          // string, e.g. SIGKILL; only when killed by a signal
	AttrExitCoreDumped     = "seq.exit.core_dumped"     // bool; only when true
	AttrArgsTruncated      = "seq.args.truncated"       // bool; only when true
	AttrArgsDropped        = "seq.args.dropped"         // bool; only when true: a span's exec event lost its argv (per-process or memory limit)
	AttrArgsUnreadable     = "seq.args.unreadable"      // bool; only when true
	AttrArgsRedacted       = "seq.args.redacted"        // bool; only when true: a secret in argv was replaced by REDACTED
	AttrFilenameTruncated  = "seq.filename.truncated"   // bool; only when true
	AttrExecOldTID         = "seq.exec.old_tid"         // int; only when a thread other than the leader called execve
	AttrLostCount          = "seq.lost.count"           // int
	AttrLostReason         = "seq.lost.reason"          // string
)
