// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ringmap"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls"
)

// ErrSyscallHookRefused is why Open fails where the kernel refuses to attach
// BPF programs to the syscalls:sys_exit_* tracepoints (EACCES as root, e.g. a
// security module's policy on perf events, or a program reading past the
// event's record, as ours did on PREEMPT_RT kernels: bpf/h2.bpf.c) and the
// syscalls hook was asked for. Auto falls back to HookRawSyscalls by itself.
var ErrSyscallHookRefused = errors.New("this kernel refuses BPF programs on the syscalls:sys_exit_* tracepoints " +
	"(permission denied as root): set hook: raw_syscalls (raw_syscalls:sys_exit, a raw tracepoint, not a perf event) " +
	"or hook: auto (which falls back to it)")

// Hook says where the programs see the bytes.
type Hook string

// The hooks.
const (
	// HookAuto: HookSocket where the kernel has the tracepoints, else
	// HookSyscalls, and HookRawSyscalls where the kernel refuses that.
	HookAuto Hook = "auto"
	// HookSocket: tp_btf on sock:sock_send_length and sock:sock_recv_length
	// (Linux 6.3+); they fire on socket I/O only and pass the socket.
	HookSocket Hook = "socket"
	// HookSyscalls: syscalls/sys_exit_{write,writev,sendto,sendmsg,read,readv,
	// recvfrom,recvmsg}, the fd walked to its socket (any kernel).
	HookSyscalls Hook = "syscalls"
	// HookRawSyscalls: tp_btf on raw_syscalls:sys_exit, every system call's
	// exit, the same eight calls picked by number in the program and the
	// same fd walk; a raw tracepoint, not a perf event (any kernel with BTF).
	HookRawSyscalls Hook = "raw_syscalls"
)

// Hooks lists the accepted hook names.
var Hooks = []Hook{HookAuto, HookSocket, HookSyscalls, HookRawSyscalls}

// Limits of the programs (bpf/h2.bpf.c).
const (
	// MaxHeaderCap bounds Options.HeaderCap: the payload bytes copied of one
	// HEADERS, CONTINUATION, PUSH_PROMISE, SETTINGS, RST_STREAM or GOAWAY frame.
	MaxHeaderCap = 1 << 20
	// BoundedSteps is H2_STEPS_BOUNDED: the walk's steps per call (a frame
	// header, a payload copied or skipped, an iovec) where the kernel has no
	// bpf_loop; with it, 8192.
	BoundedSteps = 1024
	slotSize     = 128
	// MinBurst is the least bucket of Options.Rate: a few header blocks.
	MinBurst = 64 << 10
	// MinPending is the least default Options.MaxPending.
	MinPending = 16384
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
	HeaderCap  int // payload bytes copied per header-carrying frame (the rest counted cut)
	MaxIov     int // iovecs walked per call (0: 1024)
	// Rate is each connection's share of the ring, in bytes copied a second
	// (a token bucket: see burst); a call made with
	// the bucket empty is not walked, counted as throttled, and its
	// direction finds its frames again later. 0: no limit. Without it one
	// process pair writing header blocks as fast as loopback takes them laps
	// the ring, and every other connection's records are lost with it.
	Rate int
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
}

// Capture is the loaded, attached programs and their mapped ring.
type Capture struct {
	hook     Hook
	why      string
	coll     *ebpf.Collection
	progs    []*ebpf.Program
	links    []link.Link
	ctl      []byte
	slots    []byte
	ringLen  int
	doorbell *ringmap.Doorbell
	reader   *ring.Reader

	// TLS: the files probed, and the processes looked at (RescanTLS looks
	// at new ones only). tlsMu guards these and links once the capture is
	// open (RescanTLS runs beside the reader).
	tlsMu    sync.Mutex
	libssl   []string
	goBins   []GoBinary
	goSkip   []string
	sslSkip  []string
	detached bool
	// scanMu serializes the scans (Open's, RescanTLS) and guards what only
	// they touch: the files and processes seen.
	scanMu  sync.Mutex
	sslSeen files
	goSeen  files
	pids    map[string]bool
	// closing stops a scan between two processes (Detach).
	closing   atomic.Bool
	tlsFailed atomic.Uint64
	filter    ProcFilter
	// multi: the TLS programs are loaded for uprobe_multi links (Linux
	// 6.6+): one link per program and file, whose close waits for one RCU
	// grace period for all its probe points. A perf-event uprobe's close
	// waits for its own, under a kernel-wide lock: 190 of them took 18 s to
	// close under load, which is what kept the collector from stopping.
	multi     bool
	self      fileID // the collector's executable, never probed
	selfPID   string
	probeSelf bool
}

