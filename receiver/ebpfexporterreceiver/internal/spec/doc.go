// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package spec is ebpf_exporter's config format: the <name>.yaml schema
// (ProgramConfig and its types, field for field and with ebpf_exporter's
// YAML keys), reading and validating a user's file (LoadProgramConfig,
// ParseProgramConfig, ConfigError naming the file and the field), and what
// the format means where more than one package reads it: a histogram's
// buckets (HistogramLayout) and the metrics that read only key 0
// (OnlyKeyZero).
//
// It is pure Go and touches no kernel: it changes when ebpf_exporter's
// format does. The loader, the decoders, the span readers and the
// ebpfexporter runner read its types; the rules it enforces are listed in
// the ebpfexporter package documentation ("Config schema").
package spec
