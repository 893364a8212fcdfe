// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !race

package h2

const raceEnabled = false