var socketTracepoints = []string{"sock_send_length", "sock_recv_length"}

// btfHooks are the hooks of BTF raw tracepoints: program and tracepoint.
var btfHooks = map[Hook][][2]string{
	HookSocket:      {{"h2_sock_send", "sock:sock_send_length"}, {"h2_sock_recv", "sock:sock_recv_length"}},
	HookRawSyscalls: {{"h2_raw_sys", "raw_syscalls:sys_exit"}},
}

var syscallExits = []string{"write", "writev", "sendto", "sendmsg", "read", "readv", "recvfrom", "recvmsg"}

// Preflight checks what the programs need and picks the hook for want. It
// names every missing privilege or kernel feature and the fix; why says
// which hook and why.
func Preflight(want Hook) (hook Hook, why string, err error) {
	if missing := sequencer.MissingCapabilities(); len(missing) > 0 {
		return "", "", fmt.Errorf("the grpc receiver needs the capabilities CAP_BPF and CAP_PERFMON (or root); missing %s: run the collector as root or grant them with `setcap cap_bpf,cap_perfmon+ep <collector binary>`", strings.Join(missing, " and "))
	}
	if _, err := os.Stat(sequencer.BTFPath); err != nil {
		return "", "", fmt.Errorf("kernel BTF not found at %s (%v): the grpc receiver needs a kernel built with CONFIG_DEBUG_INFO_BTF=y", sequencer.BTFPath, err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return "", "", fmt.Errorf("read kernel BTF: %w", err)
	}
	has := func(tp string) bool {
		var td *btf.Typedef
		return spec.TypeByName("btf_trace_"+tp, &td) == nil
	}
	if !has("inet_sock_set_state") {
		return "", "", errors.New("kernel BTF has no sock:inet_sock_set_state tracepoint (Linux 4.16+, with BTF): the grpc receiver cannot follow TCP connections on this kernel")
	}
	for _, c := range []struct {
		what  string
		probe func() error
	}{
		{"memory-mappable BPF arrays (BPF_F_MMAPABLE, Linux 5.5)", func() error { return features.HaveMapFlag(features.BPF_F_MMAPABLE) }},
		{"the BPF ring buffer, the reader's doorbell (Linux 5.8)", func() error { return features.HaveMapType(ebpf.RingBuf) }},
		{"BPF atomic fetch-add, exchange and compare-and-exchange (Linux 5.12)", sequencer.ProbeAtomics},
		{"the bpf_task_pt_regs helper, the system call's arguments (Linux 5.15)", func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnTaskPtRegs) }},
	} {
		if err := c.probe(); err != nil {
			return "", "", fmt.Errorf("this kernel lacks %s, which the grpc receiver needs: %w", c.what, err)
		}
	}
	socketOK := has(socketTracepoints[0]) && has(socketTracepoints[1])
	switch want {
	case HookSocket:
		if !socketOK {
			return "", "", errors.New("hook socket: this kernel has no sock:sock_send_length/sock_recv_length tracepoints (Linux 6.3+); set hook: syscalls, raw_syscalls (or auto)")
		}
		return HookSocket, "configured", nil
	case HookSyscalls:
		return HookSyscalls, "configured", checkSyscallTracepoints()
	case HookRawSyscalls:
		if !has("sys_exit") {
			return "", "", errors.New("hook raw_syscalls: kernel BTF has no raw_syscalls:sys_exit tracepoint (CONFIG_HAVE_SYSCALL_TRACEPOINTS); set hook: syscalls or socket (or auto)")
		}
		return HookRawSyscalls, "configured", nil
	case "", HookAuto:
		if socketOK {
			return HookSocket, "the kernel has sock:sock_send_length and sock:sock_recv_length (Linux 6.3+)", nil
		}
		return HookSyscalls, "the kernel lacks sock:sock_send_length (Linux 6.3+): using the system call exits and the fd walk", checkSyscallTracepoints()
	}
	return "", "", fmt.Errorf("unknown hook %q (want %v)", want, Hooks)
}

