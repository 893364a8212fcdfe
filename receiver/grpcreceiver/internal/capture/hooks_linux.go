// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
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

// who is the loader named in what the kernel or the process lacks.
const who = "the grpc receiver"

// Preflight checks what the programs need and picks the hook for want, and
// the programs built without BPF atomic fetch where the kernel lacks it (or
// noFetch asks for them). It names every missing privilege or kernel
// feature and the fix; Plan.Why says which hook and why.
func Preflight(want Hook, noFetch bool) (Plan, error) {
	if err := checkKernel(); err != nil {
		return Plan{}, err
	}
	// Without BPF atomic fetch (before Linux 5.12): the h2nf programs,
	// raw_syscalls only, their records in a ring buffer, numbered by the
	// reader. Without bpf_task_pt_regs (before 5.15): raw_syscalls, whose
	// tracepoint passes the registers.
	var lacks []string
	if noFetch {
		lacks = append(lacks, "the programs built without BPF atomic fetch were asked for")
	} else if err := kernelfeatures.Atomics.Probe(); err != nil {
		noFetch = true
		lacks = append(lacks, kernelfeatures.Atomics.Lacks(err))
	}
	if err := kernelfeatures.TaskPtRegs.Probe(); err != nil {
		lacks = append(lacks, kernelfeatures.TaskPtRegs.Lacks(err))
	}
	if len(lacks) > 0 {
		because := strings.Join(lacks, ", and ")
		if noFetch {
			because += "; their records go to a BPF ring buffer, numbered by the reader in ring order"
		}
		return planRawSyscalls(want, because, noFetch)
	}
	return planHook(want)
}

// checkKernel checks what every hook needs: the capabilities, BTF and
// tp_btf programs, the connections' tracepoint, and the shared ring.
func checkKernel() error {
	if err := kernelfeatures.RequireCapabilities(who); err != nil {
		return err
	}
	if err := kernelfeatures.Require(who, kernelfeatures.BTF, kernelfeatures.TPBTF); err != nil {
		return err
	}
	return kernelfeatures.Require(who, append([]*kernelfeatures.Feature{kernelfeatures.InetSockSetState}, kernelfeatures.Ring...)...)
}

// planRawSyscalls plans for a kernel that leaves raw_syscalls the only
// hook, because of what it lacks (or what was asked for).
func planRawSyscalls(want Hook, because string, noFetch bool) (Plan, error) {
	switch want {
	case HookSocket, HookSyscalls:
		return Plan{}, fmt.Errorf("hook %s: %s; the %s hook needs %s and %s: set hook: raw_syscalls (or auto)",
			want, because, want, kernelfeatures.Atomics, kernelfeatures.TaskPtRegs)
	case HookRawSyscalls, "", HookAuto:
	default:
		return Plan{}, fmt.Errorf("unknown hook %q (want %v)", want, Hooks)
	}
	if err := kernelfeatures.Require(who, kernelfeatures.RawSysExit); err != nil {
		return Plan{}, fmt.Errorf("%s, and raw_syscalls:sys_exit is the one hook left: %w", because, err)
	}
	if want == HookRawSyscalls {
		return Plan{HookRawSyscalls, "configured; " + because, noFetch}, nil
	}
	return Plan{HookRawSyscalls, because + "; using raw_syscalls:sys_exit, whose tracepoint passes the registers, and the fd walk", noFetch}, nil
}

// planHook plans want on a kernel that has what every hook needs; auto
// takes the socket tracepoints where the kernel has them.
func planHook(want Hook) (Plan, error) {
	socketOK := kernelfeatures.SockLength.Present()
	switch want {
	case HookSocket:
		if err := kernelfeatures.Require(who, kernelfeatures.SockLength); err != nil {
			return Plan{}, fmt.Errorf("hook socket: %w", err)
		}
		return Plan{Hook: HookSocket, Why: "configured"}, nil
	case HookSyscalls:
		return Plan{Hook: HookSyscalls, Why: "configured"}, checkSyscallTracepoints()
	case HookRawSyscalls:
		if err := kernelfeatures.Require(who, kernelfeatures.RawSysExit); err != nil {
			return Plan{}, fmt.Errorf("hook raw_syscalls: %w; set hook: syscalls or socket (or auto)", err)
		}
		return Plan{Hook: HookRawSyscalls, Why: "configured"}, nil
	case "", HookAuto:
		if socketOK {
			return Plan{Hook: HookSocket, Why: "the kernel has " + kernelfeatures.SockLength.String()}, nil
		}
		return Plan{Hook: HookSyscalls, Why: kernelfeatures.SockLength.Lacks(kernelfeatures.SockLength.Probe()) + ": using the system call exits and the fd walk"}, checkSyscallTracepoints()
	}
	return Plan{}, fmt.Errorf("unknown hook %q (want %v)", want, Hooks)
}

// checkSyscallTracepoints finds the syscall exit tracepoints in tracefs, or
// names the fix and the hooks that need none.
func checkSyscallTracepoints() error {
	if err := kernelfeatures.Require(who, kernelfeatures.SyscallTracepoints); err != nil {
		return fmt.Errorf("%w; or use a Linux 6.3+ kernel (hook: socket), or set hook: raw_syscalls (no tracefs needed)", err)
	}
	return nil
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
