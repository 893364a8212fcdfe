//go:build linux

package sequencer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/ringmap"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// prefix is the name prefix of the transport's lifecycle programs in bpf/seq/seq.bpf.c.
func (t Transport) prefix() string {
	switch t {
	case TransportSequencer:
		return "seq_"
	case TransportRingBuf:
		return "rb_"
	case TransportPerfBuf:
		return "pb_"
	}
	return ""
}

// programs names the programs Open loads for transport t: the lifecycle
// programs (or the stage-only ones), the synthetic producer when asked, and
// the snapshot iterator last.
func (o Options) programs(t Transport) []string {
	prefix := t.prefix()
	if o.StageOnly {
		prefix = "st_"
	}
	exit := prefix + "exit"
	if o.ExitTracking == ExitLiveCount {
		exit = prefix + "exit_live"
	}
	names := []string{prefix + "fork", prefix + "exec", exit}
	if o.Synth != nil {
		names = append(names, prefix+"synth")
	}
	return append(names, "seq_snapshot")
}

// maps are the maps the programs Open loads use: the transport's, and the
// process-exit claims where the live count tells process exits.
func (o Options) maps(t Transport) []string {
	m := t.maps()
	if o.ExitTracking == ExitLiveCount {
		m = append(m, "seq_exit_claim")
	}
	return m
}

// maps are the maps the transport's programs use; the others are not created.
func (t Transport) maps() []string {
	switch t {
	case TransportSequencer:
		return []string{"ring_control", "ring_slots", "ring_counters", "ring_scratchbuf", "ring_doorbell"}
	case TransportRingBuf:
		return []string{"ring_control", "ring_counters", "ring_scratchbuf", "seq_tx_counters", "seq_rb"}
	case TransportPerfBuf:
		return []string{"ring_control", "ring_counters", "ring_scratchbuf", "seq_tx_counters", "seq_perf"}
	}
	return nil
}

// Options say what the programs capture and how big the ring is.
type Options struct {
	// Transport picks the way to the reader; "" is auto.
	Transport Transport
	// RingSlots is the number of 128-byte slots, a power of two.
	RingSlots int
	// Events is the set of event types (event.Fork, ...) to produce; others never claim a ticket.
	Events []event.Type
	// MaxArgs bounds the argv bytes copied per exec (0..event.MaxArgs).
	MaxArgs int
	// Shed lists event types (never event.Exit) that the sequencer's producers
	// drop, before they take a ticket, while the reader is more than
	// ShedAbove tickets behind; counted in Counters.Shed.
	Shed      []event.Type
	ShedAbove uint64

	// Benchmark and diagnostic options (tools/seqbench): the receiver leaves
	// them zero, and then the programs are exactly the receiver's.

	// ExitTracking is how a process exit is told from a thread exit;
	// ExitAuto (the default) picks group_dead where the kernel passes it.
	ExitTracking ExitTracking
	// Synth also loads and attaches the transport's synthetic producer (on
	// sys_enter); it emits records of type event.Synth, so Events must name it.
	Synth *SynthOptions
	// RingBufWakeup is when the ring buffer's producers wake the reader
	// (TransportRingBuf only); zero is RingBufWakeupBatched, the receiver's.
	RingBufWakeup RingBufWakeup
	// StageOnly (TransportSequencer only) loads, in place of the sequencer's
	// programs, ones that stage every record as they do and then drop it:
	// the cost of the hooks and the staging without a transport. Nothing
	// reaches the ring.
	StageOnly bool
	// OnArrival, if set, is called by the ring buffer and perf sources with
	// every record as it arrives, before the reorder stage puts it in ticket
	// order (data is valid only during the call). The sequencer's records
	// arrive in ticket order; it never calls it.
	OnArrival func(ticket uint64, data []byte)
	// NoFetch loads the ring buffer producers built without BPF atomic
	// fetch (seqnf), whose records the reader numbers in ring order: what
	// Open does by itself on a kernel without BPF atomic fetch (before Linux
	// 5.12). Set, it does so on any kernel (tests, benchmark); the
	// transport must be the ring buffer or auto.
	NoFetch bool
}