// checkSyscallTracepoints finds the syscall exit tracepoints in tracefs.
func checkSyscallTracepoints() error {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(dir + "/events/syscalls/sys_exit_write"); err == nil {
			return nil
		}
	}
	return errors.New("the syscalls/sys_exit_* tracepoints are not found in tracefs: mount it (`mount -t tracefs nodev /sys/kernel/tracing`) and use a kernel with CONFIG_FTRACE_SYSCALLS=y, or a Linux 6.3+ kernel (hook: socket), or set hook: raw_syscalls (no tracefs needed)")
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

	hook, why, err := Preflight(o.Hook)
	if err != nil {
		return nil, err
	}
	_ = rlimit.RemoveMemlock()
	return openOrFallBack(o, hook, why)
}

// openOrFallBack opens the hook Preflight picked; for auto (o.Hook) a
// refused syscalls hook falls back to HookRawSyscalls.
func openOrFallBack(o Options, hook Hook, why string) (*Capture, error) {
	c, err := open(o, hook, why)
	if !errors.Is(err, ErrSyscallHookRefused) || (o.Hook != "" && o.Hook != HookAuto) {
		return c, err
	}
	if _, _, perr := Preflight(HookRawSyscalls); perr != nil {
		return nil, errors.Join(err, perr)
	}
	return open(o, HookRawSyscalls, "the kernel lacks sock:sock_send_length (Linux 6.3+) and refuses BPF programs on the syscalls:sys_exit_* tracepoints: using raw_syscalls:sys_exit and the fd walk")
}

// hookPrograms names the programs that see the bytes on hook.
func hookPrograms(hook Hook) []string {
	var progs []string
	for _, pt := range btfHooks[hook] {
		progs = append(progs, pt[0])
	}
	if hook == HookSyscalls {
		for _, s := range syscallExits {
			progs = append(progs, "h2_sys_"+s)
		}
	}
	return progs
}

// tracepointLink attaches the syscalls hook's programs (a test replaces it
// to see the refusal where the kernel has none).
var tracepointLink = link.Tracepoint

// burst is the most a connection copies at once under Options.Rate: an
// eighth of a second's worth, at least MinBurst, and at most a sixteenth of
// the ring (two flooding ends must not fill it between two reads).
func burst(rate, ringBytes int) int {
	return max(min(rate/8, ringBytes/16), MinBurst)
}

