// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"path/filepath"
	"runtime"
)

// ArchDir is the directory of the ebpf_exporter-format configs (the yaml
// next to the object) built for this machine's architecture, of a directory
// of them (testdata/ebpf_exporter, programs): dir itself for x86_64,
// dir/arm64 for arm64 (make ebpf-programs builds both).
func ArchDir(dir string) string {
	if runtime.GOARCH == "arm64" {
		return filepath.Join(dir, "arm64")
	}
	return dir
}
