//go:build linux

package native

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// Transport is the buffer a native arm emits into.
type Transport string

// The transports.
const (
	RingBuf Transport = "ringbuf" // one BPF ring buffer: reserve, fill, submit
	PerfBuf Transport = "perfbuf" // per-CPU perf buffers: fill a scratch record, output
)

// Options say what the programs emit and into how much memory.
type Options struct {
	Transport Transport
	// BufferBytes is the ring buffer's size (a power of two), or what the
	// perf buffers share out: a power-of-two number of pages per CPU.
	BufferBytes int
	// Synth attaches only the synthetic producer; nil attaches the
	// process lifecycle programs.
	Synth *sequencer.SynthOptions
}

// Counters are the programs' per-CPU counters, summed.
type Counters struct {
	Attempted   uint64 // records the programs tried to emit
	Failed      uint64 // ... whose reservation or output failed
	FailedNoSpc uint64 // perf: ... with -ENOSPC (the kernel counts these lost too)
}

// Producer is a native arm's programs, attached, and its reader.
type Producer struct {
	transport Transport
	coll      *ebpf.Collection
	progs     []*ebpf.Program
	links     []link.Link
	rb        *ringbuf.Reader
	pr        *perf.Reader
	rbRec     ringbuf.Record
	pRec      perf.Record
	lost      uint64 // perf: samples the kernel reported lost
}