// open loads and attaches the programs of hook.
func open(o Options, hook Hook, why string) (_ *Capture, err error) {
	spec, err := loadH2()
	if err != nil {
		return nil, fmt.Errorf("parse embedded BPF object: %w", err)
	}
	progs := append(hookPrograms(hook), "h2_state")
	multi := false
	if o.TLS {
		progs = append(progs, tlsPrograms...)
		if multi = !o.SingleUprobes && features.HaveBPFLinkUprobeMulti() == nil; multi {
			for _, p := range tlsPrograms {
				spec.Programs[p].AttachType = ebpf.AttachTraceUprobeMulti
			}
		}
	} else {
		delete(spec.Maps, "h2_go_calls")
		// The socket programs name these two in h2_tls_mark, which
		// h2_tls_on = 0 leaves dead: the least that loads.
		spec.Maps["h2_tls_calls"].MaxEntries = 64
		spec.Maps["h2_ssl_isn"].MaxEntries = 64
	}
	for name := range spec.Programs {
		if !slices.Contains(progs, name) {
			delete(spec.Programs, name)
		}
	}
	delete(spec.Maps, "seq_scratchbuf") // seq_ring.h's; h2 stages in h2_scratchbuf
	spec.Maps["seq_slots"].MaxEntries = uint32(o.RingSlots)
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
		return nil, fmt.Errorf("possible CPUs: %w", err)
	}
	pending := o.MaxPending
	if pending <= 0 {
		pending = max(4*o.MaxConns, MinPending)
	}
	spec.Maps["h2_conns"].MaxEntries = uint32(o.MaxConns + lruSlack*ncpu)
	spec.Maps["h2_pending"].MaxEntries = uint32(pending + lruSlack*ncpu)
	spec.Maps["h2_not_h2"].MaxEntries = uint32(pending + lruSlack*ncpu)
	for name, v := range map[string]any{
		"seq_ring_mask": uint64(o.RingSlots - 1),
		"h2_hdr_cap":    uint32(o.HeaderCap),
		"h2_max_iov":    uint32(o.MaxIov),
		"h2_rate":       uint64(o.Rate),
		"h2_burst":      uint64(burst(o.Rate, o.RingSlots*slotSize)),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}

	// Kernels before 5.17 have no bpf_loop: the walk then runs in a bounded
	// loop of global functions (h2_step_bounded), fewer steps per call.
	haveLoop := !o.BoundedLoop && features.HaveProgramHelper(ebpf.TracePoint, asm.FnLoop) == nil
	if !haveLoop {
		why += fmt.Sprintf("; the frame walk runs in a bounded loop of %d steps per call (no bpf_loop: Linux 5.17)", BoundedSteps)
		if o.BoundedLoop {
			why = strings.Replace(why, "no bpf_loop: Linux 5.17", "forced", 1)
		}
	}
	var loop uint32
	if haveLoop {
		loop = 1
	}
	if err := spec.Variables["h2_have_loop"].Set(loop); err != nil {
		return nil, fmt.Errorf("set h2_have_loop: %w", err)
	}
	// With the TLS probes, socket calls look for an OpenSSL call of their
	// thread (h2_tls_mark): one map lookup more per call.
	var tlsOn uint32
	if o.TLS {
		tlsOn = 1
	}
	if err := spec.Variables["h2_tls_on"].Set(tlsOn); err != nil {
		return nil, fmt.Errorf("set h2_tls_on: %w", err)
	}

	c := &Capture{hook: hook, why: why, multi: multi}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.coll, err = bpfload.NewCollection(spec); err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("load the grpc receiver's BPF programs: permission denied; it needs CAP_BPF and CAP_PERFMON (or root): %w", err)
		}
		return nil, fmt.Errorf("load the grpc receiver's BPF programs: %w", err)
	}
	for _, name := range progs {
		c.progs = append(c.progs, c.coll.Programs[name])
	}
	// The ring first, then the hooks: nothing is written before it can be read.
	c.ringLen = o.RingSlots * slotSize
	if c.ctl, err = ringmap.Mmap(c.coll.Maps["seq_control"], 128, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return nil, err
	}
	if c.slots, err = ringmap.Mmap(c.coll.Maps["seq_slots"], c.ringLen, unix.PROT_READ); err != nil {
		return nil, err
	}
	if c.doorbell, err = ringmap.NewDoorbell(c.coll.Maps["seq_doorbell"]); err != nil {
		return nil, err
	}
	if c.reader, err = ring.NewReader(c.ctl[:128], c.slots[:c.ringLen], ring.StartAt(0)); err != nil {
		return nil, err
	}
	// Connections first (h2_state), so that a connection established from now
	// on has its offsets from the handshake.
	if err := c.attachBTF("h2_state", "sock:inet_sock_set_state"); err != nil {
		return nil, err
	}
	if o.TLS {
		c.filter, c.probeSelf, c.selfPID = o.Filter, o.ProbeSelf, strconv.Itoa(os.Getpid())
		if self, err := os.Open("/proc/self/exe"); err == nil {
			c.self, _ = idOf(self)
			_ = self.Close()
		}
		if err := c.attachTLS(o.LibSSL); err != nil {
			return nil, err
		}
		if err := c.attachGoTLS(o.GoBinaries); err != nil {
			return nil, err
		}
	}
	for _, pt := range btfHooks[hook] {
		if err := c.attachBTF(pt[0], pt[1]); err != nil {
			return nil, err
		}
	}
	if hook != HookSyscalls {
		return c, nil
	}
	for _, s := range syscallExits {
		l, err := tracepointLink("syscalls", "sys_exit_"+s, c.coll.Programs["h2_sys_"+s], nil)
		// EACCES, as root; cilium/ebpf's perf link error keeps only its text.
		if err != nil && (errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission denied")) {
			return nil, fmt.Errorf("attach syscalls:sys_exit_%s: %w: %w", s, err, ErrSyscallHookRefused)
		}
		if err != nil {
			return nil, fmt.Errorf("attach syscalls:sys_exit_%s: %w", s, err)
		}
		c.links = append(c.links, l)
	}
	return c, nil
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

