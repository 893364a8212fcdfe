// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package seqreceiver is the `seq` receiver: Linux process lifecycle events
// (fork, exec, exit) captured by eBPF programs that write into a sequencer
// ring, read in ticket order and emitted as OTLP log records. Every ticket
// that does not reach the pipeline is counted and reported as a `seq.lost`
// record where the gap is.
package seqreceiver
