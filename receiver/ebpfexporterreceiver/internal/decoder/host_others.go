// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package decoder

func errnoName(uint64) string { return "" }

// CgroupResolver resolves nothing off Linux.
type CgroupResolver struct{}

// NewCgroupResolver returns a resolver that knows no cgroup.
func NewCgroupResolver(string) *CgroupResolver { return &CgroupResolver{} }

func (*CgroupResolver) resolve(uint64) string { return "" }

// All returns no cgroup.
func (*CgroupResolver) All() map[uint64]string { return nil }
