// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/ringmap"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
)

// Limits of the programs (bpf/h2/h2.bpf.c).
const (
	// MaxHeaderCap bounds Options.HeaderCap: the payload bytes copied of one
	// HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM or GOAWAY frame.
	MaxHeaderCap = 1 << 20
	// BoundedSteps is H2_STEPS_BOUNDED: the walk's steps per call (a frame
	// header, a payload copied or skipped, an iovec) where the kernel has no
	// bpf_loop; with it, 8192.
	BoundedSteps = 1024
	// MinBurst is the least bucket of Options.Rate: a few header blocks.
	MinBurst = 64 << 10
	// MinPending is the least default Options.MaxPending.
	MinPending = 16384
	// DefaultMaxUsers is the default Options.MaxUsers.
	DefaultMaxUsers = 4096
	// MaxFrameCost bounds Options.FrameCost.
	MaxFrameCost = 64 << 10
	// lruSlack is the kernel's LOCAL_FREE_TARGET (kernel/bpf/bpf_lru_list.h):
	// the free entries of an LRU map one CPU takes at a time.
	lruSlack = 128
)

// Options configure Open.
type Options struct {
	Hook      Hook // "" is auto
	RingSlots int  // 128-byte slots, a power of two
	MaxConns  int  // HTTP/2 connections the kernel tracks at once (LRU, h2_conns)
	// MaxPending bounds the connections not classified yet (every TCP
	// connection, from its establishment to its first bytes; LRU,
	// h2_pending) and, apart, the keys of those found not HTTP/2 (LRU,
	// h2_not_h2). 0: max(4*MaxConns, MinPending). A flood of connections
	// evicts only its own kind: never an HTTP/2 connection's state.
	MaxPending int
	// HeaderCap: payload bytes copied per header-carrying frame (the rest
	// counted cut); of an HTTP/1.x call that starts a message, its first
	// bytes copied (the rest skipped, H1_BODY_CAP of calls in a body).
	HeaderCap int
	// HTTP1 also captures HTTP/1.x connections (a request or status line
	// at a call's start; bpf/h2/detect.h); NoHTTP2 leaves HTTP/2 ones out.
	HTTP1, NoHTTP2 bool
	// SkipPID: the calls of this process (the collector: os.Getpid()) are
	// skipped (self_calls), so that its own exports never become spans it
	// exports again; 0 skips none (tests whose peers are the test binary).
	// It is a pid of the caller's pid namespace (a container's, without
	// the host's pids: the programs compare it there, selfPIDNS).
	SkipPID int
	MaxIov  int // iovecs walked per call (0: 1024)
	// Rate is each connection's share of the ring, in bytes copied a second
	// (a token bucket: see burst); a call made with
	// the bucket empty is not walked, counted as throttled, and its
	// direction finds its frames again later. 0: no limit. Without it one
	// process pair writing header blocks as fast as loopback takes them laps
	// the ring, and every other connection's records are lost with it.
	Rate int
	// FrameCost is what each frame walked costs a share on top of the bytes
	// copied for it (tokens of Rate and UserRate): the tracker pays per
	// frame, whatever its size, so a flood of the smallest frames (a 13-byte
	// RST_STREAM) would otherwise cost it many times what the same share
	// costs in header blocks. An HTTP/1.x call costs it too (a record of
	// its own: a body written a byte a call). 0: bytes only.
	FrameCost int
	// UserRate is each user's share of the ring (uid: all the connections
	// whose calls one uid makes, together), in the tokens of Rate a second; a
	// call made with its user's bucket empty is not walked, counted as
	// throttled_user. 0: no limit.
	UserRate int
	// MaxUsers bounds the users whose share is kept (LRU; 0: DefaultMaxUsers).
	MaxUsers int
	// TLS also captures the plaintext of TLS sessions. OpenSSL: uprobes on
	// SSL_write, SSL_read, SSL_write_ex, SSL_read_ex (entry and return) and
	// SSL_free in every libssl found mapped by a running process, in LibSSL,
	// or at the usual paths. Go crypto/tls: uprobes on (*Conn).Write, on
	// (*Conn).Read and every RET of it, and on Close (after their stack
	// checks), in the executable of every running process that has them and
	// in GoBinaries.
	TLS        bool
	LibSSL     []string
	GoBinaries []string
	// Filter picks the processes whose files the TLS probes go in (all by
	// default). The collector's own executable is never probed.
	Filter ProcFilter
	// ProbeSelf probes the collector's own executable too: for tests whose
	// TLS peers are the test binary itself; never set in the collector.
	ProbeSelf bool
	// BoundedLoop walks the frames in the bounded loop that kernels without
	// bpf_loop (before 5.17) get, on any kernel (for tests).
	BoundedLoop bool
	// SingleUprobes attaches one perf-event uprobe per probe point even
	// where the kernel has uprobe_multi links (for tests and comparison).
	SingleUprobes bool
	// NoFetch loads the programs built without BPF atomic fetch (the h2nf
	// objects: raw_syscalls only, records in a ring buffer that the reader
	// numbers), which kernels before Linux 5.12 get, on any kernel (tests).
	NoFetch bool
}

