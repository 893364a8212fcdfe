// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build amd64

// Package ia32 makes 32-bit (ia32) system calls from a 64-bit process with
// int 0x80, for tests of BPF programs that must not take them for 64-bit
// calls of the same number. Test code only. A kernel without ia32
// emulation kills the caller (SIGSEGV): call it in a child process.
package ia32

// Getpid is the ia32 getpid (20, writev's number on x86-64) with rdi set to
// di (a 64-bit call's first argument; the ia32 call ignores it).
func Getpid(di uintptr) uintptr {
	return int80(20, di)
}
