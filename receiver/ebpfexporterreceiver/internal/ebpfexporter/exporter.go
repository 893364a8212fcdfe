// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spans"
)

// Stats are the exporter's own counters, for the receiver's telemetry.
type Stats struct {
	// ConfigsLoaded is the number of configs loaded and attached.
	ConfigsLoaded int
	// ConfigsFailed is the number of configs that failed to load or attach
	// (see Exporter.Failures for why).
	ConfigsFailed int
	// DecoderErrors counts metrics skipped in a collection because a key
	// failed to decode, by config (ebpf_exporter_decoder_errors_total).
	DecoderErrors map[string]uint64
	// Collections is the number of collections done.
	Collections uint64
	// PerfEventsLost counts perf_event_array samples the kernel dropped.
	PerfEventsLost uint64
	// Spans are the tracing.spans counters, by config (configs with span
	// ring buffers being read only). Their decode errors are also in
	// DecoderErrors, as ebpf_exporter counts them.
	Spans map[string]spans.Counts
	// Series and Memory are what the budget holds now: decoded map keys
	// and perf_event_array series, and the bytes they are charged.
	Series, Memory int64
	// Limits are the budget's: max_series, max_memory, max_queued_spans.
	MaxSeries, MaxMemory, MaxQueuedSpans int64
	// Dropped counts what was left out, by config and reason (DropMaxSeries,
	// DropMaxMemory for map keys at each collection and perf samples;
	// DropQueueFull, DropRefused for spans).
	Dropped map[budget.DropKey]uint64
	// QueuedSpans is the spans waiting for the traces pipeline now.
	QueuedSpans int64
}
