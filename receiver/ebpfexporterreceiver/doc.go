// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package ebpfexporterreceiver is the `ebpf_exporter` receiver: it loads
// unmodified Cloudflare ebpf_exporter programs (<name>.yaml next to
// <name>.bpf.o) and reads their maps as OTel metrics every collection
// interval, through the collector's scraperhelper. The loading, attaching,
// decoding and mapping live in internal/ebpfexporter.
package ebpfexporterreceiver
