// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ia32

// int80 is int 0x80 with eax = nr and rdi = di; it returns eax.
//
//go:noescape
func int80(nr, di uintptr) uintptr