// SynthOptions configure the synthetic producer: every system call SyscallNR
// made by a thread of process TargetTGID is one fixed 96-byte record.
type SynthOptions struct {
	TargetTGID uint32
	SyscallNR  int64 // e.g. unix.SYS_GETPID
}

// RingBufWakeup is enum seq_rb_wakeup: when a ring buffer producer wakes the reader.
type RingBufWakeup uint32

// The ring buffer wake-up policies.
const (
	// RingBufWakeupBatched: BPF_RB_NO_WAKEUP, except when the parked reader
	// asks, every RingBufWakeupTickets tickets and when a quarter of the buffer
	// is unread (the receiver's).
	RingBufWakeupBatched = RingBufWakeup(seqSeqRbWakeupSEQ_RB_BATCHED)
	// RingBufWakeupAdaptive: flags 0, the kernel wakes the reader when it has caught up.
	RingBufWakeupAdaptive = RingBufWakeup(seqSeqRbWakeupSEQ_RB_ADAPTIVE)
	// RingBufWakeupEvery: BPF_RB_FORCE_WAKEUP on every record.
	RingBufWakeupEvery = RingBufWakeup(seqSeqRbWakeupSEQ_RB_EVERY)
)

// RingBufWakeupTickets is how many tickets apart the batched ring buffer
// producers force a wake-up at the most.
const RingBufWakeupTickets = 64

// Sequencer is the loaded, attached set of programs with the ring (or the
// ring buffer or perf buffers) ready to read, whatever the transport.
type Sequencer struct {
	transport Transport
	why       string // why this transport (auto), or a warning about it
	warn      bool
	opts      Options
	coll      *ebpf.Collection
	progs     []*ebpf.Program // fork, exec, exit, [synth,] snapshot
	maps      []*ebpf.Map     // the maps the transport uses
	links     []link.Link
	mapped    *ringmap.Ring  // the control block; the slots and doorbell for the sequencer only
	ctl       []byte         // mapped.Control()
	ringLen   int            // the ring's bytes: slots × 128
	closers   []func() error // the sources' readers
}

const rtPerfWarning = "perf buffers on a PREEMPT_RT kernel: the perf buffer's epoll wake-ups can hang epoll_ctl and flood isolated cores with IPIs; use the sequencer or the ring buffer"

// Open checks the kernel and privileges, picks the transport (see Transport),
// loads its programs, attaches them and maps what the reader reads. On any
// error nothing is left loaded.
func Open(opts Options) (*Sequencer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := preflight(); err != nil {
		return nil, err
	}
	var err error
	if opts.ExitTracking, err = opts.ExitTracking.resolve(); err != nil {
		return nil, err
	}
	// Kernels with memcg accounting (5.11+) need no memlock rlimit; where the
	// raise is refused the load below still works, so the error is ignored.
	_ = rlimit.RemoveMemlock()

	noFetchWhy := "the producers without it were asked for (NoFetch)"
	if !opts.NoFetch {
		if err := kernelfeatures.Atomics.Probe(); err != nil {
			opts.NoFetch = true
			noFetchWhy = kernelfeatures.Atomics.Lacks(err)
		}
	}
	if opts.NoFetch {
		return openNoFetch(opts, noFetchWhy)
	}
	switch opts.Transport {
	case TransportSequencer, TransportRingBuf:
		return open(opts, opts.Transport, "configured")
	case TransportPerfBuf:
		s, err := open(opts, opts.Transport, "configured")
		if err == nil && kernelfeatures.Realtime() {
			s.why, s.warn = rtPerfWarning, true
		}
		return s, err
	case "", TransportAuto:
		return openAuto(opts)
	}
	return nil, fmt.Errorf("unknown transport %q", opts.Transport)
}

