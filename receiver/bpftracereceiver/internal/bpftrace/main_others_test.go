// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package bpftrace

func prepareHost() {}
