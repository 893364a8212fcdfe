//go:build linux

package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
)

// ReaderOptions tune the consumers.
type ReaderOptions struct {
	// Poll is how often the ring buffer and perf readers look without a
	// wake-up (records sent without one), and how long the sequencer's
	// reader sleeps on its doorbell at most.
	Poll time.Duration
	// PerfWakeupEvents: the kernel wakes the perf reader after this many
	// records in one CPU's buffer.
	PerfWakeupEvents int
	// Reorder bounds (ring buffer and perf): most records held, longest wait.
	ReorderHeld int
	ReorderWait time.Duration
	// Processes: check causality per process (fork, exec, exit workloads).
	Processes bool
}

// Consumed is what a reader saw.
type Consumed struct {
	Records    uint64 // records delivered (decoded or not)
	Tickets    uint64 // tickets delivered (a sequencer record may take more than one)
	Lost       uint64 // sequencer: tickets the reader counted lost (gaps)
	LostByWhy  map[string]uint64
	PerfLost   uint64 // perf: LostSamples the kernel reported to the reader
	DecodeErrs uint64
	ByType     [evMax]uint64
	Raw        *Order   // checks in delivery order
	Ordered    *Order   // checks after the reorder stage (the sequencer: same as Raw)
	Reorder    *Reorder // nil for the sequencer
	CPU        time.Duration
	Wakeups    uint64 // times the reader woke from a wait with data
}

// consumer is what every transport's reader feeds: decode, check, reorder.
type consumer struct {
	c     Consumed
	ev    event.Event
	now   time.Time
	nowN  int
	order func(Rec) // the reorder stage's output
}

func newConsumer(opts ReaderOptions, reorder bool) *consumer {
	k := &consumer{c: Consumed{Raw: NewOrder(opts.Processes), LostByWhy: map[string]uint64{}}}
	if reorder {
		k.c.Ordered = NewOrder(opts.Processes)
		k.c.Reorder = NewReorder(0, opts.ReorderHeld, opts.ReorderWait)
		k.order = k.c.Ordered.Observe
	} else {
		k.c.Ordered = k.c.Raw
	}
	k.now = time.Now()
	return k
}

// clock is time.Now, refreshed every 64 records (arrival times for the
// reorder stage's time bound; a wake-up refreshes it too).
func (k *consumer) clock() time.Time {
	k.nowN++
	if k.nowN&63 == 0 {
		k.now = time.Now()
	}
	return k.now
}

// deliver takes one record in delivery order.
func (k *consumer) deliver(ticket uint64, tickets int, data []byte) {
	k.c.Records++
	k.c.Tickets += uint64(tickets)
	if err := event.Decode(ticket, data, &k.ev); err != nil {
		k.c.DecodeErrs++
		return
	}
	if t := int(k.ev.Type); t < evMax {
		k.c.ByType[t]++
	}
	r := Rec{Ticket: ticket, KTime: k.ev.KTime, Start: k.ev.StartNs, PID: k.ev.PID, Type: uint16(k.ev.Type)}
	k.c.Raw.Observe(r)
	if k.c.Reorder != nil {
		k.c.Reorder.Push(r, k.clock(), k.order)
	}
}

// tick lets the reorder stage apply its time bound.
func (k *consumer) tick() {
	k.now = time.Now()
	if k.c.Reorder != nil {
		k.c.Reorder.Tick(k.now, k.order)
	}
}

// finish flushes the reorder stage: tickets below issued never delivered are lost.
func (k *consumer) finish(issued uint64) {
	if k.c.Reorder != nil {
		k.c.Reorder.FlushTo(issued, k.order)
	}
}

// threadCPU is the calling thread's CPU time so far.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reader is one transport's consumer loop. run reads until stop is closed
// and everything published before that has been read; the producers must
// be detached before stop is closed.
type reader interface {
	run(stop <-chan struct{}) error
	consumer() *consumer
	close() error
}

