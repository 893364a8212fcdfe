// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package process turns the sequencer's ordered process events into spans:
// one span per process lifetime, from its fork to its exit, linked parent to
// child.
//
// A process is named by its identity (boot id, tgid, start time): its span id
// is derived from that identity alone, and its trace id from the identity of
// the root process of its trace, so a collector restart or a second collector
// names the same process the same way. The live table is keyed by (pid, start
// time), so a reused pid never merges two processes.
//
// A child joins its parent's trace (parent span id = the parent's span id)
// unless it is a trace root: its parent is unknown, is init or kthreadd (pid
// <= 2), leads the child's session (Config.SessionLeaders), or runs one of
// Config.RootParents. A root whose parent is known carries a span link to the
// parent's span.
//
// Apply is meant for the hot path: it allocates nothing for a fork or an exit
// in the steady state (entries are recycled) and builds no pdata; the spans
// are built by AppendFinished. Memory is bounded by Config.MaxProcesses (live
// entries), Config.MaxFinished (spans waiting for AppendFinished),
// Config.MaxSpanEvents (span events per span), Config.MaxArgs and
// Config.MaxArgsBytes (argv kept per exec), Config.MaxEventArgsBytes (the
// exec span events' argv per process) and, over all of them, Config.MaxMemory:
// a byte budget charged with every entry, its strings and its span events
// while it lives and while its span waits for AppendFinished (see budget.go).
package process

import (
	"slices"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/procid"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
)

// Defaults for the zero values of Config's bounds.
const (
	DefaultMaxProcesses  = 1 << 16 // live processes tracked
	DefaultMaxFinished   = 1 << 16 // finished spans waiting for AppendFinished
	DefaultMaxSpanEvents = 128     // span events kept per span
	maxCommLen           = 15      // TASK_COMM_LEN - 1
	maxFree              = 1024    // recycled entries kept
	minGhosts            = 256
	maxTombstones        = 4096

	// DefaultMaxMemory is the budget of the process model: the agent's
	// memory_limiter allows 240 MiB for the whole collector, and a host's
	// real processes take a few MiB (a few thousand entries of 1-3 KiB).
	DefaultMaxMemory = 32 << 20
	// DefaultMaxArgs and DefaultMaxArgsBytes bound the argv kept of one
	// exec (and of one process seen at start, whose argv is read from /proc).
	DefaultMaxArgs      = 256
	DefaultMaxArgsBytes = 4096
	// DefaultMaxEventArgsBytes bounds the argv bytes kept by the exec span
	// events of one process (16 bytes per argument plus its length).
	DefaultMaxEventArgsBytes = 16 << 10
	// DefaultBuildSpans and DefaultBuildBytes bound what one AppendFinished
	// builds: spans, and accounted bytes of the entries built.
	DefaultBuildSpans = 4096
	DefaultBuildBytes = 8 << 20
)

