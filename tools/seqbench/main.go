//go:build linux

// Command seqbench puts the sequencer, the BPF ring buffer and perf buffers
// side by side under fork, exec and synthetic getpid workloads: the seq
// receiver's own loader and BPF object (internal/sequencer,
// bpf/seq/seq.bpf.c) feeding each of its transports in turn, read through
// the receiver's sources, and the ring buffer and perf buffers as their
// users write them (ringbuf-native, perfbuf-native: internal/native), every
// record accounted for. It prints a Markdown table, writes results.json,
// results.md and bench.png into -out, and exits non-zero when a row erred.
// Run it as root; see docs/benchmarks.md.
//
//	go run ./tools/seqbench -transports sequencer,ringbuf,ringbuf-native,perfbuf,perfbuf-native -workloads fork,exec,synth -cpus 1,2 -duration 5s -out bench-results
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/tools/seqbench/internal/bench"
)

func main() {
	if bench.IsWorker() {
		bench.WorkerMain()
	}
	c := bench.DefaultConfig()
	var transports, workloads, cpus string
	var bufMiB int
	flag.StringVar(&transports, "transports", join(c.Transports), "comma-separated transports: "+join(bench.Transports))
	flag.StringVar(&workloads, "workloads", join(c.Workloads), "comma-separated workloads: "+join(bench.Workloads))
	flag.StringVar(&cpus, "cpus", ints(c.CPUs), "comma-separated CPU counts: each workload runs on the first N CPUs")
	flag.DurationVar(&c.Duration, "duration", c.Duration, "how long each workload runs")
	flag.StringVar(&c.Out, "out", c.Out, "directory for results.json, results.md and bench.png (empty: none)")
	flag.IntVar(&bufMiB, "buffer-mib", c.BufferBytes>>20, "memory per transport in MiB, a power of two: the sequencer's ring, the ring buffer, all perf buffers together")
	flag.IntVar(&c.ForkPerCPU, "fork-per-cpu", c.ForkPerCPU, "stress-ng --fork instances per CPU")
	flag.IntVar(&c.ExecPerCPU, "exec-per-cpu", c.ExecPerCPU, "fork+exec /bin/true loops per CPU")
	flag.IntVar(&c.SynthPerCPU, "synth-per-cpu", c.SynthPerCPU, "getpid threads per CPU")
	flag.DurationVar(&c.Poll, "poll", c.Poll, "longest the parked reader waits for a wake-up before it looks again")
	flag.BoolVar(&c.Untraced, "untraced", c.Untraced, "also run each workload untraced, for the slowdown column")
	flag.Parse()

	c.BufferBytes = bufMiB << 20
	c.Transports = nil
	for _, s := range split(transports) {
		c.Transports = append(c.Transports, bench.Transport(s))
	}
	c.Workloads = nil
	for _, s := range split(workloads) {
		c.Workloads = append(c.Workloads, bench.Workload(s))
	}
	c.CPUs = nil
	for _, s := range split(cpus) {
		n, err := strconv.Atoi(s)
		if err != nil {
			fail(fmt.Errorf("-cpus: %q is not a number", s))
		}
		c.CPUs = append(c.CPUs, n)
	}
	c.Log = os.Stderr
	results, err := bench.Run(c)
	if len(results) > 0 {
		fmt.Print(bench.Markdown(results, c))
	}
	if err != nil {
		fail(err)
	}
	if c.Out != "" {
		fmt.Fprintf(os.Stderr, "wrote %s/results.json, results.md, bench.png\n", c.Out)
	}
	if err := bench.Failures(results); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seqbench:", err)
	os.Exit(1)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func join[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
