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
}