// Open checks the kernel, loads and attaches the programs and maps the ring.
// Auto falls back to HookRawSyscalls where the kernel refuses the syscalls
// hook. On any error nothing stays loaded.
func Open(o Options) (*Capture, error) {
	if o.RingSlots <= 0 || o.RingSlots&(o.RingSlots-1) != 0 {
		return nil, fmt.Errorf("ring size %d slots is not a power of two", o.RingSlots)
	}
	if o.MaxConns <= 0 {
		return nil, fmt.Errorf("max connections %d: must be positive", o.MaxConns)
	}
	if o.HeaderCap <= 0 || o.HeaderCap > MaxHeaderCap {
		return nil, fmt.Errorf("header cap %d out of range 1..%d", o.HeaderCap, MaxHeaderCap)
	}
	if o.MaxIov <= 0 {
		o.MaxIov = 1024
	}
	if o.FrameCost < 0 || o.FrameCost > MaxFrameCost {
		return nil, fmt.Errorf("frame cost %d out of range 0..%d", o.FrameCost, MaxFrameCost)
	}
	if o.Rate < 0 || o.UserRate < 0 {
		return nil, fmt.Errorf("capture rates %d (per connection), %d (per user): must not be negative", o.Rate, o.UserRate)
	}
	if o.MaxUsers <= 0 {
		o.MaxUsers = DefaultMaxUsers
	}

	p, err := Preflight(o.Hook, o.NoFetch)
	if err != nil {
		return nil, err
	}
	_ = rlimit.RemoveMemlock()
	return openOrFallBack(o, p)
}

// openOrFallBack opens what Preflight planned; for auto (o.Hook) a
// refused syscalls hook falls back to HookRawSyscalls.
func openOrFallBack(o Options, p Plan) (*Capture, error) {
	c, err := open(o, p)
	if !errors.Is(err, ErrSyscallHookRefused) || (o.Hook != "" && o.Hook != HookAuto) {
		return c, err
	}
	raw, perr := Preflight(HookRawSyscalls, o.NoFetch)
	if perr != nil {
		return nil, errors.Join(err, perr)
	}
	raw.Why = kernelfeatures.SockLength.Lacks(kernelfeatures.SockLength.Probe()) + ", and it refuses BPF programs on the syscalls:sys_exit_* tracepoints: using raw_syscalls:sys_exit and the fd walk"
	return open(o, raw)
}

// burst is the most a connection copies at once under Options.Rate: an
// eighth of a second's worth, at least MinBurst, and at most a sixteenth of
// the ring (two flooding ends must not fill it between two reads).
func burst(rate, ringBytes int) int {
	return max(min(rate/8, ringBytes/16), MinBurst)
}

// open opens what p planned in four steps: the spec of its programs, loaded,
// the ring mapped, and the programs attached. The ring comes before the
// hooks: nothing is written before it can be read.
func open(o Options, p Plan) (_ *Capture, err error) {
	multi := o.TLS && !o.SingleUprobes && kernelfeatures.UprobeMulti.Present()
	loop, why := frameLoop(o, p)
	spec, err := o.spec(p, multi, loop)
	if err != nil {
		return nil, err
	}
	c := &Capture{hook: p.Hook, why: why, multi: multi}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.load(spec, o.programs(p.Hook)); err != nil {
		return nil, err
	}
	if err := c.mapRing(o.RingSlots, p.NoFetch); err != nil {
		return nil, err
	}
	if err := c.attach(o); err != nil {
		return nil, err
	}
	return c, nil
}

