//go:build linux

package bench

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/tools/seqbench/internal/native"
)

// Transport names what seqbench measures: one of the receiver's transports
// (sequencer.Transport), a variant of one built from the loader's bench
// options, or a native arm (package native).
type Transport string

// The transports. "ringbuf" and "perfbuf" are the receiver's ring buffer
// and perf transports as it ships them (the sequencer's programs: a ticket,
// staging, a copy out; batched wake-ups; read through its reorder stage);
// "ringbuf-adaptive" and "ringbuf-every" vary one thing. The native arms are
// the same records emitted as a user of the ring buffer or of perf buffers
// writes them, with no ticket, read with cilium/ebpf's readers.
const (
	Sequencer       = Transport(sequencer.TransportSequencer)
	RingBuf         = Transport(sequencer.TransportRingBuf)
	RingBufAdaptive = RingBuf + "-adaptive" // flags 0: the kernel wakes the reader when it had caught up
	RingBufEvery    = RingBuf + "-every"    // BPF_RB_FORCE_WAKEUP on every record
	PerfBuf         = Transport(sequencer.TransportPerfBuf)
	RingBufNative   = RingBuf + "-native" // reserve, fill, submit (flags 0)
	PerfBufNative   = PerfBuf + "-native" // fill a per-CPU record, output
	// Hook: the sequencer's programs attached with every event filtered out
	// (an empty event mask): what the hooks alone cost the workload.
	Hook Transport = "hook"
	// Stage: programs that stage every event as the sequencer's do (seq_fill)
	// and drop it: the hooks and the staging without a transport.
	Stage Transport = "stage"
)

// Transports lists every transport seqbench knows.
var Transports = []Transport{Sequencer, RingBuf, RingBufAdaptive, RingBufEvery, PerfBuf, RingBufNative, PerfBufNative, Hook, Stage}

// emits reports whether anything reaches the reader.
func (t Transport) emits() bool { return t != Hook && t != Stage }

// native is the buffer of a native arm; ok is false for the others.
func (t Transport) native() (nt native.Transport, ok bool) {
	switch t {
	case RingBufNative:
		return native.RingBuf, true
	case PerfBufNative:
		return native.PerfBuf, true
	}
	return "", false
}

// ticketed reports whether t's records carry tickets: the native arms' do not.
func (t Transport) ticketed() bool {
	_, nat := t.native()
	return t.emits() && !nat
}

// reordered reports whether the records pass the reader's reorder stage.
func (t Transport) reordered() bool {
	switch t {
	case RingBuf, RingBufAdaptive, RingBufEvery, PerfBuf:
		return true
	}
	return false
}

// options are the loader's options for t under workload w: buffers of
// bufferBytes (the sequencer's ring, the ring buffer, the perf buffers
// together), exec records without argv (one slot each), and for the
// synthetic workload the getpid producer on process tgid.
func (t Transport) options(w Workload, tgid uint32, bufferBytes int) (sequencer.Options, error) {
	o := sequencer.Options{Transport: sequencer.Transport(t), RingSlots: bufferBytes / ring.SlotSize, MaxArgs: 0}
	switch t {
	case Sequencer, RingBuf, PerfBuf:
	case RingBufAdaptive:
		o.Transport, o.RingBufWakeup = sequencer.TransportRingBuf, sequencer.RingBufWakeupAdaptive
	case RingBufEvery:
		o.Transport, o.RingBufWakeup = sequencer.TransportRingBuf, sequencer.RingBufWakeupEvery
	case Hook:
		o.Transport = sequencer.TransportSequencer
	case Stage:
		o.Transport, o.StageOnly = sequencer.TransportSequencer, true
	default:
		return o, fmt.Errorf("unknown transport %q", t)
	}
	if w == Synth {
		o.Synth = &sequencer.SynthOptions{TargetTGID: tgid, SyscallNR: unix.SYS_GETPID}
		o.Events = []event.Type{event.Synth}
	} else {
		o.Events = []event.Type{event.Fork, event.Exec, event.Exit}
	}
	if t == Hook {
		o.Events = nil
	}
	return o, nil
}