// Config configures a Model.
type Config struct {
	// BootID is /proc/sys/kernel/random/boot_id, part of every identity.
	BootID string
	// MaxProcesses bounds the live processes tracked. Inserting one more
	// evicts the oldest-started live process: its span is finished at once,
	// at the time of the latest event seen, with seq.process.evicted=true.
	// Zero or less means DefaultMaxProcesses.
	MaxProcesses int
	// MaxFinished bounds the finished spans waiting for AppendFinished;
	// beyond it a finished span is dropped and counted (Stats.DroppedSpans).
	// CloseAll ignores it. Zero or less means DefaultMaxFinished.
	MaxFinished int
	// MaxSpanEvents bounds the span events (process.exec, thread.start,
	// thread.exit) kept per span; the others are counted in the span's
	// dropped events count. Zero or less means DefaultMaxSpanEvents.
	MaxSpanEvents int
	// RootParents are executable names (comm) whose children start a new
	// trace, e.g. cron, sshd, containerd-shim. Names longer than 15 bytes
	// are cut to 15, as the kernel cuts comm.
	RootParents []string
	// SessionLeaders makes a child of its session's leader (the parent's
	// pid equals the child's session id at fork) start a new trace.
	SessionLeaders bool
	// ThreadEvents adds thread.start and thread.exit span events to the
	// span of the thread's process.
	ThreadEvents bool
	// BootOffset is wall-clock minus boot-clock time in nanoseconds: wall
	// ns = boot ns + BootOffset. SetBootOffset changes it.
	BootOffset int64
	// Cgroups resolves a cgroup id, at the event, to what the spans say
	// of it (process.linux.cgroup); nil, or a nil result, says nothing.
	Cgroups func(id uint64) *cgroups.Info

	// MaxMemory is the byte budget of the model (see budget.go). Over it,
	// the argv of the oldest exec span events is dropped first (their
	// paths kept), then span events, then waiting finished spans, then the
	// oldest live processes are evicted, each counted. Zero or less means
	// DefaultMaxMemory.
	MaxMemory int
	// MaxArgs and MaxArgsBytes bound the arguments, and their bytes (each
	// with its NUL), kept of one exec or process seen at start; the rest is
	// cut, the span and its exec event carry seq.args.truncated, and the
	// cut is counted (Stats.ArgsTruncated). Zero or less means
	// DefaultMaxArgs, DefaultMaxArgsBytes.
	MaxArgs      int
	MaxArgsBytes int
	// MaxEventArgsBytes bounds the argv bytes (16 per argument plus its
	// length) the exec span events of one process keep: an exec beyond it
	// drops the argv of the process's oldest exec events, which carry
	// seq.args.dropped (Stats.EventArgsDropped). Zero or less means
	// DefaultMaxEventArgsBytes.
	MaxEventArgsBytes int
	// BuildSpans and BuildBytes bound the spans, and the accounted bytes of
	// their entries, one AppendFinished builds (at least one span). Zero or
	// less means DefaultBuildSpans, DefaultBuildBytes.
	BuildSpans int
	BuildBytes int
}

// Stats are a Model's counters.
type Stats struct {
	Live          int    // processes tracked now
	Pending       int    // finished spans waiting for AppendFinished
	Started       uint64 // spans opened: forks, snapshot processes, processes first seen at an exec or an exit
	Finished      uint64 // spans ended: exits, evictions, CloseAll (DroppedSpans included)
	Evicted       uint64 // live processes evicted, at MaxProcesses and over MaxMemory (EvictedMem)
	Unknown       uint64 // exec and exit events of processes never seen
	SeenAtStart   uint64 // processes added by AddRunning
	Deduplicated  uint64 // snapshots and forks of processes already known, or already exited
	AfterEviction uint64 // exec and exit events of processes already evicted
	DroppedSpans  uint64 // finished spans dropped: MaxFinished were waiting
	DroppedEvents uint64 // span events dropped: MaxSpanEvents were kept
	ExitMissed    uint64 // live processes finished because a newer one took their pid
	Redacted      uint64 // argv values replaced by REDACTED (Redact), of execs (an evicted process's too) and snapshot processes added

	Memory              int    // bytes accounted now (Config.MaxMemory bounds it)
	ArgsTruncated       uint64 // execs and snapshot processes whose argv was cut at MaxArgs or MaxArgsBytes
	EventArgsDropped    uint64 // exec span events whose argv was dropped at MaxEventArgsBytes
	EventArgsDroppedMem uint64 // exec span events whose argv was dropped over MaxMemory
	DroppedEventsMem    uint64 // span events dropped over MaxMemory
	DroppedSpansMem     uint64 // waiting finished spans dropped over MaxMemory
	EvictedMem          uint64 // live processes evicted over MaxMemory (their spans dropped)
}

// key is a process identity within one boot.
type key struct {
	pid   uint32
	start uint64
}

// Span flags.
const (
	flagSeenAtStart uint16 = 1 << iota
	flagRunning
	flagEvicted
	flagPartial
	flagExited
	flagExec
	flagLink
	flagRootParent // the process's name is one of Config.RootParents
	flagExitMissed // a newer process took its pid: its exit was lost
	flagRedacted   // a secret of the last exec's argv was replaced
	flagTruncated  // the last exec's argv was cut (by the kernel or MaxArgs*)
	flagInArgsQ    // queued in Model.argsQ
	flagInEventsQ  // queued in Model.eventsQ
)