// frameLoop is how the programs walk the frames, and p.Why with it said:
// kernels before 5.17 have no bpf_loop, and the walk then runs in a bounded
// loop of global functions (h2_step_bounded), fewer steps per call. The h2nf
// objects have only that.
func frameLoop(o Options, p Plan) (bpfLoop bool, why string) {
	err := kernelfeatures.BPFLoop.Probe()
	if err == nil && !o.BoundedLoop && !p.NoFetch {
		return true, p.Why
	}
	reason := "forced"
	if err != nil {
		reason = kernelfeatures.BPFLoop.Lacks(err)
	}
	return false, fmt.Sprintf("%s; the frame walk runs in a bounded loop of %d steps per call (%s)", p.Why, BoundedSteps, reason)
}

// programs names the programs open loads for hook, with the TLS probes.
func (o Options) programs(hook Hook) []string {
	progs := append(hookPrograms(hook), "h2_state")
	if o.TLS {
		progs = append(progs, tlsPrograms...)
	}
	return progs
}

// spec is the embedded object's spec for p: only the programs open loads,
// the TLS probes as uprobe_multi where multi, the maps sized and the
// programs' settings set.
func (o Options) spec(p Plan, multi, bpfLoop bool) (*ebpf.CollectionSpec, error) {
	load := loadH2
	if p.NoFetch {
		load = loadH2nf
	}
	spec, err := load()
	if err != nil {
		return nil, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	progs := o.programs(p.Hook)
	for name := range spec.Programs {
		if !slices.Contains(progs, name) {
			delete(spec.Programs, name)
		}
	}
	if multi {
		for _, p := range tlsPrograms {
			spec.Programs[p].AttachType = ebpf.AttachTraceUprobeMulti
		}
	}
	if err := o.sizeMaps(spec, p.NoFetch); err != nil {
		return nil, err
	}
	return spec, o.setVariables(spec, bpfLoop)
}

// sizeMaps sizes the ring and the connection maps, and drops the maps the
// programs loaded do not use.
func (o Options) sizeMaps(spec *ebpf.CollectionSpec, noFetch bool) error {
	if !o.TLS {
		delete(spec.Maps, "h2_go_calls")
		// The socket programs name these two in h2_tls_mark, which
		// h2_tls_on = 0 leaves dead: the least that loads.
		spec.Maps["h2_tls_calls"].MaxEntries = 64
		spec.Maps["h2_ssl_isn"].MaxEntries = 64
	}
	delete(spec.Maps, "ring_scratchbuf") // ring/producer.h's; h2 stages in h2_scratchbuf
	spec.Maps["ring_slots"].MaxEntries = uint32(o.RingSlots)
	if noFetch {
		// The ring's bytes go to the ring buffer (a power of two of pages);
		// the slots and the doorbell are left unused.
		spec.Maps["ring_rb"].MaxEntries = uint32(max(o.RingSlots*ring.SlotSize, os.Getpagesize()))
		spec.Maps["ring_slots"].MaxEntries = 1
		delete(spec.Maps, "ring_doorbell")
	}
	// The connection maps are preallocated (LRU hash), in kernel memory, per
	// entry: h2_conns and h2_pending about 210 bytes (48 of element head, the
	// 16-byte key, the 128-byte struct h2_conn, 16 of hash bucket), h2_not_h2
	// about 90 (a 1-byte value rounded to 8). Each gets lruSlack entries per
	// possible CPU on top: the kernel's LRU (before Linux 6.16) moves free
	// entries to a CPU's own list that many at a time, and evicts live
	// entries when the shared list is empty while other CPUs' lists still
	// hold free ones (seen on 6.1: a 16-entry h2_conns lost live HTTP/2
	// connections with 4 in use). MaxConns 4096, the default MaxPending
	// 16384, 8 CPUs: 1.0 + 3.6 + 1.5 MiB.
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("possible CPUs: %w", err)
	}
	pending := o.MaxPending
	if pending <= 0 {
		pending = max(4*o.MaxConns, MinPending)
	}
	spec.Maps["h2_conns"].MaxEntries = uint32(o.MaxConns + lruSlack*ncpu)
	// HTTP/1.x connections that carried a request line: as many, apart
	// (none when HTTP/1.x is off: the least that loads).
	spec.Maps["h1_conns"].MaxEntries = uint32(o.MaxConns + lruSlack*ncpu)
	if !o.HTTP1 {
		spec.Maps["h1_conns"].MaxEntries = 1
	}
	spec.Maps["h2_pending"].MaxEntries = uint32(pending + lruSlack*ncpu)
	spec.Maps["h2_not_h2"].MaxEntries = uint32(pending + lruSlack*ncpu)
	// The users' shares: 16 bytes of value, about 90 bytes an entry.
	spec.Maps["h2_users"].MaxEntries = uint32(o.MaxUsers + lruSlack*ncpu)
	return nil
}

