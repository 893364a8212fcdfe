// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package ebpfexporterreceiver is the `ebpf_exporter` receiver: it loads
// unmodified Cloudflare ebpf_exporter programs (<name>.yaml next to
// <name>.bpf.o) and reads their maps as OTel metrics every collection
// interval, through the collector's scraperhelper; in a traces pipeline
// it also turns their tracing.spans ring buffers into spans. One receiver
// config is loaded once for both pipelines (internal/sharedcomponent). The
// loading, attaching, decoding, mapping and span reading live in
// internal/ebpfexporter.
package ebpfexporterreceiver
