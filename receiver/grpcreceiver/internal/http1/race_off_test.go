// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !race

package http1

const raceEnabled = false