// setVariables sets the programs' settings (volatile const in h2.bpf.c).
// With the TLS probes (h2_tls_on), socket calls look for an OpenSSL call of
// their thread (h2_tls_mark): one map lookup more per call.
func (o Options) setVariables(spec *ebpf.CollectionSpec, bpfLoop bool) error {
	flag := func(b bool) uint32 {
		if b {
			return 1
		}
		return 0
	}
	for name, v := range map[string]any{
		"ring_mask":     uint64(o.RingSlots - 1),
		"h2_hdr_cap":    uint32(o.HeaderCap),
		"h2_max_iov":    uint32(o.MaxIov),
		"h2_rate":       uint64(o.Rate),
		"h2_burst":      uint64(burst(o.Rate, o.RingSlots*ring.SlotSize)),
		"h2_frame_cost": uint64(o.FrameCost),
		"h2_user_rate":  uint64(o.UserRate),
		"h2_user_burst": uint64(burst(o.UserRate, o.RingSlots*ring.SlotSize)),
		"h2_have_loop":  flag(bpfLoop),
		"h2_tls_on":     flag(o.TLS),
		"h2_http1_on":   flag(o.HTTP1),
		"h2_http2_on":   flag(!o.NoHTTP2),
		"h2_self_tgid":  uint32(o.SkipPID),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	if o.SkipPID == 0 {
		return nil
	}
	dev, ino, err := selfPIDNS()
	if err != nil {
		return err
	}
	if err := spec.Variables["h2_self_pidns_dev"].Set(dev); err != nil {
		return fmt.Errorf("set h2_self_pidns_dev: %w", err)
	}
	if err := spec.Variables["h2_self_pidns_ino"].Set(ino); err != nil {
		return fmt.Errorf("set h2_self_pidns_ino: %w", err)
	}
	return nil
}

// initPIDNSIno is the inode of the initial pid namespace (the kernel's
// PROC_PID_INIT_INO).
const initPIDNSIno = 0xeffffffc

// selfPIDNS names the caller's pid namespace (the device and inode of
// /proc/self/ns/pid) when it is not the initial one (0, 0: it is, and
// os.Getpid() is the pid the programs see). In a container without the
// host's pids, os.Getpid() is a pid of the container's namespace: compared
// with the host's (bpf_get_current_pid_tgid) it named another process,
// whose calls were skipped, while the collector's own were traced.
func selfPIDNS() (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, 0, fmt.Errorf("the collector's pid namespace: %w", err)
	}
	if st.Ino == initPIDNSIno {
		return 0, 0, nil
	}
	return uint64(st.Dev), st.Ino, nil
}

// load loads spec into the kernel and keeps the programs progs.
func (c *Capture) load(spec *ebpf.CollectionSpec, progs []string) (err error) {
	if c.coll, err = bpfload.NewCollection(spec); err != nil {
		if errors.Is(err, unix.EPERM) {
			err = kernelfeatures.PermissionDenied(who, err)
		}
		return fmt.Errorf("load the grpc receiver's BPF programs: %w", err)
	}
	for _, name := range progs {
		c.progs = append(c.progs, c.coll.Programs[name])
	}
	return nil
}

