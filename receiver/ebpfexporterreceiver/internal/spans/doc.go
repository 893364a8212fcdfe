// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package spans is ebpf_exporter's tracing: each tracing.spans ring buffer
// of a config is read as it fills (Reader, Linux only: a cilium/ebpf
// ringbuf reader in its own goroutines) and every record becomes a span
// by ebpf_exporter's rules (the record decoder, pure Go: the labels
// trace_id, parent_span_id, span_id, span_monotonic_timestamp_ns,
// span_duration_ns and span_name fill the span, the others become
// attributes), handed to a Sink in batches.
//
// It changes when the span mapping or the reading of ring buffers does.
// The ebpfexporter runner starts one Reader per ring buffer after loading
// a config and closes it at shutdown; the receiver names TracingScope.
package spans