// Span event kinds.
const (
	kindExec uint8 = iota + 1
	kindThreadStart
	kindThreadExit
)

type spanEvent struct {
	kind   uint8
	tid    uint32
	time   pcommon.Timestamp
	ticket uint64
	path   string
	argLo  int32 // exec: args are proc.arena[argLo:argHi]
	argHi  int32
	// redacted: a secret of the exec's argv was replaced
	redacted bool
	// truncated: the exec's argv was cut; argsDropped: its argv was dropped
	truncated, argsDropped bool
}

// proc is one process: a table entry while it lives, then a finished span.
type proc struct {
	pid, ppid, uid, gid, sid uint32
	exitStatus               uint32
	flags                    uint16
	heapIdx                  int
	droppedEvents            uint32
	start, parentStart       uint64 // identity; the parent's identity
	cgroup                   uint64
	cg                       *cgroups.Info // of cgroup, resolved at the event; nil if unknown
	next                     *proc         // older entry with the same pid (a missed exit)

	startTime, endTime pcommon.Timestamp
	creation           pcommon.Timestamp // wall time of start
	parentCreation     pcommon.Timestamp // wall time of parentStart; 0 if unknown

	name     string
	execPath string
	args     []string // of the last exec

	traceID      pcommon.TraceID
	spanID       pcommon.SpanID
	parentSpanID pcommon.SpanID
	linkTraceID  pcommon.TraceID
	linkSpanID   pcommon.SpanID

	events []spanEvent
	arena  []string // args of the exec span events

	// Accounting (budget.go).
	gen       uint32 // incremented when the entry is recycled
	argsFrom  int32  // events before it have no argv left
	data      int    // bytes of the strings held (name, paths, argv)
	argsData  int    // bytes of the strings in args
	arenaData int    // bytes of the strings in arena
	bytes     int    // charged to Model.bytes
}

// ghost is what is kept of an evicted process: enough to name it.
type ghost struct {
	traceID    pcommon.TraceID
	spanID     pcommon.SpanID
	rootParent bool
}

// fifoSet is a set of keys bounded by forgetting the oldest.
type fifoSet[V any] struct {
	m    map[key]V
	ring []key
	next int
}

func newFIFOSet[V any](n int) fifoSet[V] {
	return fifoSet[V]{m: make(map[key]V), ring: make([]key, 0, n)}
}

func (s *fifoSet[V]) put(k key, v V) {
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, k)
	} else {
		delete(s.m, s.ring[s.next])
		s.ring[s.next] = k
		s.next = (s.next + 1) % len(s.ring)
	}
	s.m[k] = v
}

// Model is the process table. Its methods must be called from one goroutine
// at a time, except SetBootOffset, which any goroutine may call.
type Model struct {
	cfg         Config
	bootOffset  atomic.Int64
	ids         procid.IDs
	rootParents map[string]struct{}

	procs    map[uint32]*proc // by pid, newest first along proc.next
	heap     []*proc          // live processes, oldest start first
	finished []*proc          // waiting for AppendFinished from fhead on
	fhead    int
	free     []*proc

	bytes   int    // accounted (budget.go)
	argsQ   stripQ // entries holding exec span events' argv, oldest first
	eventsQ stripQ // entries holding span events, oldest first

	ghosts       fifoSet[ghost]
	tombstones   fifoSet[ghost] // processes that exited while snapshotting
	snapshotting bool

	lastKTime uint64
	stats     Stats
}