// validate checks the options that need no kernel.
func (o Options) validate() error {
	if o.RingSlots <= 0 || o.RingSlots&(o.RingSlots-1) != 0 {
		return fmt.Errorf("ring size %d slots is not a power of two", o.RingSlots)
	}
	if o.MaxArgs < 0 || o.MaxArgs > event.MaxArgs {
		return fmt.Errorf("max args %d out of range 0..%d", o.MaxArgs, event.MaxArgs)
	}
	if o.RingBufWakeup > RingBufWakeupEvery {
		return fmt.Errorf("unknown ring buffer wake-up policy %d", o.RingBufWakeup)
	}
	if o.StageOnly && o.Transport != TransportSequencer {
		return fmt.Errorf("stage only: the transport must be %s, not %q", TransportSequencer, o.Transport)
	}
	return nil
}

// resolve is e, with ExitAuto made group_dead where the kernel passes it
// and the live count where it does not.
func (e ExitTracking) resolve() (ExitTracking, error) {
	switch e {
	case ExitAuto:
		has, err := kernelfeatures.ExitHasGroupDead()
		if err != nil {
			return e, err
		}
		if has {
			return ExitGroupDead, nil
		}
		return ExitLiveCount, nil
	case ExitGroupDead, ExitLiveCount:
		return e, nil
	}
	return e, fmt.Errorf("unknown exit tracking %q", e)
}

// openAuto opens the first transport that loads: the sequencer (BPF atomics,
// which Open checked), else the ring buffer, else perf buffers, which are
// never chosen on a PREEMPT_RT kernel.
func openAuto(opts Options) (*Sequencer, error) {
	s, errSeq := open(opts, TransportSequencer, "BPF atomics available (Linux 5.12+) and the sequencer's programs load")
	if errSeq == nil {
		return s, nil
	}
	if kernelfeatures.RingBuf.Present() {
		s, err := open(opts, TransportRingBuf, fmt.Sprintf("the sequencer did not load (%v); the kernel has the BPF ring buffer", errSeq))
		if err == nil {
			return s, nil
		}
		errSeq = errors.Join(errSeq, err)
	}
	if kernelfeatures.Realtime() {
		return nil, fmt.Errorf("no transport: the sequencer and the BPF ring buffer are unavailable, and perf buffers are not chosen automatically on a PREEMPT_RT kernel (set transport: perfbuf to force them): %w", errSeq)
	}
	return open(opts, TransportPerfBuf, fmt.Sprintf("neither the sequencer nor the BPF ring buffer loaded (%v)", errSeq))
}

// openNoFetch opens the ring buffer with the producers that claim no
// ticket numbers (NoFetch): the only transport a kernel without BPF atomic
// fetch can run in order.
func openNoFetch(opts Options, why string) (*Sequencer, error) {
	switch opts.Transport {
	case "", TransportAuto, TransportRingBuf:
	default:
		return nil, fmt.Errorf("transport %s needs BPF atomic fetch to number its records, and %s; set transport: ringbuf or auto, whose records the reader then numbers in ring order", opts.Transport, why)
	}
	s, err := open(opts, TransportRingBuf, why+": the BPF ring buffer, its records numbered by the reader in ring order")
	if err == nil {
		s.warn = true
	}
	return s, err
}

// NoFetch reports whether the producers claim no ticket numbers and the
// reader numbers the ring buffer's records (Options.NoFetch).
func (s *Sequencer) NoFetch() bool { return s.opts.NoFetch }

// Transport is the transport in use.
func (s *Sequencer) Transport() Transport { return s.transport }

// Why says why the transport was chosen; with warn it is a warning about it.
func (s *Sequencer) Why() (why string, warn bool) { return s.why, s.warn }

