// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package bpftracereceiver is the `bpftrace` receiver: it runs users'
// unmodified bpftrace scripts, each as its own supervised `bpftrace -f json`
// process; printed lines become log records and the maps listed become
// metrics. The supervisor, parser and mapping live in internal/bpftrace.
package bpftracereceiver
