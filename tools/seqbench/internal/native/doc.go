// Package native loads the benchmark's native arms (native.bpf.c): the
// process lifecycle records emitted as a user of the BPF ring buffer or of
// perf buffers writes them (reserve, fill, submit; fill, output), with
// nothing of the sequencer's, and reads them back with cilium/ebpf's
// ringbuf and perf readers. Only tools/seqbench uses it: the receiver's own
// ring buffer and perf transports are internal/sequencer's.
package native