var tlsPrograms = []string{
	"h2_ssl_write", "h2_ssl_write_ret", "h2_ssl_read", "h2_ssl_read_ret", "h2_ssl_free",
	"h2_ssl_write_ex", "h2_ssl_read_ex", "h2_go_write", "h2_go_read", "h2_go_read_ret", "h2_go_close",
}

// attachTLS attaches the OpenSSL probes to every libssl file: those mapped by
// running processes (one that cannot be probed is listed in LibSSLSkipped),
// the extra paths and the usual locations (an error there fails the start);
// one file reached by several paths is attached once.
func (c *Capture) attachTLS(extra []string) error {
	c.sslSeen = files{}
	var looked []string
	for _, pid := range procPIDs() {
		if !c.wanted(pid) {
			continue
		}
		for _, m := range libSSLOf(pid) {
			looked = append(looked, m.name())
			if _, err := c.probeLibSSL(m.name(), m.open); err != nil {
				c.skipLibSSL(err)
			}
		}
	}
	usual := []string{"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/usr/lib/x86_64-linux-gnu/libssl.so.1.1", "/usr/lib64/libssl.so.3"}
	for i, p := range slices.Concat(extra, usual) {
		looked = append(looked, p)
		_, err := c.probeLibSSL(p, func() (*os.File, error) { return os.Open(p) })
		if err != nil && (i < len(extra) || !errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	if len(c.libssl) == 0 {
		return fmt.Errorf("tls: no libssl found (looked in the running processes' maps and at %v): install OpenSSL or name it in tls::libssl_paths", looked)
	}
	return nil
}

// skipLibSSL records a libssl file that could not be probed.
func (c *Capture) skipLibSSL(err error) {
	c.tlsFailed.Add(1)
	c.tlsMu.Lock()
	c.sslSkip = append(c.sslSkip, err.Error())
	c.tlsMu.Unlock()
}

// probeLibSSL opens a libssl file once, and probes it through that
// descriptor if it is one not seen yet; isNew says it was.
func (c *Capture) probeLibSSL(name string, open func() (*os.File, error)) (isNew bool, err error) {
	f, err := open()
	if err != nil {
		return false, fmt.Errorf("tls: open %s: %w", name, err)
	}
	defer f.Close()
	id, err := idOf(f)
	if err != nil {
		return false, fmt.Errorf("tls: %s: %w", name, err)
	}
	if !c.sslSeen.add(id) {
		return false, nil
	}
	return true, c.attachLibSSL(f, name)
}

// attachLibSSL attaches the OpenSSL probes to the libssl open as f (name:
// what to call it), all or none.
func (c *Capture) attachLibSSL(f *os.File, name string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tls: %s: %w: parser panic: %v", name, gotls.ErrMalformed, v)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tls: %s: %w", name, err)
	}
	if err := gotls.CheckELF(f, st.Size()); err != nil {
		return fmt.Errorf("tls: %s: %w", name, err)
	}
	ex, err := openExecutable(f)
	if err != nil {
		return fmt.Errorf("tls: open %s: %w", name, err)
	}
	var links []link.Link
	defer func() {
		if err != nil {
			_ = closeLinks(links)
		}
	}()
	for _, a := range []struct {
		sym, prog string
		ret       bool
	}{
		{"SSL_write", "h2_ssl_write", false}, {"SSL_write", "h2_ssl_write_ret", true},
		{"SSL_read", "h2_ssl_read", false}, {"SSL_read", "h2_ssl_read_ret", true},
		{"SSL_free", "h2_ssl_free", false},
		// OpenSSL 1.1.1+ (Python's ssl module, among others, calls these).
		{"SSL_write_ex", "h2_ssl_write_ex", false}, {"SSL_write_ex", "h2_ssl_write_ret", true},
		{"SSL_read_ex", "h2_ssl_read_ex", false}, {"SSL_read_ex", "h2_ssl_read_ret", true},
	} {
		ls, err := c.uprobes(ex, a.prog, a.sym, nil, a.ret)
		if err != nil && strings.HasSuffix(a.sym, "_ex") && errors.Is(err, link.ErrNoSymbol) {
			continue // OpenSSL before 1.1.1
		}
		if err != nil {
			return fmt.Errorf("tls: attach %s in %s: %w", a.sym, name, err)
		}
		links = append(links, ls...)
	}
	return c.keep(links, func() { c.libssl = append(c.libssl, name) })
}

