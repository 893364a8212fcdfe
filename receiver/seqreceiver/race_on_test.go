// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build race

package seqreceiver

// raceEnabled: the race detector slows the reader about twentyfold.
const raceEnabled = true
