// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package kernelfeatures is the one place that asks the running kernel what
// it can do for the BPF loaders, and the one wording of what is missing.
//
// Each feature a loader depends on is a named *Feature: what it is, the
// Linux release that brought it, the fix a user applies where it is missing
// (a kernel version, a config option), and its probe. A probe tries the
// feature itself, never the kernel's version number (distributions backport
// features), and runs once per process: its answer is cached.
//
//	Mmapable, RingBuf, Atomics    the ring every producer shares
//	BTF, TPBTF                    kernel BTF and tp_btf programs
//	BPFLoop, TaskPtRegs           helpers the grpc receiver's programs use
//	UprobeMulti                   uprobe_multi links (the TLS uprobes)
//	SyscallTracepoints            syscalls:sys_exit_* in tracefs
//	Kprobes, Trampolines          kprobes and fentry/fexit (ebpf_exporter programs)
//
// Besides the features: the capabilities the loaders need
// (RequireCapabilities, PermissionDenied: CAP_BPF and CAP_PERFMON, or
// CAP_SYS_ADMIN), kernel properties that pick a variant rather than fail
// (ExitHasGroupDead, Realtime: PREEMPT_RT) and the BTF tracepoint lookups
// (HasTracepoint, TracepointProto).
//
// Who calls it: the loaders (internal/sequencer for the seq receiver,
// receiver/grpcreceiver/internal/capture, the ebpf_exporter receiver's
// loader) before and while they load, their tests to skip what a kernel
// lacks, and the bench tools (tools/) to record the kernel a run had. The
// bpftrace receiver asks nothing: bpftrace probes the kernel itself. Nothing
// else calls cilium/ebpf's features package or writes "this kernel lacks".
package kernelfeatures