// New returns an empty Model. Until EndSnapshot is called it remembers the
// latest exits, so that a snapshot of a process that has already exited is
// ignored.
func New(cfg Config) *Model {
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = DefaultMaxProcesses
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = DefaultMaxFinished
	}
	if cfg.MaxSpanEvents <= 0 {
		cfg.MaxSpanEvents = DefaultMaxSpanEvents
	}
	cfg.MaxMemory = orDefault(cfg.MaxMemory, DefaultMaxMemory)
	cfg.MaxArgs = orDefault(cfg.MaxArgs, DefaultMaxArgs)
	cfg.MaxArgsBytes = orDefault(cfg.MaxArgsBytes, DefaultMaxArgsBytes)
	cfg.MaxEventArgsBytes = orDefault(cfg.MaxEventArgsBytes, DefaultMaxEventArgsBytes)
	cfg.BuildSpans = orDefault(cfg.BuildSpans, DefaultBuildSpans)
	cfg.BuildBytes = orDefault(cfg.BuildBytes, DefaultBuildBytes)
	m := &Model{
		cfg:          cfg,
		ids:          procid.New(cfg.BootID),
		rootParents:  make(map[string]struct{}, len(cfg.RootParents)),
		procs:        make(map[uint32]*proc),
		ghosts:       newFIFOSet[ghost](max(minGhosts, cfg.MaxProcesses/4)),
		tombstones:   newFIFOSet[ghost](maxTombstones),
		snapshotting: true,
	}
	for _, n := range cfg.RootParents {
		if len(n) > maxCommLen {
			n = n[:maxCommLen]
		}
		m.rootParents[n] = struct{}{}
	}
	m.bootOffset.Store(cfg.BootOffset)
	return m
}

// SetBootOffset sets wall-clock minus boot-clock time, in nanoseconds, for
// the events applied from now on (times already recorded keep theirs). It is
// safe to call from any goroutine.
func (m *Model) SetBootOffset(ns int64) { m.bootOffset.Store(ns) }

// EndSnapshot tells the Model that AddRunning will not be called again: it
// stops remembering exits (see New) and frees what it remembered.
func (m *Model) EndSnapshot() {
	m.snapshotting = false
	m.tombstones = fifoSet[ghost]{}
}

// Stats returns the Model's counters.
func (m *Model) Stats() Stats {
	s := m.stats
	s.Live = len(m.heap)
	s.Pending = len(m.finished) - m.fhead
	s.Memory = m.bytes
	return s
}

func (m *Model) wall(bootNs uint64) pcommon.Timestamp {
	return pcommon.Timestamp(int64(bootNs) + m.bootOffset.Load())
}

// SpanID returns the span id of the process (pid, startNs) of this boot
// (see procid.IDs.SpanID).
func (m *Model) SpanID(pid uint32, startNs uint64) pcommon.SpanID {
	return m.ids.SpanID(pid, startNs)
}

// TraceID returns the trace id of the traces whose root is the process
// (pid, startNs) of this boot (see procid.IDs.TraceID).
func (m *Model) TraceID(pid uint32, startNs uint64) pcommon.TraceID {
	return m.ids.TraceID(pid, startNs)
}

// Apply updates the model with ev, the next event in ticket order, and
// returns the trace and span ids the event's log record carries: those of
// the event's process (for a fork, the child). They are empty for an event
// of no known process (a thread event of an unknown process, a Synth event).
// A Snapshot event is handed to AddRunning. Apply keeps no reference to ev.
func (m *Model) Apply(ev *event.Event) (tr pcommon.TraceID, sp pcommon.SpanID) {
	if ev.KTime > m.lastKTime {
		m.lastKTime = ev.KTime
	}
	var p *proc
	switch ev.Type {
	case event.Fork:
		p = m.fork(ev)
	case event.Exec:
		tr, sp = m.exec(ev)
	case event.Exit:
		tr, sp = m.exit(ev)
	case event.ThreadStart, event.ThreadExit:
		p = m.thread(ev)
	case event.Snapshot:
		m.addRunning(ev)
		if p = m.lookup(ev.PID, ev.StartNs); p == nil {
			k := key{ev.PID, ev.StartNs}
			if g, ok := m.ghosts.m[k]; ok {
				tr, sp = g.traceID, g.spanID
			} else if g, ok := m.tombstones.m[k]; ok {
				tr, sp = g.traceID, g.spanID
			}
		}
	}
	if p != nil {
		tr, sp = p.traceID, p.spanID
	}
	if m.bytes > m.cfg.MaxMemory {
		m.relieve() // after the ids are read: it may recycle p
	}
	return tr, sp
}

