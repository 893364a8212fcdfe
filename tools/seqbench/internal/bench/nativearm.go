//go:build linux

package bench

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/tools/seqbench/internal/native"
)

// nativeArm is a native arm (package native): its records carry no
// ticket, so each is one issued record, and they are checked in arrival
// order (there is no reorder stage).
type nativeArm struct {
	p  *native.Producer
	nt native.Transport
	c  Consumed
	ev event.Event
}

func openNative(c Config, nt native.Transport, w Workload, tgid uint32) (arm, error) {
	o := native.Options{Transport: nt, BufferBytes: c.BufferBytes}
	if w == Synth {
		o.Synth = &sequencer.SynthOptions{TargetTGID: tgid, SyscallNR: unix.SYS_GETPID}
	}
	p, err := native.Open(o)
	if err != nil {
		return nil, err
	}
	a := &nativeArm{p: p, nt: nt, c: Consumed{Raw: NewOrder(w != Synth), LostBy: map[string]uint64{}}}
	a.c.Ordered = a.c.Raw
	return a, nil
}

func (a *nativeArm) start() func() (*Consumed, error) {
	return onThread(&a.c, func(stop <-chan struct{}) error {
		return a.p.Consume(stop, func(data []byte) { a.c.deliver(0, 1, event.Trim(data), &a.ev) })
	}, func() { _ = a.p.Interrupt() })
}

func (a *nativeArm) detach() error                       { return a.p.Detach() }
func (a *nativeArm) runStats() (bpfload.RunStats, error) { return a.p.RunStats() }
func (a *nativeArm) close()                              { a.p.Close() }

// account: every record a program tried to emit was delivered, or its
// reservation or output failed (the programs count both). The perf
// reader's lost samples are the -ENOSPC failures again, as the kernel
// reports them (late: with the CPU's next record that fits, so never for
// the last ones), so they are not added: they can only be fewer.
func (a *nativeArm) account(res *Result, cons *Consumed) error {
	kc, err := a.p.Counters()
	if err != nil {
		return err
	}
	res.Issued = kc.Attempted
	res.KernelEvents = kc.Attempted
	res.Delivered = cons.Records
	res.Lost = kc.Failed
	res.KernelFailed = kc.Failed
	res.LostBy = map[string]uint64{}
	reason := ring.ReserveFailed
	if a.nt == native.PerfBuf {
		reason = ring.OutputFailed
		res.FailedFull, res.FailedOther = kc.FailedNoSpc, kc.Failed-kc.FailedNoSpc
		res.PerfLost = a.p.LostSamples()
		if res.PerfLost > kc.FailedNoSpc {
			res.Error = fmt.Sprintf("the perf reader was told of %d lost samples, the programs counted %d -ENOSPC outputs", res.PerfLost, kc.FailedNoSpc)
		}
	}
	if kc.Failed > 0 {
		res.LostBy[reason.String()] = kc.Failed
	}
	return nil
}
