// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package cgroups

import "io/fs"

func newHandleLookup(string) func(id uint64) (string, bool) { return nil }

// inode: cgroup ids exist on Linux only.
func inode(fs.FileInfo) (uint64, bool) { return 0, false }

// initialCgroupNS: cgroup namespaces exist on Linux only.
var initialCgroupNS = func() bool { return false }