// AddRunning adds the process of ev, a Snapshot event (a process alive when
// the receiver started), and reports whether it was added. Its span starts
// at the process's start time and has seq.process.seen_at_start=true. It is
// ignored when the process is already known (the tracepoints are attached
// before the snapshot is taken, so a process may arrive both ways), was
// evicted, or has exited (until EndSnapshot). Feed the snapshot in start
// time order (parents before children) to give children their parent's
// trace.
func (m *Model) AddRunning(ev *event.Event) bool {
	ok := m.addRunning(ev)
	if m.bytes > m.cfg.MaxMemory {
		m.relieve()
	}
	return ok
}

func (m *Model) addRunning(ev *event.Event) bool {
	if ev.KTime > m.lastKTime {
		m.lastKTime = ev.KTime
	}
	k := key{ev.PID, ev.StartNs}
	if m.lookup(ev.PID, ev.StartNs) != nil {
		m.stats.Deduplicated++
		return false
	}
	if _, ok := m.ghosts.m[k]; ok {
		m.stats.Deduplicated++
		return false
	}
	if _, ok := m.tombstones.m[k]; ok {
		m.stats.Deduplicated++
		return false
	}
	p := m.newProc(ev, startOf(ev))
	p.flags |= flagSeenAtStart
	if ev.Filename != "" {
		m.setPath(p, ev.Filename)
		m.setArgs(p, ev)
		p.flags |= flagExec
	}
	m.insert(p)
	m.stats.SeenAtStart++
	return true
}

// startOf is the boot time a span first seen mid-life starts at.
func startOf(ev *event.Event) uint64 {
	if ev.StartNs != 0 {
		return ev.StartNs
	}
	return ev.KTime
}

func (m *Model) fork(ev *event.Event) *proc {
	if p := m.lookup(ev.PID, ev.StartNs); p != nil {
		m.stats.Deduplicated++ // its snapshot came first
		return p
	}
	p := m.newProc(ev, ev.KTime)
	m.insert(p)
	return p
}

func (m *Model) exec(ev *event.Event) (pcommon.TraceID, pcommon.SpanID) {
	p := m.lookup(ev.PID, ev.StartNs)
	if p == nil {
		if g, ok := m.ghosts.m[key{ev.PID, ev.StartNs}]; ok {
			m.stats.AfterEviction++
			m.stats.Redacted += uint64(ev.Redacted) // its log record carries them
			return g.traceID, g.spanID
		}
		m.stats.Unknown++
		p = m.newProc(ev, startOf(ev))
		p.flags |= flagPartial
		m.insert(p)
	}
	m.setName(p, ev.Comm)
	m.setPath(p, ev.Filename)
	args, data := m.setArgs(p, ev)
	p.flags |= flagExec
	p.uid, p.gid, p.sid = ev.UID, ev.GID, ev.SID
	m.setCgroup(p, ev.CgroupID)
	if e := m.addEvent(p, kindExec, ev); e != nil {
		e.path = ev.Filename
		p.data += len(e.path)
		e.redacted = p.flags&flagRedacted != 0
		e.truncated = p.flags&flagTruncated != 0
		m.addEventArgs(p, len(p.events)-1, args, data)
	}
	m.recharge(p)
	return p.traceID, p.spanID
}

func (m *Model) exit(ev *event.Event) (pcommon.TraceID, pcommon.SpanID) {
	k := key{ev.PID, ev.StartNs}
	p := m.lookup(ev.PID, ev.StartNs)
	if p == nil {
		if g, ok := m.ghosts.m[k]; ok {
			delete(m.ghosts.m, k)
			m.stats.AfterEviction++
			if m.snapshotting {
				m.tombstones.put(k, g)
			}
			return g.traceID, g.spanID
		}
		m.stats.Unknown++
		p = m.newProc(ev, startOf(ev))
		p.flags |= flagPartial
		m.insert(p) // ends older holders of the pid, as for any new process
	}
	m.remove(p)
	p.endTime = m.wall(ev.KTime)
	p.exitStatus = ev.ExitStatus
	p.flags |= flagExited
	p.uid, p.gid = ev.UID, ev.GID
	m.setCgroup(p, ev.CgroupID)
	tr, sp := p.traceID, p.spanID
	if m.snapshotting {
		m.tombstones.put(k, ghost{tr, sp, false})
	}
	m.finish(p, false) // p may be recycled
	return tr, sp
}

