// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !amd64 && !arm64

package decoder

// syscallNames is only filled in for amd64 and arm64; elsewhere every number decodes
// to "unknown_syscall:<n>".
var syscallNames = map[uint64]string{}