// mapRing maps the ring the reader reads: the sequencer's slots, or for the
// h2nf programs (noFetch) the control block and the ring buffer.
func (c *Capture) mapRing(slots int, noFetch bool) (err error) {
	if noFetch {
		return c.mapRingBuf()
	}
	if c.ring, err = ringmap.Map(c.coll, slots); err != nil {
		return err
	}
	r, err := ring.NewReader(c.ring.Control(), c.ring.Slots(), ring.StartAt(0))
	if err != nil {
		return err
	}
	c.reader = r
	return nil
}

// mapRingBuf maps the control block (the head the programs count) and opens
// the ring buffer's numbering reader: the h2nf programs (Plan.NoFetch).
func (c *Capture) mapRingBuf() (err error) {
	if c.ring, err = ringmap.Map(c.coll, 0); err != nil {
		return err
	}
	counters := c.coll.Maps["ring_counters"]
	failed := func() (uint64, uint64, error) {
		var per []h2RingStats
		if err := counters.Lookup(uint32(0), &per); err != nil {
			return 0, 0, fmt.Errorf("read ring_counters: %w", err)
		}
		var n uint64
		for _, p := range per {
			n += p.OutputFailed
		}
		return n, 0, nil
	}
	// Records as RING_RB writes them: no header, numbered in ring order,
	// however short (ring_commit writes at least a byte): the decoder
	// judges and counts the malformed. The tickets of failed outputs
	// (ring_stats.output_failed) become gaps.
	rec := transport.Records{MinLen: 1, Numbered: true, Failed: failed, FailReason: ring.OutputFailed}
	if c.rb, err = transport.NewRingBuf(c.coll.Maps["ring_rb"], c.ring.Control(), 0, rec); err != nil {
		return err
	}
	c.reader = c.rb
	return nil
}

// attach attaches the programs: connections first (h2_state), so that a
// connection established from now on has its offsets from the handshake;
// then the TLS probes, then the hook that sees the bytes.
func (c *Capture) attach(o Options) error {
	if err := c.attachBTF("h2_state", "sock:inet_sock_set_state"); err != nil {
		return err
	}
	if o.TLS {
		if err := c.attachTLSProbes(o); err != nil {
			return err
		}
	}
	for _, pt := range btfHooks[c.hook] {
		if err := c.attachBTF(pt[0], pt[1]); err != nil {
			return err
		}
	}
	if c.hook == HookSyscalls {
		return c.attachSyscallExits()
	}
	return nil
}

// attachTLSProbes attaches the OpenSSL and Go crypto/tls probes to the files
// o names and to those of the running processes o.Filter picks.
func (c *Capture) attachTLSProbes(o Options) error {
	c.filter, c.probeSelf, c.selfPID = o.Filter, o.ProbeSelf, strconv.Itoa(os.Getpid())
	if self, err := os.Open("/proc/self/exe"); err == nil {
		c.self, _ = idOf(self)
		_ = self.Close()
	}
	if err := c.attachTLS(o.LibSSL); err != nil {
		return err
	}
	return c.attachGoTLS(o.GoBinaries)
}

// attachBTF attaches a tp_btf program to its tracepoint.
func (c *Capture) attachBTF(prog, tracepoint string) error {
	l, err := link.AttachTracing(link.TracingOptions{Program: c.coll.Programs[prog], AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		return fmt.Errorf("attach %s: %w", tracepoint, err)
	}
	c.links = append(c.links, l)
	return nil
}

// tracepointLink attaches the syscalls hook's programs (a test replaces it
// to see the refusal where the kernel has none).
var tracepointLink = link.Tracepoint

// attachSyscallExits attaches the syscalls hook's programs to their
// syscalls:sys_exit_* tracepoints (perf events); a refusal is
// ErrSyscallHookRefused, on which auto falls back.
func (c *Capture) attachSyscallExits() error {
	for _, s := range syscallExits {
		l, err := tracepointLink("syscalls", "sys_exit_"+s, c.coll.Programs["h2_sys_"+s], nil)
		// EACCES, as root; cilium/ebpf's perf link error keeps only its text.
		if err != nil && (errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission denied")) {
			return fmt.Errorf("attach syscalls:sys_exit_%s: %w: %w", s, err, ErrSyscallHookRefused)
		}
		if err != nil {
			return fmt.Errorf("attach syscalls:sys_exit_%s: %w", s, err)
		}
		c.links = append(c.links, l)
	}
	return nil
}
