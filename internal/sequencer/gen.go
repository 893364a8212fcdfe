// Package sequencer loads the sequencer's BPF programs (bpf/seq/seq.bpf.c),
// attaches them to the process lifecycle tracepoints, maps the ring into
// this process, whatever the transport, and hands out the transport's reader
// (NewSource; the readers are internal/ring/transport's): the seq receiver
// and the benchmark (tools/seqbench) both read through it. It is the only
// package that loads those programs; the ring protocol (internal/ring), the
// decoder (internal/event) and the pdata mapping are pure Go.
package sequencer

//go:generate go tool bpf2go -tags linux -cc clang-14 -cflags "-O2 -g -Wall -Werror" -target bpfel -type ring_stats -type ring_ctl -type ring_slot -type seq_tx_stats -type seq_event_type seq ../../bpf/seq/seq.bpf.c -- -I../../bpf -I../../bpf/headers

// The same source without BPF atomic fetch (RING_NO_FETCH): the ring buffer
// producers for kernels before Linux 5.12, whose tickets the reader numbers.
//go:generate go tool bpf2go -tags linux -cc clang-14 -cflags "-O2 -g -Wall -Werror -DRING_NO_FETCH" -target bpfel -no-global-types seqnf ../../bpf/seq/seq.bpf.c -- -I../../bpf -I../../bpf/headers