// uprobes attaches prog to symbol sym (when offs is nil) or to the file
// offsets offs of ex, at entry or (ret) return: one uprobe_multi link where
// the programs were loaded for them (c.multi), else one perf-event uprobe
// per point. All or none.
func (c *Capture) uprobes(ex *link.Executable, prog, sym string, offs []uint64, ret bool) ([]link.Link, error) {
	p := c.coll.Programs[prog]
	if c.multi {
		syms, opts := []string{sym}, (*link.UprobeMultiOptions)(nil)
		if sym == "" {
			syms, opts = nil, &link.UprobeMultiOptions{Addresses: offs}
		}
		attach := ex.UprobeMulti
		if ret {
			attach = ex.UretprobeMulti
		}
		l, err := attach(syms, p, opts)
		if err != nil {
			return nil, err
		}
		return []link.Link{l}, nil
	}
	attach := ex.Uprobe
	if ret {
		attach = ex.Uretprobe
	}
	if sym != "" {
		l, err := attach(sym, p, nil)
		if err != nil {
			return nil, err
		}
		return []link.Link{l}, nil
	}
	var links []link.Link
	for _, off := range offs {
		l, err := attach("", p, &link.UprobeOptions{Address: off})
		if err != nil {
			_ = closeLinks(links)
			return nil, fmt.Errorf("at file offset %#x: %w", off, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// errDetached: the capture was detached while a file was being probed.
var errDetached = errors.New("tls: the capture is detached")

// keep adds the links of a file probed, and records it, unless the capture
// was detached meanwhile (then they are closed).
func (c *Capture) keep(links []link.Link, record func()) error {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	if c.detached {
		return errDetached // the caller closes them
	}
	c.links = append(c.links, links...)
	record()
	return nil
}

// LibSSL lists the libssl files the TLS probes are attached to.
func (c *Capture) LibSSL() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.libssl)
}

// LibSSLSkipped lists the libssl files of running processes that could not
// be probed, each with why.
func (c *Capture) LibSSLSkipped() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.sslSkip)
}

// TLSFilesFailed counts the files (executables, libssl) whose parsing or
// probing failed (each once): hostile or damaged ones among them.
func (c *Capture) TLSFilesFailed() uint64 { return c.tlsFailed.Load() }

// GoBinary is a Go executable whose crypto/tls is probed.
type GoBinary struct {
	Path      string // as configured, or the running process's executable
	Probes    int    // probe points: Write, Read, Close and every RET of Read
	Pclntab   bool   // found through .gopclntab (no symbol table)
	GoVersion string
	Dev, Ino  uint64 // the file probed (the one parsed)
}

// GoBinaries lists the Go executables whose crypto/tls is probed.
func (c *Capture) GoBinaries() []GoBinary {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.goBins)
}

// GoSkipped lists the running Go executables with crypto/tls that could
// not be probed, each with why (an old Go, another architecture, no
// symbols, code that did not decode, a malformed file, a refused uprobe).
func (c *Capture) GoSkipped() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.goSkip)
}

// attachGoTLS probes crypto/tls in the configured Go executables (an error
// there fails the start: they were asked for) and in those of the running
// processes (one that cannot be probed is listed in GoSkipped). One file
// reached by several paths is probed once; a uprobe is on the file, so
// processes started from it later are covered too. The collector's own
// executable is never probed.
func (c *Capture) attachGoTLS(configured []string) error {
	c.goSeen, c.pids = files{}, map[string]bool{}
	if !c.probeSelf {
		c.goSeen.add(c.self)
	}
	for _, p := range configured {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("tls: go_binaries: %w", err)
		}
		id, err := idOf(f)
		if err == nil && c.goSeen.add(id) {
			err = c.attachGoBinary(f, id, p)
		}
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("tls: go_binaries: %s: %w", p, err)
		}
	}
	for _, pid := range procPIDs() {
		c.pids[pid] = true
		if c.wanted(pid) {
			c.attachGoProcess(pid)
		}
	}
	return nil
}

// wanted says whether the files of process pid are to be probed: not the
// collector itself, and allowed by the include and exclude lists.
func (c *Capture) wanted(pid string) bool {
	if pid == c.selfPID && !c.probeSelf {
		return false
	}
	ok, _ := c.filter.allows(pid)
	return ok
}