// startReader runs r on its own locked OS thread (so that its CPU time can
// be measured) and returns a function that stops it and waits.
func startReader(r reader) (stopAndWait func() (*Consumed, error)) {
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		err := r.run(stop)
		r.consumer().c.CPU = threadCPU() - c0
		done <- err
	}()
	return func() (*Consumed, error) {
		close(stop)
		err := <-done
		return &r.consumer().c, err
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// --- the sequencer -------------------------------------------------------

// How the sequencer's reader waits, as the receiver does: after a burst it
// lingers once, then parks on the doorbell.
const (
	seqLinger     = 250 * time.Microsecond
	seqPendingMin = 20 * time.Microsecond
	seqPendingMax = time.Millisecond
)

type seqReader struct {
	objs     *Objects
	rd       *ring.Reader
	doorbell *ringbuf.Reader
	k        *consumer
	poll     time.Duration
}

func newSeqReader(o *Objects, opts ReaderOptions) (*seqReader, error) {
	rd, err := ring.NewReader(o.ctl[:ring.CtlSize], o.slots)
	if err != nil {
		return nil, err
	}
	db, err := ringbuf.NewReader(o.Map("seq_doorbell"))
	if err != nil {
		return nil, fmt.Errorf("open doorbell: %w", err)
	}
	return &seqReader{objs: o, rd: rd, doorbell: db, k: newConsumer(opts, false), poll: opts.Poll}, nil
}

func (s *seqReader) consumer() *consumer { return s.k }

func (s *seqReader) close() error { return s.doorbell.Close() }

func (s *seqReader) item(it *ring.Item) {
	if it.Kind == ring.Gap {
		s.k.c.Lost += it.Lost
		s.k.c.LostByWhy[it.Reason.String()] += it.Lost
		return
	}
	s.k.deliver(it.Ticket, it.Slots, it.Data)
}

func (s *seqReader) run(stop <-chan struct{}) error {
	var rec ringbuf.Record
	lingered := false
	pendingWait := seqPendingMin
	for {
		n, st := s.rd.Read(4096, s.item)
		switch st {
		case ring.Full:
			lingered = false
			continue
		case ring.Pending:
			time.Sleep(pendingWait)
			pendingWait = min(2*pendingWait, seqPendingMax)
			continue
		}
		pendingWait = seqPendingMin
		if stopped(stop) {
			// Idle after the producers were detached: everything is read.
			return nil
		}
		if n > 0 || !lingered {
			lingered = true
			time.Sleep(seqLinger)
			continue
		}
		lingered = false
		s.rd.SetParked()
		if s.rd.Head() != s.rd.Next() {
			s.rd.ClearParked()
			continue
		}
		s.doorbell.SetDeadline(time.Now().Add(s.poll))
		err := s.doorbell.ReadInto(&rec)
		s.rd.ClearParked()
		switch {
		case err == nil:
			s.k.c.Wakeups++
			s.doorbell.SetDeadline(time.Unix(0, 1))
			for s.doorbell.ReadInto(&rec) == nil {
			}
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
		default:
			return fmt.Errorf("doorbell: %w", err)
		}
	}
}

// --- the BPF ring buffer -------------------------------------------------

type rbReader struct {
	rd   *ringbuf.Reader
	k    *consumer
	poll time.Duration
}

func newRBReader(o *Objects, opts ReaderOptions) (*rbReader, error) {
	rd, err := ringbuf.NewReader(o.Map("bench_rb"))
	if err != nil {
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	return &rbReader{rd: rd, k: newConsumer(opts, true), poll: opts.Poll}, nil
}

func (r *rbReader) consumer() *consumer { return r.k }

func (r *rbReader) close() error { return r.rd.Close() }

func (r *rbReader) run(stop <-chan struct{}) error {
	var rec ringbuf.Record
	draining := false
	r.rd.SetDeadline(time.Now().Add(r.poll))
	for {
		err := r.rd.ReadInto(&rec)
		if err == nil {
			r.k.rawRecord(rec.RawSample)
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		r.k.tick()
		if draining {
			return nil
		}
		if stopped(stop) {
			// One more pass that does not wait: what is left, then done.
			draining = true
			r.rd.SetDeadline(time.Unix(0, 1))
			continue
		}
		r.rd.SetDeadline(r.k.now.Add(r.poll))
	}
}

// rawRecord takes a ring buffer or perf record: the ticket, then the event
// (perf may add up to 7 bytes of padding, cut here by the event's own lengths).
func (k *consumer) rawRecord(b []byte) {
	if len(b) < 8+event.FixedSize {
		k.c.Records++
		k.c.Tickets++
		k.c.DecodeErrs++
		return
	}
	ticket := binary.LittleEndian.Uint64(b)
	b = b[8:]
	n := event.FixedSize + int(binary.LittleEndian.Uint16(b[68:])) + int(binary.LittleEndian.Uint16(b[70:]))
	if n <= len(b) {
		b = b[:n]
	}
	k.deliver(ticket, 1, b)
}

// --- perf buffers --------------------------------------------------------

type perfReader struct {
	rd   *perf.Reader
	k    *consumer
	poll time.Duration
}

func newPerfReader(o *Objects, opts ReaderOptions, perCPU int) (*perfReader, error) {
	rd, err := perf.NewReaderWithOptions(o.Map("bench_perf"), perCPU, perf.ReaderOptions{WakeupEvents: opts.PerfWakeupEvents})
	if err != nil {
		return nil, fmt.Errorf("open perf buffers: %w", err)
	}
	return &perfReader{rd: rd, k: newConsumer(opts, true), poll: opts.Poll}, nil
}

func (p *perfReader) consumer() *consumer { return p.k }

func (p *perfReader) close() error { return p.rd.Close() }

func (p *perfReader) run(stop <-chan struct{}) error {
	var rec perf.Record
	draining := false
	p.rd.SetDeadline(time.Now().Add(p.poll))
	for {
		err := p.rd.ReadInto(&rec)
		if err == nil {
			if rec.LostSamples > 0 {
				p.k.c.PerfLost += rec.LostSamples
				continue
			}
			p.k.rawRecord(rec.RawSample)
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		p.k.tick()
		if draining {
			return nil
		}
		if stopped(stop) {
			draining = true
			p.rd.SetDeadline(time.Unix(0, 1))
			continue
		}
		p.rd.SetDeadline(p.k.now.Add(p.poll))
	}
}

// newReader opens transport o's reader.
func newReader(o *Objects, opts ReaderOptions) (reader, error) {
	switch o.opts.Transport.prefix() {
	case "seqb":
		return newSeqReader(o, opts)
	case "rb":
		return newRBReader(o, opts)
	case "pb":
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, err
		}
		return newPerfReader(o, opts, o.opts.BufferBytes/max(1, n))
	}
	return nil, fmt.Errorf("unknown transport %q", o.opts.Transport)
}