func (m *Model) thread(ev *event.Event) *proc {
	// A thread event carries the thread's start, not its process's: take the
	// newest process with that pid that started before the thread.
	p := m.procs[ev.PID]
	for p != nil && p.start > ev.StartNs {
		p = p.next
	}
	if p == nil {
		p = m.procs[ev.PID]
	}
	if p == nil || !m.cfg.ThreadEvents {
		return p
	}
	kind := kindThreadStart
	if ev.Type == event.ThreadExit {
		kind = kindThreadExit
	}
	if m.addEvent(p, kind, ev) != nil {
		m.recharge(p)
	}
	return p
}

// addEvent appends a span event to p, or returns nil and counts it when p
// has MaxSpanEvents already.
func (m *Model) addEvent(p *proc, kind uint8, ev *event.Event) *spanEvent {
	if len(p.events) >= m.cfg.MaxSpanEvents {
		p.droppedEvents++
		m.stats.DroppedEvents++
		return nil
	}
	p.events = append(p.events, spanEvent{kind: kind, tid: ev.TID, time: m.wall(ev.KTime), ticket: ev.Ticket})
	if p.flags&flagInEventsQ == 0 {
		p.flags |= flagInEventsQ
		m.eventsQ.push(p, m.live())
	}
	return &p.events[len(p.events)-1]
}

// newProc returns an entry for the process of ev, its span starting at boot
// time start, its ids and parent resolved. It is not in the table yet.
func (m *Model) newProc(ev *event.Event, start uint64) *proc {
	var p *proc
	if n := len(m.free); n > 0 {
		p = m.free[n-1]
		m.free[n-1] = nil
		m.free = m.free[:n-1]
	} else {
		p = new(proc)
	}
	p.pid, p.ppid, p.uid, p.gid, p.sid = ev.PID, ev.PPID, ev.UID, ev.GID, ev.SID
	p.start, p.parentStart = ev.StartNs, ev.ParentStartNs
	m.setCgroup(p, ev.CgroupID)
	p.startTime = m.wall(start)
	p.creation = m.wall(ev.StartNs)
	if ev.ParentStartNs != 0 {
		p.parentCreation = m.wall(ev.ParentStartNs)
	}
	m.setName(p, ev.Comm)
	p.spanID = m.SpanID(ev.PID, ev.StartNs)

	// The parent: live, or evicted but remembered.
	var (
		ptrace pcommon.TraceID
		pspan  pcommon.SpanID
		proot  bool
		known  bool
	)
	if pp := m.lookup(ev.PPID, ev.ParentStartNs); pp != nil {
		ptrace, pspan, proot, known = pp.traceID, pp.spanID, pp.flags&flagRootParent != 0, true
	} else if g, ok := m.ghosts.m[key{ev.PPID, ev.ParentStartNs}]; ok {
		ptrace, pspan, proot, known = g.traceID, g.spanID, g.rootParent, true
	}
	// A fork's comm is the forking thread's name now: a parent that renamed
	// itself after its exec (tmux, runc) is recognised by it.
	if ev.Type == event.Fork && len(m.rootParents) > 0 {
		if _, ok := m.rootParents[ev.Comm]; ok {
			proot = true
		}
	}
	if !known || proot || ev.PPID <= 2 || (m.cfg.SessionLeaders && ev.SID == ev.PPID) {
		p.traceID = m.TraceID(ev.PID, ev.StartNs)
		if known {
			p.linkTraceID, p.linkSpanID = ptrace, pspan
			p.flags |= flagLink
		}
	} else {
		p.traceID, p.parentSpanID = ptrace, pspan
	}
	return p
}

func (m *Model) setName(p *proc, name string) {
	p.data += len(name) - len(p.name)
	p.name = name
	if len(m.rootParents) == 0 {
		return
	}
	if _, ok := m.rootParents[name]; ok {
		p.flags |= flagRootParent
	} else {
		p.flags &^= flagRootParent
	}
}

