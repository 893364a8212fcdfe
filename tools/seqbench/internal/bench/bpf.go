//go:build linux

package bench

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Transport names one way from the BPF producers to the reader.
type Transport string

// The transports. The ring buffer has three wake-up policies; "ringbuf" is the
// batched one the comparison uses.
const (
	Sequencer       Transport = "sequencer"
	RingBuf         Transport = "ringbuf"          // BPF_RB_NO_WAKEUP, a forced wake-up every Nth ticket or when the data crosses a threshold
	RingBufAdaptive Transport = "ringbuf-adaptive" // flags 0: the kernel wakes the reader when it had caught up
	RingBufEvery    Transport = "ringbuf-every"    // BPF_RB_FORCE_WAKEUP on every record
	PerfBuf         Transport = "perfbuf"
	// Hook: the sequencer's programs attached but every event filtered out
	// (seq_event_mask 0): what the hooks alone cost the workload.
	Hook Transport = "hook"
	// Stage: the sequencer's programs stage every event (seq_fill) and drop
	// it: the hooks and the staging without a transport.
	Stage Transport = "stage"
)

// Transports lists every transport seqbench knows.
var Transports = []Transport{Sequencer, RingBuf, RingBufAdaptive, RingBufEvery, PerfBuf, Hook, Stage}

func (t Transport) prefix() string {
	switch t {
	case Sequencer, Hook, Stage:
		return "seqb"
	case RingBuf, RingBufAdaptive, RingBufEvery:
		return "rb"
	case PerfBuf:
		return "pb"
	}
	return ""
}

func (t Transport) rbMode() uint32 {
	switch t {
	case RingBufAdaptive:
		return 1
	case RingBufEvery:
		return 2
	}
	return 0
}

// maps each transport's programs use (data sections aside).
func (t Transport) maps() []string {
	switch t.prefix() {
	case "seqb":
		return []string{"seq_control", "seq_slots", "seq_counters", "seq_scratchbuf", "seq_doorbell"}
	case "rb":
		return []string{"seq_control", "seq_scratchbuf", "bench_counters", "bench_rb"}
	case "pb":
		return []string{"seq_control", "seq_scratchbuf", "bench_counters", "bench_perf"}
	}
	return nil
}

// LoadOptions say what to load and attach.
type LoadOptions struct {
	Transport Transport
	// BufferBytes is the memory every transport gets: the sequencer's ring
	// (BufferBytes/128 slots), the ring buffer, or the perf buffers together
	// (BufferBytes/CPUs each). A power of two.
	BufferBytes int
	Lifecycle   bool   // attach fork, exec and exit
	Synth       bool   // attach the synthetic producer (sys_enter)
	TargetTGID  uint32 // the synthetic producer's process
	// Ring buffer: force a wake-up on every WakeupEvery-th ticket (a power of
	// two) and when the unread data crosses WakeupBytes.
	WakeupEvery uint64
	WakeupBytes uint64
}

// Objects are one transport's programs and maps, loaded and attached.
type Objects struct {
	opts  LoadOptions
	coll  *ebpf.Collection
	progs map[string]*ebpf.Program // attached ones, by role: fork, exec, exit, synth
	links []link.Link
	ctl   []byte // seq_control, mapped read-write (head, parked)
	slots []byte // seq_slots, mapped read-only (sequencer)
}

// Load loads transport opts.Transport's programs and the maps they use, and
// maps the ticket counter (and the sequencer's ring). Nothing is attached yet.
func Load(opts LoadOptions) (_ *Objects, err error) {
	if opts.Transport.prefix() == "" {
		return nil, fmt.Errorf("unknown transport %q", opts.Transport)
	}
	if opts.BufferBytes < 1<<16 || opts.BufferBytes&(opts.BufferBytes-1) != 0 {
		return nil, fmt.Errorf("buffer of %d bytes: want a power of two, at least 64 KiB", opts.BufferBytes)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("seqbench loads BPF programs: run it as root")
	}
	_ = rlimit.RemoveMemlock()

	spec, err := loadBench()
	if err != nil {
		return nil, err
	}
	prefix := opts.Transport.prefix() + "_"
	for name := range spec.Programs {
		if !strings.HasPrefix(name, prefix) {
			delete(spec.Programs, name)
		}
	}
	keep := map[string]bool{}
	for _, m := range opts.Transport.maps() {
		keep[m] = true
	}
	for name := range spec.Maps {
		if !keep[name] && !strings.HasPrefix(name, ".") {
			delete(spec.Maps, name)
		}
	}
	slots := opts.BufferBytes / 128
	switch opts.Transport.prefix() {
	case "seqb":
		spec.Maps["seq_slots"].MaxEntries = uint32(slots)
	case "rb":
		spec.Maps["bench_rb"].MaxEntries = uint32(opts.BufferBytes)
	}
	every := opts.WakeupEvery
	if every == 0 || every&(every-1) != 0 {
		return nil, fmt.Errorf("ring buffer wake-up every %d tickets: want a power of two", every)
	}
	vars := map[string]any{
		"seq_ring_mask":         uint64(slots - 1),
		"bench_target_tgid":     opts.TargetTGID,
		"bench_synth_nr":        int64(unix.SYS_GETPID),
		"bench_rb_mode":         opts.Transport.rbMode(),
		"bench_rb_wakeup_mask":  every - 1,
		"bench_rb_wakeup_bytes": opts.WakeupBytes,
	}
	switch opts.Transport {
	case Hook:
		vars["seq_event_mask"] = uint32(0)
	case Stage:
		vars["bench_stage_only"] = uint32(1)
	}
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}

	o := &Objects{opts: opts, progs: map[string]*ebpf.Program{}}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	o.coll, err = ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load %s programs: %w", opts.Transport, err)
	}
	if o.ctl, err = mmapMap(o.coll.Maps["seq_control"], 128, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return nil, err
	}
	if opts.Transport.prefix() == "seqb" {
		if o.slots, err = mmapMap(o.coll.Maps["seq_slots"], opts.BufferBytes, unix.PROT_READ); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Attach attaches the programs the options ask for.
func (o *Objects) Attach() error {
	var roles []string
	if o.opts.Lifecycle {
		roles = append(roles, "fork", "exec", "exit")
	}
	if o.opts.Synth {
		roles = append(roles, "synth")
	}
	for _, role := range roles {
		p := o.coll.Programs[o.opts.Transport.prefix()+"_"+role]
		l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			return fmt.Errorf("attach %s: %w", p, err)
		}
		o.links = append(o.links, l)
		o.progs[role] = p
	}
	return nil
}

