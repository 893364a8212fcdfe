//go:build !linux

// Command seqbench benchmarks the seq receiver's BPF transports; it needs Linux.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "seqbench: BPF transports need Linux")
	os.Exit(1)
}
