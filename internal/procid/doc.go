// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package procid derives the trace and span ids that name a process of this
// boot: the span id of a process lifetime, and the trace id of the traces
// that process roots. The ids depend on the identity (boot id, tgid, process
// start time in boot-clock ns) alone, so any receiver of this collector, a
// restarted collector or a second collector on the same host computes the
// same ids for the same process.
//
// It is the one definition of those ids: receiver/seqreceiver's process model
// names its process spans with it, and other receivers (the grpc receiver)
// use it to link their spans to the process span. Any package may call it.
package procid