func mmapMap(m *ebpf.Map, size int, prot int) ([]byte, error) {
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	b, err := unix.Mmap(m.FD(), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", m, err)
	}
	return b, nil
}

// Head is the number of tickets issued so far (seq_ctl.head).
func (o *Objects) Head() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&o.ctl[0])))
}

// Map returns one of the loaded maps by name.
func (o *Objects) Map(name string) *ebpf.Map { return o.coll.Maps[name] }

// Detach stops the producers; what they wrote stays readable.
func (o *Objects) Detach() error {
	var errs []error
	for _, l := range o.links {
		errs = append(errs, l.Close())
	}
	o.links = nil
	return errors.Join(errs...)
}

// Close detaches, unmaps and closes everything.
func (o *Objects) Close() error {
	errs := []error{o.Detach()}
	for _, b := range [][]byte{o.ctl, o.slots} {
		if b != nil {
			errs = append(errs, unix.Munmap(b))
		}
	}
	o.ctl, o.slots = nil, nil
	if o.coll != nil {
		o.coll.Close()
		o.coll = nil
	}
	return errors.Join(errs...)
}

// KernelCounters are the producers' own counts, summed over CPUs.
type KernelCounters struct {
	Events  [evMax]uint64 // records produced (tickets claimed, ring buffer/perf), by type
	Tickets [evMax]uint64 // sequencer: tickets claimed, by type
	Failed  [evMax]uint64 // ring buffer/perf: outputs that failed, by type
	// Sequencer: slots skipped because the ring was lapped under the producer.
	Overrun uint64
	// Ring buffer/perf failures by cause.
	ErrFull, ErrBusy, ErrNoent, ErrOther uint64
	Wakeups                              uint64 // forced ring buffer wake-ups; sequencer: doorbells rung
}

// TotalFailed sums Failed.
func (c KernelCounters) TotalFailed() (n uint64) {
	for _, v := range c.Failed {
		n += v
	}
	return n
}

// TotalEvents sums Events.
func (c KernelCounters) TotalEvents() (n uint64) {
	for _, v := range c.Events {
		n += v
	}
	return n
}

// Counters reads the kernel's per-CPU counters.
func (o *Objects) Counters() (KernelCounters, error) {
	var c KernelCounters
	if o.opts.Transport.prefix() == "seqb" {
		var per []benchSeqStats
		if err := o.coll.Maps["seq_counters"].Lookup(uint32(0), &per); err != nil {
			return c, fmt.Errorf("read seq_counters: %w", err)
		}
		for _, p := range per {
			for i := range evMax {
				c.Events[i] += p.Events[i]
				c.Tickets[i] += p.Tickets[i]
			}
			c.Overrun += p.Overrun
			c.Wakeups += p.Doorbells
		}
		return c, nil
	}
	var per []benchBenchStats
	if err := o.coll.Maps["bench_counters"].Lookup(uint32(0), &per); err != nil {
		return c, fmt.Errorf("read bench_counters: %w", err)
	}
	for _, p := range per {
		for i := range evMax {
			c.Events[i] += p.Events[i]
			c.Failed[i] += p.Failed[i]
		}
		c.ErrFull += p.ErrFull
		c.ErrBusy += p.ErrBusy
		c.ErrNoent += p.ErrNoent
		c.ErrOther += p.ErrOther
		c.Wakeups += p.Wakeups
	}
	return c, nil
}

// RunStats are the kernel's run-time statistics of the attached programs
// (kernel.bpf_stats_enabled must be on while they run).
type RunStats struct {
	RunTimeNs uint64
	RunCount  uint64
	Recursion uint64 // runs skipped: another BPF program was running on that CPU
}

// RunStats sums the attached programs' statistics.
func (o *Objects) RunStats() (RunStats, error) {
	var s RunStats
	for _, p := range o.progs {
		st, err := p.Stats()
		if err != nil {
			return s, fmt.Errorf("program stats: %w", err)
		}
		s.RunTimeNs += uint64(st.Runtime)
		s.RunCount += st.RunCount
		s.Recursion += st.RecursionMisses
	}
	return s, nil
}

// EnableBPFStats turns kernel.bpf_stats_enabled on and returns a function
// that puts the old value back.
func EnableBPFStats() (restore func(), err error) {
	const path = "/proc/sys/kernel/bpf_stats_enabled"
	old, err := os.ReadFile(path)
	if err != nil {
		return func() {}, err
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return func() {}, err
	}
	return func() { _ = os.WriteFile(path, old, 0o644) }, nil
}
