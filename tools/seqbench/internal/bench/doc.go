// Package bench is the transport benchmark behind seqbench: the sequencer,
// the BPF ring buffer and per-CPU perf buffers, loaded by the seq receiver's
// own loader (internal/sequencer) from its own BPF object and read through
// its sources, side by side under fork, exec and synthetic workloads, with
// every ticket accounted for. What is here is the measurement: workloads,
// the reading harness, order checks, report and plot.
package bench
