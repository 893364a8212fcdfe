// Package sequencer loads the sequencer's BPF programs, attaches them to the
// process lifecycle tracepoints and maps the ring into this process. It is the
// only package of the receiver that talks to the kernel; the ring protocol,
// the decoder and the pdata mapping are pure Go next to it.
package sequencer

//go:generate go tool bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type seq_stats -type seq_ctl -type seq_slot -type seq_tx_stats -type seq_event_type seq ../../bpf/seq.bpf.c -- -I../../bpf -I../../bpf/headers
