// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package ringmap maps a ring's BPF maps (bpf/ring/producer.h) into this
// process and waits on its doorbell: the part of reading a ring that touches
// the kernel, shared by every loader of a ring producer (internal/sequencer
// for the seq receiver, the grpc receiver's capture). [Map] maps a loaded
// collection's whole ring; [Mmap] and [NewDoorbell] are its parts. The ring
// protocol itself is internal/ring, pure Go; the readers built on the mapped
// ring are internal/ring/transport. Linux only.
package ringmap
