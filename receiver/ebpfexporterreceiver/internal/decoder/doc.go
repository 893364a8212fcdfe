// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package decoder is ebpf_exporter's label decoders: a Set turns the bytes
// of a map key or a span record into label strings, byte for byte as
// ebpf_exporter prints them (uint, string, hex, ksym, kstack, syscall,
// errno, cgroup, static_map, regexp, dname, inet_ip, ifname, majorminor,
// pci_*; the table is in the ebpfexporter package documentation).
//
// It is pure Go: the decoders that look things up read files and the
// cgroup tree through an Env (DefaultEnv: the host's; tests point it at
// fixtures) and load nothing into the kernel. It changes when a decoder
// does. The ebpfexporter runner (map keys, perf samples) and the spans
// package (ring buffer records) call it; the runner also keeps the
// cgroup_id_map filled with its CgroupResolver.
package decoder