// open opens transport tr in four steps: the spec of its programs, loaded,
// attached, and the control block (and the sequencer's slots) mapped.
func open(opts Options, tr Transport, why string) (_ *Sequencer, err error) {
	spec, err := opts.spec(tr)
	if err != nil {
		return nil, err
	}
	s := &Sequencer{transport: tr, why: why, opts: opts}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.load(spec); err != nil {
		return nil, err
	}
	if err := s.attach(); err != nil {
		return nil, err
	}
	if err := s.mapRing(); err != nil {
		return nil, err
	}
	return s, nil
}

// spec is the embedded object's spec for transport tr: only its lifecycle
// programs (and the snapshot iterator) and the maps they use, the ring
// sized and the programs' settings set.
func (o Options) spec(tr Transport) (*ebpf.CollectionSpec, error) {
	load := loadSeq
	if o.NoFetch {
		load = loadSeqnf
	}
	spec, err := load()
	if err != nil {
		return nil, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	progs := o.programs(tr)
	for name := range spec.Programs {
		if !slices.Contains(progs, name) {
			delete(spec.Programs, name)
		}
	}
	keep := o.maps(tr)
	for name := range spec.Maps {
		if !slices.Contains(keep, name) && !strings.HasPrefix(name, ".") {
			delete(spec.Maps, name)
		}
	}
	switch tr {
	case TransportSequencer:
		spec.Maps["ring_slots"].MaxEntries = uint32(o.RingSlots)
	case TransportRingBuf:
		spec.Maps["seq_rb"].MaxEntries = uint32(max(o.RingSlots*ring.SlotSize, os.Getpagesize()))
	}
	return spec, o.setVariables(spec)
}

// setVariables sets the programs' settings (volatile const in seq.bpf.c).
func (o Options) setVariables(spec *ebpf.CollectionSpec) error {
	var mask uint32
	for _, t := range o.Events {
		if !t.Valid() {
			return fmt.Errorf("unknown event type %d", t)
		}
		mask |= 1 << t
	}
	synth := SynthOptions{SyscallNR: -1}
	if o.Synth != nil {
		synth = *o.Synth
	}
	var shed uint32
	for _, t := range o.Shed {
		if !t.Valid() || t == event.Exit {
			return fmt.Errorf("event type %d cannot be shed", t)
		}
		shed |= 1 << t
	}
	for name, v := range map[string]any{
		"seq_shed_mask":  shed,
		"seq_shed_above": o.ShedAbove,
		"ring_mask":      uint64(o.RingSlots - 1),
		"seq_event_mask": mask,
		"seq_max_args":   uint32(o.MaxArgs),
		// Ring buffer: a forced wake-up every 64 tickets, or when a quarter of the buffer is unread.
		"seq_rb_wakeup_mask":  uint64(RingBufWakeupTickets - 1),
		"seq_rb_wakeup_bytes": uint64(o.RingSlots * ring.SlotSize / 4),
		"seq_rb_wakeup_mode":  uint32(o.RingBufWakeup),
		"seq_synth_tgid":      synth.TargetTGID,
		"seq_synth_nr":        synth.SyscallNR,
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// load loads spec into the kernel and keeps its programs, in the order of
// Options.programs, and the transport's maps.
func (s *Sequencer) load(spec *ebpf.CollectionSpec) (err error) {
	if s.coll, err = bpfload.NewCollection(spec); err != nil {
		return explainLoad(err)
	}
	for _, name := range s.opts.programs(s.transport) {
		s.progs = append(s.progs, s.coll.Programs[name])
	}
	for _, m := range s.opts.maps(s.transport) {
		s.maps = append(s.maps, s.coll.Maps[m])
	}
	return nil
}

// attach attaches every program but the snapshot iterator (the last) to its
// tracepoint.
func (s *Sequencer) attach() error {
	for _, p := range s.progs[:len(s.progs)-1] {
		l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			return fmt.Errorf("attach %s: %w", p, err)
		}
		s.links = append(s.links, l)
	}
	return nil
}

// mapRing maps what the reader reads: the slots and the doorbell are the
// sequencer's; the other transports keep only their head and parked flag
// in the control block.
func (s *Sequencer) mapRing() (err error) {
	slots := 0
	if s.transport == TransportSequencer {
		slots = s.opts.RingSlots
	}
	if s.mapped, err = ringmap.Map(s.coll, slots); err != nil {
		return err
	}
	s.ctl, s.ringLen = s.mapped.Control(), s.opts.RingSlots*ring.SlotSize
	return nil
}

// Control is the mapped struct ring_ctl (head and parked flag).
func (s *Sequencer) Control() []byte { return s.mapped.Control() }

// Slots is the mapped ring of slots (read-only); nil unless the transport is the sequencer.
// It is exactly the ring, not the page-rounded mapping, so that its length
// gives the reader the same slot count as the programs' mask.
func (s *Sequencer) Slots() []byte { return s.mapped.Slots() }

// Wait blocks until a producer rings the doorbell or the timeout passes. The
// caller must have set the parked flag (and re-checked the head) first.
// It returns true when woken by a producer.
func (s *Sequencer) Wait(timeout time.Duration) (bool, error) { return s.mapped.Wait(timeout) }

// Interrupt makes a blocked Wait return at once, or the next one if none is
// blocked; it may be called from any goroutine (used by Shutdown).
func (s *Sequencer) Interrupt() {
	if s.mapped != nil {
		s.mapped.Interrupt()
	}
}

// Counters are the kernel's own counts, summed over CPUs.
type Counters struct {
	Events         [event.NumTypes]uint64 // records produced, by type
	Tickets        [event.NumTypes]uint64 // tickets claimed, by type
	NoSlot         uint64
	Doorbells      uint64
	DoorbellFailed uint64
	Overrun        uint64                 // slots a producer skipped because the ring was lapped under it
	Shed           [event.NumTypes]uint64 // events dropped before their ticket under pressure, by type

	// The ring buffer and perf buffer transports.
	Failed        [event.NumTypes]uint64 // tickets lost to a failed output, by type
	ReserveFailed uint64                 // ring buffer outputs that failed
	PerfFailed    uint64                 // perf outputs that failed
	Wakeups       uint64                 // ring buffer records output with a forced wake-up
	// Failed outputs by cause: no room (ring buffer full, perf -ENOSPC);
	// busy (ring buffer lock not taken, a guess; perf -EBUSY, nesting);
	// other (perf -ENOENT, no buffer for the CPU, and the rest).
	FailedFull, FailedBusy, FailedOther uint64
}

// TotalFailed is the sum of Failed.
func (c Counters) TotalFailed() (n uint64) {
	for _, t := range c.Failed {
		n += t
	}
	return n
}

// TotalTickets is the sum of tickets claimed over all types.
func (c Counters) TotalTickets() (n uint64) {
	for _, t := range c.Tickets {
		n += t
	}
	return n
}

// Counters reads and sums the per-CPU counters.
func (s *Sequencer) Counters() (Counters, error) {
	var per []seqRingStats
	var c Counters
	if err := s.coll.Maps["ring_counters"].Lookup(uint32(0), &per); err != nil {
		return c, fmt.Errorf("read ring_counters: %w", err)
	}
	for _, p := range per {
		for i := range event.NumTypes {
			c.Events[i] += p.Events[i]
			c.Tickets[i] += p.Tickets[i]
		}
		c.NoSlot += p.NoSlot
		c.Doorbells += p.Doorbells
		c.DoorbellFailed += p.DoorbellFailed
		c.Overrun += p.Overrun
		for i := range event.NumTypes {
			c.Shed[i] += p.Shed[i]
		}
	}
	m := s.coll.Maps["seq_tx_counters"]
	if m == nil {
		return c, nil
	}
	var tx []seqSeqTxStats
	if err := m.Lookup(uint32(0), &tx); err != nil {
		return c, fmt.Errorf("read seq_tx_counters: %w", err)
	}
	for _, p := range tx {
		for i := range event.NumTypes {
			c.Failed[i] += p.Failed[i]
		}
		c.ReserveFailed += p.ReserveFailed
		c.PerfFailed += p.PerfFailed
		c.Wakeups += p.Wakeups
		c.FailedFull += p.FailedFull
		c.FailedBusy += p.FailedBusy
		c.FailedOther += p.FailedOther
	}
	return c, nil
}

// snapshotRecord is sizeof(struct seq_event): one per process in a snapshot.
const snapshotRecord = 96

// Snapshot lists the processes alive now, one struct seq_event record (type
// SEQ_EV_SNAPSHOT, no filename or args) per thread-group leader, read with a
// BPF task iterator: exact start times, unlike /proc's clock ticks.
func (s *Sequencer) Snapshot() ([][]byte, error) {
	l, err := link.AttachIter(link.IterOptions{Program: s.coll.Programs["seq_snapshot"]})
	if err != nil {
		return nil, fmt.Errorf("attach task iterator: %w", err)
	}
	defer l.Close()
	rd, err := l.Open()
	if err != nil {
		return nil, fmt.Errorf("open task iterator: %w", err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read task iterator: %w", err)
	}
	if len(b)%snapshotRecord != 0 {
		return nil, fmt.Errorf("task iterator returned %d bytes, not a multiple of %d", len(b), snapshotRecord)
	}
	recs := make([][]byte, 0, len(b)/snapshotRecord)
	for off := 0; off < len(b); off += snapshotRecord {
		recs = append(recs, b[off:off+snapshotRecord])
	}
	return recs, nil
}

// ProgramIDs lists the kernel ids of the loaded programs (for leak checks).
func (s *Sequencer) ProgramIDs() []ebpf.ProgramID {
	return bpfload.ProgramIDs(s.progs)
}

// RunStats sums the statistics of the programs attached to tracepoints
// (kernel.bpf_stats_enabled must be on while they run).
func (s *Sequencer) RunStats() (bpfload.RunStats, error) {
	return bpfload.SumRunStats(s.progs[:len(s.progs)-1])
}

// Detach stops the producers: nothing new enters the ring, what is there stays readable.
func (s *Sequencer) Detach() error {
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	s.links = nil
	return errors.Join(errs...)
}

// MapIDs lists the kernel ids of the maps (for leak checks): the maps the
// transport uses, the only ones created.
func (s *Sequencer) MapIDs() []ebpf.MapID {
	var ids []ebpf.MapID
	for _, m := range s.maps {
		if info, err := m.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Close detaches every link, unmaps the ring and closes every program and map.
func (s *Sequencer) Close() error {
	errs := []error{s.Detach()}
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	s.closers = nil
	if s.mapped != nil {
		errs = append(errs, s.mapped.Close())
		s.mapped = nil
	}
	s.ctl = nil
	if s.coll != nil {
		s.coll.Close()
		s.coll = nil
	}
	return errors.Join(errs...)
}

// explainLoad turns verifier and permission errors into a sentence that names the fix.
func explainLoad(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, unix.EPERM):
		err = kernelfeatures.PermissionDenied(who, err)
	case strings.Contains(msg, "BPF_ATOMIC") || strings.Contains(msg, "unknown opcode") || strings.Contains(msg, "invalid BPF_STX"):
		err = kernelfeatures.Atomics.Missing(who, err)
	case strings.Contains(msg, "tp_btf") || strings.Contains(msg, "attach_btf"):
		err = kernelfeatures.TPBTF.Missing(who, err)
	}
	return fmt.Errorf("load BPF programs: %w", err)
}

// ExitTracking is how the loaded programs tell a process exit from a thread
// exit (group_dead or live_count).
func (s *Sequencer) ExitTracking() ExitTracking { return s.opts.ExitTracking }