// lookup returns the live process (pid, start), nil if none.
func (m *Model) lookup(pid uint32, start uint64) *proc {
	for p := m.procs[pid]; p != nil; p = p.next {
		if p.start == start {
			return p
		}
	}
	return nil
}

// insert adds p to the table, evicting the oldest-started process if the
// table is full.
//
// Older live entries with p's pid are finished first, marked exit missed: a
// pid is not reused while its task, or its zombie, exists, so a new process
// with that pid proves the old one exited, and its exit event was lost.
func (m *Model) insert(p *proc) {
	for q := m.procs[p.pid]; q != nil; q = m.procs[p.pid] {
		if q.start >= p.start {
			break // a newer one is already there (p is a late snapshot entry)
		}
		m.remove(q)
		m.ghosts.put(key{q.pid, q.start}, ghost{q.traceID, q.spanID, q.flags&flagRootParent != 0})
		q.endTime = p.startTime
		q.flags |= flagExitMissed
		m.stats.ExitMissed++
		m.finish(q, false)
	}
	if len(m.heap) >= m.cfg.MaxProcesses {
		m.evict()
	}
	p.next = m.procs[p.pid]
	m.procs[p.pid] = p
	p.heapIdx = len(m.heap)
	m.heap = append(m.heap, p)
	m.up(p.heapIdx)
	m.stats.Started++
	m.recharge(p)
}

// remove takes p out of the table.
func (m *Model) remove(p *proc) {
	head := m.procs[p.pid]
	switch {
	case head == p && p.next == nil:
		delete(m.procs, p.pid)
	case head == p:
		m.procs[p.pid] = p.next
	default:
		for q := head; q != nil; q = q.next {
			if q.next == p {
				q.next = p.next
				break
			}
		}
	}
	p.next = nil

	i, n := p.heapIdx, len(m.heap)-1
	if i != n {
		m.heap[i] = m.heap[n]
		m.heap[i].heapIdx = i
	}
	m.heap[n] = nil
	m.heap = m.heap[:n]
	if i != n {
		m.down(i)
		m.up(i)
	}
	p.heapIdx = -1
}

func (m *Model) evict() *proc {
	p := m.heap[0]
	m.remove(p)
	m.ghosts.put(key{p.pid, p.start}, ghost{p.traceID, p.spanID, p.flags&flagRootParent != 0})
	p.endTime = m.wall(m.lastKTime)
	p.flags |= flagEvicted
	m.stats.Evicted++
	m.finish(p, false)
	return p
}

// finish queues p for AppendFinished; force ignores MaxFinished.
func (m *Model) finish(p *proc, force bool) {
	if p.endTime < p.startTime {
		p.endTime = p.startTime
	}
	m.stats.Finished++
	if !force && len(m.finished)-m.fhead >= m.cfg.MaxFinished {
		m.stats.DroppedSpans++
		m.recycle(p)
		return
	}
	m.finished = append(m.finished, p)
}

// setArgs keeps the argv of ev (its secrets already replaced: Redact) cut
// at MaxArgs and MaxArgsBytes, as the process's last exec, and returns
// what it kept. Spans and events with a secret replaced carry
// seq.args.redacted; Stats.Redacted counts the values replaced.
func (m *Model) setArgs(p *proc, ev *event.Event) ([]string, int) {
	args, n := ev.Args, ev.Redacted
	args, data, cut := capArgs(args, m.cfg.MaxArgs, m.cfg.MaxArgsBytes)
	if n > 0 && !cut {
		// What redaction kept is substrings of the exec's argv string,
		// which the secret filled: keep a copy of what is charged.
		args = compactArgs(args, data)
	}
	if len(args) < len(p.args) {
		clear(p.args[len(args):])
	}
	p.args = append(p.args[:0], args...)
	p.data += data - p.argsData
	p.argsData = data
	p.flags &^= flagRedacted | flagTruncated
	if n > 0 {
		p.flags |= flagRedacted
		m.stats.Redacted += uint64(n)
	}
	if cut {
		m.stats.ArgsTruncated++
	}
	if cut || ev.ArgsTruncated() {
		p.flags |= flagTruncated
	}
	return args, data
}

