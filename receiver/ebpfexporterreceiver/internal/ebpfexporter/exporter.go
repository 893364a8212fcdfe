// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

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
	Spans map[string]SpanStats
	// Series and Memory are what the budget holds now: decoded map keys
	// and perf_event_array series, and the bytes they are charged.
	Series, Memory int64
	// Limits are the budget's: max_series, max_memory, max_queued_spans.
	MaxSeries, MaxMemory, MaxQueuedSpans int64
	// Dropped counts what was left out, by config and reason (DropMaxSeries,
	// DropMaxMemory for map keys at each collection and perf samples;
	// DropQueueFull, DropRefused for spans).
	Dropped map[DropKey]uint64
	// QueuedSpans is the spans waiting for the traces pipeline now.
	QueuedSpans int64
}

// SpanStats are one config's span ring buffer counters.
type SpanStats struct {
	// Records is the number of ring buffer records read.
	Records uint64
	// Spans is the number of spans the sink accepted.
	Spans uint64
	// DecodeErrors counts records that did not decode to a span.
	DecodeErrors uint64
	// Dropped counts spans the sink refused or the queue had no room for.
	Dropped uint64
}
