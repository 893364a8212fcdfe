// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package sequencer

// Transport names how records travel from the BPF producers to the reader.
type Transport string

// The transports. Every one carries the same records with the same tickets.
const (
	TransportAuto      Transport = "auto"      // the sequencer where it loads, else the ring buffer, else perf
	TransportSequencer Transport = "sequencer" // the sequencer ring (BPF atomics, Linux 5.12+)
	TransportRingBuf   Transport = "ringbuf"   // the BPF ring buffer (Linux 5.8+), reordered by ticket
	TransportPerfBuf   Transport = "perfbuf"   // per-CPU perf buffers, reordered by ticket
)

// Transports lists the accepted transport names.
var Transports = []Transport{TransportSequencer, TransportRingBuf, TransportPerfBuf, TransportAuto}
