// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package loader is the kernel-facing part of the ebpf_exporter receiver:
// it reads a config's compiled object (<name>.bpf.o), checks its maps
// against the config (map types, u64 values, key sizes against the
// labels), sets kaddrs, loads the programs into the kernel and attaches
// each from its section name as libbpf's auto-attach would (tracepoints,
// raw and BTF tracepoints, fentry/fexit, LSM, kprobes, uprobes, perf
// events, XDP; the table is in the ebpfexporter package documentation).
//
// It changes when the kernel interface or the attach kinds do. Only the
// ebpfexporter runner calls Load (once per config at Start) and closes the
// Object at Shutdown; its tests also ask SyscallPrefix. What is read from the maps afterwards is not here.
package loader