// capArgs returns the first arguments of args that hold at most maxN
// arguments and maxBytes bytes (each with its NUL; the last one kept may be
// cut), their bytes (NULs not counted), and whether it cut. What it keeps of
// a cut list is a copy: the strings of a long list share one allocation,
// which a substring would keep.
func capArgs(args []string, maxN, maxBytes int) ([]string, int, bool) {
	data := 0
	for _, a := range args {
		data += len(a)
	}
	if len(args) <= maxN && data+len(args) <= maxBytes {
		return args, data, false
	}
	var b strings.Builder
	left := maxBytes
	n := 0
	for _, a := range args[:min(len(args), maxN)] {
		if left <= 0 {
			break
		}
		if len(a) >= left {
			a = strings.ToValidUTF8(a[:left-1], "")
		}
		b.WriteString(a)
		b.WriteByte(0)
		left -= len(a) + 1
		n++
	}
	out := make([]string, 0, n)
	s := b.String()
	for range n {
		i := strings.IndexByte(s, 0)
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out, b.Len() - n, true
}

// compactArgs copies args (data bytes) into one allocation of their own.
func compactArgs(args []string, data int) []string {
	var b strings.Builder
	b.Grow(data)
	for _, a := range args {
		b.WriteString(a)
	}
	s := b.String()
	out := make([]string, len(args))
	for i, a := range args {
		out[i], s = s[:len(a)], s[len(a):]
	}
	return out
}

// setPath sets the executable path of p's last exec.
func (m *Model) setPath(p *proc, path string) {
	p.data += len(path) - len(p.execPath)
	p.execPath = path
}

// setCgroup records the process's cgroup, resolved now: it may be gone by
// the time the span is built.
func (m *Model) setCgroup(p *proc, id uint64) {
	if p.cg != nil && p.cgroup == id {
		return
	}
	p.cgroup, p.cg = id, nil
	if m.cfg.Cgroups != nil {
		p.cg = m.cfg.Cgroups(id)
	}
}

// Recycled entries keep their slices up to these capacities: a free list of
// maxFree entries holds at most ~2.5 KiB each, outside the budget.
const (
	maxFreeArgs   = 32
	maxFreeArena  = 64
	maxFreeEvents = 8
)

func (m *Model) recycle(p *proc) {
	m.bytes -= p.bytes
	p.bytes = 0
	p.gen++ // its queue entries are stale now
	if len(m.free) >= maxFree {
		*p = proc{gen: p.gen, heapIdx: -1} // a stale queue entry may keep it a while
		return
	}
	clear(p.args)
	clear(p.arena)
	clear(p.events)
	q := proc{args: p.args[:0], arena: p.arena[:0], events: p.events[:0], heapIdx: -1, gen: p.gen}
	if cap(q.args) > maxFreeArgs {
		q.args = nil
	}
	if cap(q.arena) > maxFreeArena {
		q.arena = nil
	}
	if cap(q.events) > maxFreeEvents {
		q.events = nil
	}
	*p = q
	m.free = append(m.free, p)
}

// CloseAll ends the span of every live process at boot time endBootNs, with
// seq.process.running=true, and empties the table: the next AppendFinished
// returns them (MaxFinished does not apply), oldest first.
func (m *Model) CloseAll(endBootNs uint64) {
	live := slices.Clone(m.heap)
	slices.SortFunc(live, func(a, b *proc) int {
		if less(a, b) {
			return -1
		}
		return 1
	})
	end := m.wall(endBootNs)
	for _, p := range live {
		m.remove(p)
		p.endTime = end
		p.flags |= flagRunning
		m.finish(p, true)
	}
	clear(m.procs)
}

// Heap of live processes, ordered by start time, then pid.

func less(a, b *proc) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	return a.pid < b.pid
}

func (m *Model) swap(i, j int) {
	h := m.heap
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

func (m *Model) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !less(m.heap[i], m.heap[parent]) {
			return
		}
		m.swap(i, parent)
		i = parent
	}
}

func (m *Model) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && less(m.heap[r], m.heap[l]) {
			c = r
		}
		if !less(m.heap[c], m.heap[i]) {
			return
		}
		m.swap(i, c)
		i = c
	}
}
