// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package ebpfexporter

func errnoName(uint64) string { return "" }

type cgroupResolver struct{}

func newCgroupResolver(string) *cgroupResolver { return &cgroupResolver{} }

func (*cgroupResolver) resolve(uint64) string { return "" }

func (*cgroupResolver) all() map[uint64]string { return nil }
