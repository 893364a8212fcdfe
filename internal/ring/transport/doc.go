// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package transport holds the readers of the ring's transports: how records
// travel from the BPF producers (bpf/ring/) to a receiver, each read as a
// [Source] that hands records out in ticket order with every run of lost
// tickets as a gap in its place.
//
//   - the slot ring ([NewSlots]): internal/ring's [ring.Reader] over the
//     mapped slots, woken by the ring's doorbell;
//   - the BPF ring buffer ([NewRingBuf]) and per-CPU perf buffers
//     ([NewPerf]): records output whole, each after its first ticket
//     (struct ring_tx_hdr) and put back in ticket order, or numbered by the
//     reader in ring order where the producers cannot learn their tickets
//     (RING_NO_FETCH).
//
// The loaders (internal/sequencer for the seq receiver, the grpc receiver's
// capture) map the BPF maps and build the reader of the transport they
// loaded; the receivers read it. The ring protocol itself, pure Go, is
// internal/ring; this package reads kernel buffers (cilium/ebpf's ringbuf
// and perf readers) and builds on Linux only, but for [Source] and the slot
// ring's reader.
package transport
