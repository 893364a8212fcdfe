// Package bench is the transport benchmark behind seqbench: the sequencer, the
// BPF ring buffer and per-CPU perf buffers fed by the same producers
// (bpf/bench.bpf.c), read side by side, under fork, exec and synthetic
// workloads, with every ticket accounted for.
package bench

//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type bench_stats -type seq_stats bench ../../../../bpf/bench.bpf.c -- -I../../../../bpf -I../../../../bpf/headers
