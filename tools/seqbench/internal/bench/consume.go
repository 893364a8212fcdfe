//go:build linux

package bench

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
)

// Consumed is what the reader saw.
type Consumed struct {
	Records    uint64 // records delivered (decoded or not)
	Tickets    uint64 // tickets delivered (a record may take more than one)
	Lost       uint64 // tickets in the gaps the source reported
	LostBy     map[string]uint64
	DecodeErrs uint64
	ByType     [event.NumTypes]uint64
	Raw        *Order // checks in arrival order (ring buffer, perf: before the reorder stage)
	Ordered    *Order // checks in delivery order (the sequencer, the native arms: the same as Raw)
	CPU        time.Duration
	Wakeups    uint64 // waits that ended with a wake-up
}

// consumer reads a transport.Source as the receiver does, and checks what
// it delivers instead of mapping it to pdata.
type consumer struct {
	src  transport.Source
	poll time.Duration
	c    Consumed
	ev   event.Event // delivered
	raw  event.Event // arrived (ring buffer, perf)
}

func newConsumer(processes, reordered bool, poll time.Duration) *consumer {
	k := &consumer{poll: poll, c: Consumed{Raw: NewOrder(processes), LostBy: map[string]uint64{}}}
	k.c.Ordered = k.c.Raw
	if reordered {
		k.c.Ordered = NewOrder(processes)
	}
	return k
}

// arrival is sequencer.Options.OnArrival: the raw order, before reordering.
func (k *consumer) arrival(ticket uint64, data []byte) {
	if event.Decode(ticket, data, &k.raw) == nil {
		k.c.Raw.Observe(recOf(&k.raw))
	}
}

// item takes one record or gap in delivery order.
func (k *consumer) item(it *ring.Item) {
	if it.Kind == ring.Gap {
		k.c.Lost += it.Lost
		k.c.LostBy[it.Reason.String()] += it.Lost
		return
	}
	k.c.deliver(it.Ticket, it.Slots, it.Data, &k.ev)
}

// deliver counts one record of slots tickets delivered and checks it in
// delivery order, decoded into ev.
func (c *Consumed) deliver(ticket uint64, slots int, data []byte, ev *event.Event) {
	c.Records++
	c.Tickets += uint64(slots)
	if err := event.Decode(ticket, data, ev); err != nil {
		c.DecodeErrs++
		return
	}
	c.ByType[ev.Type]++
	c.Ordered.Observe(recOf(ev))
}

// The reader's pacing, with the ring's constants (ring.Pacer's), but no
// gather: after a burst the reader lingers once before it parks; a
// claimed, unpublished ticket is retried with a growing pause.
const (
	readBatch = 4096
	// drainWait bounds the final drain (for a record still in flight, or a
	// ticket the reorder stage still waits for) before the rest is
	// abandoned; it starts again while records still come, so that what
	// the buffers hold at the end is read, not counted lost.
	drainWait = 2 * transport.ReorderWait
)

// run reads until stop is closed (the producers must be detached first),
// drains what they published, and gives up on the rest as the receiver's
// shutdown does: afterwards every ticket below the head is delivered or lost.
func (k *consumer) run(stop <-chan struct{}) error {
	lingered := false
	pause := ring.PendingFirst
	var deadline time.Time
	for {
		n, st := k.src.Read(readBatch, k.item)
		if st != ring.Pending {
			pause = ring.PendingFirst
		}
		if deadline.IsZero() && stopped(stop) || !deadline.IsZero() && n > 0 {
			deadline = time.Now().Add(drainWait)
		}
		if !deadline.IsZero() && (st == ring.Idle || time.Now().After(deadline)) {
			k.src.Abandon(k.item)
			return nil
		}
		if st == ring.Full {
			lingered = false
			continue
		}
		if st == ring.Pending || !deadline.IsZero() {
			ring.Sleep(pause)
			pause = min(2*pause, ring.PendingMax)
			continue
		}
		if n > 0 || !lingered {
			lingered = true
			ring.Sleep(ring.Linger)
			continue
		}
		lingered = false
		if err := k.park(); err != nil {
			return err
		}
	}
}

// park parks the reader (ring.Park) for at most the poll interval.
func (k *consumer) park() error {
	woke, err := ring.Park(k.src, k.src.Wait, k.poll)
	if woke {
		k.c.Wakeups++
	}
	return err
}

// start runs the reader on its own locked OS thread (onThread).
func (k *consumer) start() (stopAndWait func() (*Consumed, error)) {
	return onThread(&k.c, k.run, k.src.Interrupt)
}

// onThread runs run on its own locked OS thread, so that its CPU time can
// be measured into c.CPU, and returns a function that stops it (closes its
// stop channel and calls interrupt) and waits.
func onThread(c *Consumed, run func(stop <-chan struct{}) error, interrupt func()) (stopAndWait func() (*Consumed, error)) {
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		err := run(stop)
		c.CPU = threadCPU() - c0
		done <- err
	}()
	return func() (*Consumed, error) {
		close(stop)
		interrupt()
		err := <-done
		return c, err
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

// threadCPU is the calling thread's CPU time so far.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
