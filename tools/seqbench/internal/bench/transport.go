//go:build linux

package bench

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// Transport names what seqbench measures: one of the receiver's transports
// (sequencer.Transport), or a variant of one built from the loader's bench
// options.
type Transport string

// The transports. "ringbuf" is the ring buffer as the receiver ships it
// (batched wake-ups); the others vary one thing.
const (
	Sequencer       = Transport(sequencer.TransportSequencer)
	RingBuf         = Transport(sequencer.TransportRingBuf)
	RingBufAdaptive = RingBuf + "-adaptive" // flags 0: the kernel wakes the reader when it had caught up
	RingBufEvery    = RingBuf + "-every"    // BPF_RB_FORCE_WAKEUP on every record
	PerfBuf         = Transport(sequencer.TransportPerfBuf)
	// Hook: the sequencer's programs attached with every event filtered out
	// (an empty event mask): what the hooks alone cost the workload.
	Hook Transport = "hook"
	// Stage: programs that stage every event as the sequencer's do (seq_fill)
	// and drop it: the hooks and the staging without a transport.
	Stage Transport = "stage"
)

// Transports lists every transport seqbench knows.
var Transports = []Transport{Sequencer, RingBuf, RingBufAdaptive, RingBufEvery, PerfBuf, Hook, Stage}

// emits reports whether anything reaches the reader.
func (t Transport) emits() bool { return t != Hook && t != Stage }

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
