// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// ErrSyscallHookRefused is why Open fails where the kernel refuses to attach
// BPF programs to the syscalls:sys_exit_* tracepoints (EACCES as root, e.g. a
// security module's policy on perf events, or a program reading past the
// event's record, as ours did on PREEMPT_RT kernels: bpf/h2/hooks.h) and the
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

var socketTracepoints = []string{"sock_send_length", "sock_recv_length"}

// btfHooks are the hooks of BTF raw tracepoints: program and tracepoint.
var btfHooks = map[Hook][][2]string{
	HookSocket:      {{"h2_sock_send", "sock:sock_send_length"}, {"h2_sock_recv", "sock:sock_recv_length"}},
	HookRawSyscalls: {{"h2_raw_sys", "raw_syscalls:sys_exit"}},
}

var syscallExits = []string{"write", "writev", "sendto", "sendmsg", "read", "readv", "recvfrom", "recvmsg"}

// Plan is what Preflight chose: the hook, why, and whether the programs
// are those built without BPF atomic fetch (the h2nf objects).
type Plan struct {
	Hook    Hook
	Why     string
	NoFetch bool
}

// taskPtRegs is the helper the sock_* and sys_* programs read the system
// call's registers with.
var taskPtRegs = sequencer.Feature{What: "the bpf_task_pt_regs helper, the system call's arguments (Linux 5.15)", Probe: func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnTaskPtRegs) }}

// Preflight checks what the programs need and picks the hook for want, and
// the programs built without BPF atomic fetch where the kernel lacks it (or
// noFetch asks for them). It names every missing privilege or kernel
// feature and the fix; Plan.Why says which hook and why.
func Preflight(want Hook, noFetch bool) (Plan, error) {
	fail := func(err error) (Plan, error) { return Plan{}, err }
	if missing := sequencer.MissingCapabilities(); len(missing) > 0 {
		return fail(fmt.Errorf("the grpc receiver needs the capabilities CAP_BPF and CAP_PERFMON (or root); missing %s: run the collector as root or grant them with `setcap cap_bpf,cap_perfmon+ep <collector binary>`", strings.Join(missing, " and ")))
	}
	if _, err := os.Stat(sequencer.BTFPath); err != nil {
		return fail(fmt.Errorf("kernel BTF not found at %s (%v): the grpc receiver needs a kernel built with CONFIG_DEBUG_INFO_BTF=y", sequencer.BTFPath, err))
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fail(fmt.Errorf("read kernel BTF: %w", err))
	}
	has := func(tp string) bool {
		var td *btf.Typedef
		return spec.TypeByName("btf_trace_"+tp, &td) == nil
	}
	if !has("inet_sock_set_state") {
		return fail(errors.New("kernel BTF has no sock:inet_sock_set_state tracepoint (Linux 4.16+, with BTF): the grpc receiver cannot follow TCP connections on this kernel"))
	}
	if err := sequencer.ProbeFeatures("the grpc receiver", sequencer.BaseFeatures...); err != nil {
		return fail(err)
	}
	// Without BPF atomic fetch (before Linux 5.12): the h2nf programs,
	// raw_syscalls only, their records in a ring buffer, numbered by the
	// reader. Without bpf_task_pt_regs (before 5.15): raw_syscalls, whose
	// tracepoint passes the registers.
	var lacks []string
	if noFetch {
		lacks = append(lacks, "the programs built without BPF atomic fetch were asked for")
	} else if err := sequencer.AtomicsFeature.Probe(); err != nil {
		noFetch = true
		lacks = append(lacks, sequencer.AtomicsFeature.Lacks(err))
	}
	if err := taskPtRegs.Probe(); err != nil {
		lacks = append(lacks, taskPtRegs.Lacks(err))
	}
	socketOK := has(socketTracepoints[0]) && has(socketTracepoints[1])
	rawOK := has("sys_exit")
	if len(lacks) > 0 {
		because := strings.Join(lacks, ", and ")
		if noFetch {
			because += "; their records go to a BPF ring buffer, numbered by the reader in ring order"
		}
		switch want {
		case HookSocket, HookSyscalls:
			return fail(fmt.Errorf("hook %s: %s; the %s hook needs BPF atomic fetch (Linux 5.12) and bpf_task_pt_regs (Linux 5.15): set hook: raw_syscalls (or auto)", want, because, want))
		case HookRawSyscalls, "", HookAuto:
		default:
			return fail(fmt.Errorf("unknown hook %q (want %v)", want, Hooks))
		}
		if !rawOK {
			return fail(fmt.Errorf("%s, and kernel BTF has no raw_syscalls:sys_exit tracepoint (CONFIG_HAVE_SYSCALL_TRACEPOINTS), the one hook left: the grpc receiver cannot run on this kernel", because))
		}
		if want == HookRawSyscalls {
			return Plan{HookRawSyscalls, "configured; " + because, noFetch}, nil
		}
		return Plan{HookRawSyscalls, because + "; using raw_syscalls:sys_exit, whose tracepoint passes the registers, and the fd walk", noFetch}, nil
	}
	switch want {
	case HookSocket:
		if !socketOK {
			return fail(errors.New("hook socket: this kernel has no sock:sock_send_length/sock_recv_length tracepoints (Linux 6.3+); set hook: syscalls, raw_syscalls (or auto)"))
		}
		return Plan{Hook: HookSocket, Why: "configured"}, nil
	case HookSyscalls:
		return Plan{Hook: HookSyscalls, Why: "configured"}, checkSyscallTracepoints()
	case HookRawSyscalls:
		if !rawOK {
			return fail(errors.New("hook raw_syscalls: kernel BTF has no raw_syscalls:sys_exit tracepoint (CONFIG_HAVE_SYSCALL_TRACEPOINTS); set hook: syscalls or socket (or auto)"))
		}
		return Plan{Hook: HookRawSyscalls, Why: "configured"}, nil
	case "", HookAuto:
		if socketOK {
			return Plan{Hook: HookSocket, Why: "the kernel has sock:sock_send_length and sock:sock_recv_length (Linux 6.3+)"}, nil
		}
		return Plan{Hook: HookSyscalls, Why: "the kernel lacks sock:sock_send_length (Linux 6.3+): using the system call exits and the fd walk"}, checkSyscallTracepoints()
	}
	return fail(fmt.Errorf("unknown hook %q (want %v)", want, Hooks))
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

// attachBTF attaches a tp_btf program to its tracepoint.
func (c *Capture) attachBTF(prog, tracepoint string) error {
	l, err := link.AttachTracing(link.TracingOptions{Program: c.coll.Programs[prog], AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		return fmt.Errorf("attach %s: %w", tracepoint, err)
	}
	c.links = append(c.links, l)
	return nil
}
