// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package multiarch names the Debian multiarch tuple of the architecture
// the collector runs on: the directory of its shared libraries under /lib
// and /usr/lib (libssl, the libraries an ebpf_exporter uprobe names).
package multiarch

import "runtime"

// tuples are Debian's for the GOARCHes the collector builds for and those
// ebpf_exporter's configs may name.
var tuples = map[string]string{
	"amd64":   "x86_64-linux-gnu",
	"arm64":   "aarch64-linux-gnu",
	"arm":     "arm-linux-gnueabihf",
	"s390x":   "s390x-linux-gnu",
	"ppc64le": "powerpc64le-linux-gnu",
	"riscv64": "riscv64-linux-gnu",
}

// Tuple is the multiarch tuple of runtime.GOARCH ("x86_64-linux-gnu",
// "aarch64-linux-gnu", ...), "" for an architecture with none known.
func Tuple() string { return tuples[runtime.GOARCH] }

// LibDirs are /lib/<tuple> and /usr/lib/<tuple>, nil without a tuple.
func LibDirs() []string {
	t := Tuple()
	if t == "" {
		return nil
	}
	return []string{"/lib/" + t, "/usr/lib/" + t}
}
