// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package budget is the ebpf_exporter receiver's account of what other
// processes make it keep.
//
// What the receiver keeps between collections is chosen by other
// processes: the keys in its maps (comm strings, pids, cgroup ids,
// addresses: any local user can churn them by spawning processes with ever
// new names) and the label sets of perf_event_array samples. Every such
// structure is charged to one budget per Exporter when it is made and
// credited when it goes; what does not fit is left out and counted by
// reason.
//
// One Budget serves all of an Exporter's configs: the runner's label
// caches and perf_event_array counters charge and credit it, the span
// readers count their drops in it, and the receiver reports Usage as its
// own telemetry (the Drop* reasons are its attribute values). Pure Go; it
// changes when the limits do.
package budget