// Open loads the arm's programs and maps, opens its reader and attaches
// the programs. On any error nothing is left loaded.
func Open(o Options) (_ *Producer, err error) {
	spec, err := loadNative()
	if err != nil {
		return nil, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	prefix, names, err := o.programs()
	if err != nil {
		return nil, err
	}
	p := &Producer{transport: o.Transport}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	synth := sequencer.SynthOptions{SyscallNR: -1}
	if o.Synth != nil {
		synth = *o.Synth
	}
	if err := spec.Variables["native_synth_tgid"].Set(synth.TargetTGID); err != nil {
		return nil, err
	}
	if err := spec.Variables["native_synth_nr"].Set(synth.SyscallNR); err != nil {
		return nil, err
	}
	// Only the programs attached, and the maps they use, are loaded.
	for name := range spec.Programs {
		if !slices.Contains(names, strings.TrimPrefix(name, prefix)) || !strings.HasPrefix(name, prefix) {
			delete(spec.Programs, name)
		}
	}
	if o.Transport == RingBuf {
		delete(spec.Maps, "native_perf")
		delete(spec.Maps, "native_scratch")
		spec.Maps["native_rb"].MaxEntries = uint32(max(o.BufferBytes, os.Getpagesize()))
	} else {
		delete(spec.Maps, "native_rb")
	}
	// Kernels with memcg accounting (5.11+) need no memlock rlimit.
	_ = rlimit.RemoveMemlock()
	if p.coll, err = bpfload.NewCollection(spec); err != nil {
		return nil, err
	}
	for _, n := range names {
		p.progs = append(p.progs, p.coll.Programs[prefix+n])
	}
	if o.Transport == RingBuf {
		if p.rb, err = ringbuf.NewReader(p.coll.Maps["native_rb"]); err != nil {
			return nil, fmt.Errorf("open ring buffer: %w", err)
		}
	} else if p.pr, err = perf.NewReader(p.coll.Maps["native_perf"], perCPU(o.BufferBytes)); err != nil {
		return nil, fmt.Errorf("open perf buffers: %w", err)
	}
	for _, prog := range p.progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", prog, err)
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

// programs are the name prefix of o.Transport's programs and the names
// after it that Open attaches.
func (o Options) programs() (prefix string, names []string, err error) {
	switch o.Transport {
	case RingBuf:
		prefix = "rb_"
	case PerfBuf:
		prefix = "pb_"
	default:
		return "", nil, fmt.Errorf("unknown native transport %q", o.Transport)
	}
	if o.Synth != nil {
		return prefix, []string{"synth"}, nil
	}
	exit := "exit_leader"
	has, err := kernelfeatures.ExitHasGroupDead()
	if err != nil {
		return "", nil, err
	}
	if has {
		exit = "exit"
	}
	return prefix, []string{"fork", "exec", exit}, nil
}

// perCPU shares bufferBytes out over the possible CPUs: a power-of-two
// number of pages each, at least one.
func perCPU(bufferBytes int) int {
	n, err := ebpf.PossibleCPU()
	if err != nil || n < 1 {
		n = 1
	}
	per := os.Getpagesize()
	for per*2 <= bufferBytes/n {
		per *= 2
	}
	return per
}

// Consume reads records as they come, one blocking read each, handing
// each to fn (data valid only during the call), until Interrupt is called
// after stop was closed; then it reads what the buffers still hold and
// returns. A perf loss report is counted (LostSamples), not handed on.
func (p *Producer) Consume(stop <-chan struct{}, fn func(data []byte)) error {
	draining := false
	for {
		data, err := p.read()
		switch {
		case err == nil:
			if data != nil {
				fn(data)
			}
			continue
		case draining && errors.Is(err, os.ErrDeadlineExceeded):
			return nil
		case errors.Is(err, ringbuf.ErrFlushed), errors.Is(err, perf.ErrFlushed), errors.Is(err, os.ErrDeadlineExceeded):
		default:
			return err
		}
		select {
		case <-stop:
			// The producers are detached: the rest is read without waiting.
			draining = true
			p.setDeadline(time.Now())
		default:
		}
	}
}

// read reads one record; nil data with a nil error is a perf loss report.
func (p *Producer) read() ([]byte, error) {
	if p.rb != nil {
		if err := p.rb.ReadInto(&p.rbRec); err != nil {
			return nil, err
		}
		return p.rbRec.RawSample, nil
	}
	if err := p.pr.ReadInto(&p.pRec); err != nil {
		return nil, err
	}
	if p.pRec.LostSamples > 0 {
		p.lost += p.pRec.LostSamples
		return nil, nil
	}
	return p.pRec.RawSample, nil
}

func (p *Producer) setDeadline(t time.Time) {
	if p.rb != nil {
		p.rb.SetDeadline(t)
	} else {
		p.pr.SetDeadline(t)
	}
}

// Interrupt wakes Consume, which returns once stop is closed and the
// buffers are read.
func (p *Producer) Interrupt() error {
	if p.rb != nil {
		return p.rb.Flush()
	}
	return p.pr.Flush()
}

// LostSamples are the samples the kernel told the perf reader it lost (0
// for the ring buffer); for the goroutine that ran Consume, after it.
func (p *Producer) LostSamples() uint64 { return p.lost }

// Counters sums the programs' per-CPU counters.
func (p *Producer) Counters() (Counters, error) {
	var c Counters
	var per []nativeNativeStats
	if err := p.coll.Maps["native_counters"].Lookup(uint32(0), &per); err != nil {
		return c, fmt.Errorf("read native_counters: %w", err)
	}
	for _, s := range per {
		c.Attempted += s.Attempted
		c.Failed += s.Failed
		c.FailedNoSpc += s.FailedNospc
	}
	return c, nil
}

// RunStats sums the run-time statistics of the attached programs.
func (p *Producer) RunStats() (bpfload.RunStats, error) {
	return bpfload.SumRunStats(p.progs)
}

// Detach stops the producers; what the buffers hold stays readable.
func (p *Producer) Detach() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.links = nil
	return errors.Join(errs...)
}

// Close detaches the programs, closes the reader and frees the maps.
func (p *Producer) Close() {
	_ = p.Detach()
	if p.rb != nil {
		_ = p.rb.Close()
	}
	if p.pr != nil {
		_ = p.pr.Close()
	}
	if p.coll != nil {
		p.coll.Close()
	}
}