// attachGoProcess probes the executable of process pid (one wanted) if it is a Go
// program with crypto/tls not seen yet; one that cannot be probed is listed
// in GoSkipped and counted in TLSFilesFailed.
func (c *Capture) attachGoProcess(pid string) *GoBinary {
	e := filepath.Join("/proc", pid, "exe")
	f, err := os.Open(e)
	if err != nil {
		return nil // a kernel thread, or gone
	}
	defer f.Close()
	id, err := idOf(f)
	if err != nil || !c.goSeen.add(id) {
		return nil // a file seen already (the collector's own among them)
	}
	name, err := os.Readlink(e)
	if err != nil {
		name = e
	}
	err = c.attachGoBinary(f, id, name)
	if err != nil && !errors.Is(err, gotls.ErrNotGo) && !errors.Is(err, gotls.ErrNoTLS) && !errors.Is(err, errDetached) {
		c.tlsFailed.Add(1)
		c.tlsMu.Lock()
		c.goSkip = append(c.goSkip, fmt.Sprintf("%s: %v", name, err))
		c.tlsMu.Unlock()
	}
	if err != nil {
		return nil
	}
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	b := c.goBins[len(c.goBins)-1]
	return &b
}

// procPIDs lists the processes in /proc.
func procPIDs() []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, filepath.Base(d))
	}
	return out
}

// Rescanned is what RescanTLS probed: files first seen in processes that
// started since the last look.
type Rescanned struct {
	LibSSL    []string
	Go        []GoBinary
	Failed    []string // libssl files that could not be probed, with why
	GoSkipped []string // Go executables with crypto/tls that could not be, with why
}

// RescanTLS looks at the processes that started since the capture opened
// (or since the last RescanTLS) and probes the libssl files they map and
// their executables (Go crypto/tls) not probed yet. A uprobe is on the
// file, so every later process of a probed file is covered already; a
// process that loads libssl only after it was looked at is not. Safe beside
// the reader; not before Open with TLS. It stops between two processes when
// ctx is done or the capture is detached (the rest is looked at next time),
// and holds no lock while it parses files.
func (c *Capture) RescanTLS(ctx context.Context) Rescanned {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	var out Rescanned
	if c.pids == nil || c.closing.Load() {
		return out
	}
	c.tlsMu.Lock()
	skipped := len(c.goSkip)
	c.tlsMu.Unlock()
	for _, pid := range procPIDs() {
		if ctx.Err() != nil || c.closing.Load() {
			break
		}
		if c.pids[pid] {
			continue
		}
		c.pids[pid] = true
		if !c.wanted(pid) {
			continue
		}
		for _, m := range libSSLOf(pid) {
			isNew, err := c.probeLibSSL(m.name(), m.open)
			switch {
			case errors.Is(err, errDetached):
			case err != nil:
				c.tlsFailed.Add(1)
				out.Failed = append(out.Failed, err.Error())
			case isNew:
				out.LibSSL = append(out.LibSSL, m.name())
			}
		}
		if b := c.attachGoProcess(pid); b != nil {
			out.Go = append(out.Go, *b)
		}
	}
	c.tlsMu.Lock()
	out.GoSkipped = slices.Clone(c.goSkip[skipped:])
	c.tlsMu.Unlock()
	return out
}

// files is a set of files by device and inode: one file reached by
// several paths (links, /proc/<pid>/root, /proc/<pid>/exe) is one.
type files map[fileID]bool

// add adds the file id and says whether it is new.
func (f files) add(id fileID) bool {
	if f[id] {
		return false
	}
	f[id] = true
	return true
}

