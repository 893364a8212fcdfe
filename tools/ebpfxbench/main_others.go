//go:build !linux

// Command ebpfxbench puts the ebpf_exporter receiver beside ebpf_exporter; it needs Linux.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "ebpfxbench: BPF programs need Linux")
	os.Exit(1)
}