// attachGoBinary attaches the Go TLS programs to the executable open as f
// (id: its device and inode; name: what to call it), all or none: parsed
// from f and probed through f, the very file.
func (c *Capture) attachGoBinary(f *os.File, id fileID, name string) (err error) {
	p, err := gotls.FindFile(f)
	if err != nil {
		return err
	}
	ex, err := openExecutable(f)
	if err != nil {
		return err
	}
	var links []link.Link
	defer func() {
		if err != nil {
			_ = closeLinks(links)
		}
	}()
	// After the stack checks (a call that grows its stack starts over);
	// Write is walked there, Read at each of its RETs.
	points := 0
	for _, a := range []struct {
		prog string
		offs []uint64
	}{
		{"h2_go_write", []uint64{p.Write.Body}}, {"h2_go_read", []uint64{p.Read.Body}},
		{"h2_go_close", []uint64{p.Close.Body}}, {"h2_go_read_ret", p.Read.Returns},
	} {
		ls, err := c.uprobes(ex, a.prog, "", a.offs, false)
		if err != nil {
			return fmt.Errorf("uprobe (%s): %w", a.prog, err)
		}
		links = append(links, ls...)
		points += len(a.offs)
	}
	b := GoBinary{Path: name, Probes: points, Pclntab: p.Pclntab, GoVersion: p.GoVersion, Dev: id[0], Ino: id[1]}
	return c.keep(links, func() { c.goBins = append(c.goBins, b) })
}

// LibSSLInUse lists the libssl files mapped by running processes
// (/proc/*/maps), as paths through their roots.
func LibSSLInUse() []string {
	var out []string
	for _, pid := range procPIDs() {
		for _, m := range libSSLOf(pid) {
			if !slices.Contains(out, m.name()) {
				out = append(out, m.name())
			}
		}
	}
	return out
}

// Hook is the hook in use, and Why says why it was chosen.
func (c *Capture) Hook() Hook { return c.hook }

// Why says why the hook was chosen.
func (c *Capture) Why() string { return c.why }

// Reader is the ring's reader, from ticket 0: for the one reading goroutine.
func (c *Capture) Reader() *ring.Reader { return c.reader }

// Wait blocks until a producer rings the doorbell or the timeout passes; the
// caller sets the parked flag and looks at the head again first.
func (c *Capture) Wait(timeout time.Duration) (bool, error) { return c.doorbell.Wait(timeout) }

// Interrupt makes a blocked Wait return; any goroutine.
func (c *Capture) Interrupt() {
	if c.doorbell != nil {
		c.doorbell.Interrupt()
	}
}

// Counters reads the kernel's per-CPU counters, summed.
func (c *Capture) Counters() (Counters, error) {
	var per []h2H2Stats
	var out Counters
	if err := c.coll.Maps["h2_counters"].Lookup(uint32(0), &per); err != nil {
		return out, fmt.Errorf("read h2_counters: %w", err)
	}
	for _, p := range per {
		out.add(p)
	}
	var seq []h2SeqStats
	if err := c.coll.Maps["seq_counters"].Lookup(uint32(0), &seq); err != nil {
		return out, fmt.Errorf("read seq_counters: %w", err)
	}
	out.TLSFilesFailed = c.tlsFailed.Load()
	for _, p := range seq {
		out.Overrun += p.Overrun
		out.NoSlot += p.NoSlot
		out.Doorbells += p.Doorbells
		out.DoorbellFailed += p.DoorbellFailed
		for _, t := range p.Tickets {
			out.Tickets += t
		}
	}
	// Runs the kernel skipped: the same program already running on that CPU
	// (preempted in the middle, on a preemptible kernel). Their bytes are
	// missed; the next call on that connection finds the hole.
	for _, p := range c.progs {
		if st, err := p.Stats(); err == nil {
			out.ProgMisses += st.RecursionMisses
		}
	}
	return out, nil
}

// ProgramIDs lists the kernel ids of the loaded programs (for leak checks).
func (c *Capture) ProgramIDs() []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	for _, p := range c.progs {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Detach stops the producers; what is in the ring stays readable. A
// RescanTLS under way stops at its next process; the links are closed
// concurrently (closeLinks).
func (c *Capture) Detach() error {
	c.closing.Store(true)
	c.tlsMu.Lock()
	c.detached = true
	links := c.links
	c.links = nil
	c.tlsMu.Unlock()
	return closeLinks(links)
}

// Close detaches, unmaps and closes everything.
func (c *Capture) Close() error {
	errs := []error{c.Detach()}
	if c.doorbell != nil {
		errs = append(errs, c.doorbell.Close())
		c.doorbell = nil
	}
	for _, b := range [][]byte{c.ctl, c.slots} {
		if b != nil {
			errs = append(errs, unix.Munmap(b))
		}
	}
	c.ctl, c.slots, c.reader = nil, nil, nil
	if c.coll != nil {
		c.coll.Close()
		c.coll = nil
	}
	return errors.Join(errs...)
}
