// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package kernelfeatures

import (
	"errors"
	"os"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
)

// The features the loaders name. Each probe tries the feature itself.
var (
	// Mmapable: the sequencer's control block and slots, mapped by the reader.
	Mmapable = newFeature("memory-mappable BPF arrays (BPF_F_MMAPABLE)", "Linux 5.5", "run Linux 5.5 or newer",
		func() error { return features.HaveMapFlag(features.BPF_F_MMAPABLE) })
	// RingBuf: the reader's doorbell, and a transport.
	RingBuf = newFeature("the BPF ring buffer", "Linux 5.8", "run Linux 5.8 or newer",
		func() error { return features.HaveMapType(ebpf.RingBuf) })
	// Atomics: BPF atomic fetch, which claims a ticket's number.
	Atomics = newFeature("BPF atomic fetch-add, exchange and compare-and-exchange", "Linux 5.12", "run Linux 5.12 or newer",
		probeAtomics)
	// BTF: the kernel's own type information, which tp_btf programs and
	// CO-RE need.
	BTF = newFeature("kernel BTF at "+BTFPath, "Linux 5.4", "run a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		probeBTF)
	// TPBTF: tp_btf programs, BPF programs on BTF-typed raw tracepoints,
	// which every producer's hooks are.
	TPBTF = newFeature("tp_btf programs (BPF on BTF-typed raw tracepoints)", "Linux 5.5", "run Linux 5.5 or newer, built with CONFIG_DEBUG_INFO_BTF=y",
		probeTPBTF)
	// BPFLoop: the bpf_loop helper, which walks the grpc receiver's frames.
	BPFLoop = newFeature("the bpf_loop helper", "Linux 5.17", "run Linux 5.17 or newer",
		func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnLoop) })
	// TaskPtRegs: the bpf_task_pt_regs helper, a system call's registers
	// from a tracepoint that does not pass them.
	TaskPtRegs = newFeature("the bpf_task_pt_regs helper", "Linux 5.15", "run Linux 5.15 or newer",
		func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnTaskPtRegs) })
	// UprobeMulti: uprobe_multi links, many uprobes attached in one call.
	UprobeMulti = newFeature("uprobe_multi links", "Linux 6.6", "run Linux 6.6 or newer",
		features.HaveBPFLinkUprobeMulti)
	// SyscallTracepoints: the syscalls:sys_exit_* tracepoints in tracefs.
	SyscallTracepoints = newFeature("the syscalls:sys_exit_* tracepoints in tracefs", "Linux 4.7",
		"mount tracefs (`mount -t tracefs nodev /sys/kernel/tracing`) on a kernel built with CONFIG_FTRACE_SYSCALLS=y",
		func() error { return anyFile(tracefsDirs, "/events/syscalls/sys_exit_write") })
	// InetSockSetState: the sock:inet_sock_set_state tracepoint, by which
	// the grpc receiver follows TCP connections.
	InetSockSetState = newFeature("the sock:inet_sock_set_state tracepoint", "Linux 4.16",
		"run Linux 4.16 or newer, built with CONFIG_DEBUG_INFO_BTF=y", btfTracepoint("inet_sock_set_state"))
	// SockLength: the sock:sock_send_length and sock:sock_recv_length
	// tracepoints, the grpc receiver's socket hook.
	SockLength = newFeature("the sock:sock_send_length and sock:sock_recv_length tracepoints", "Linux 6.3",
		"run Linux 6.3 or newer, or set hook: syscalls, raw_syscalls (or auto)", btfTracepoint("sock_send_length", "sock_recv_length"))
	// RawSysExit: the raw_syscalls:sys_exit tracepoint, which passes a
	// system call's registers.
	RawSysExit = newFeature("the raw_syscalls:sys_exit tracepoint", "Linux 3.7",
		"run a kernel built with CONFIG_HAVE_SYSCALL_TRACEPOINTS=y", btfTracepoint("sys_exit"))
	// Kprobes: kprobes at all (a kprobe PMU or kprobe_events in tracefs).
	Kprobes = newFeature("kprobes", "Linux 4.1", "run a kernel built with CONFIG_KPROBES=y; or use a tracepoint, raw_tp/ or tp_btf/ hook",
		func() error {
			return anyFile([]string{"/sys/bus/event_source/devices/kprobe/type", "/sys/kernel/tracing/kprobe_events", "/sys/kernel/debug/tracing/kprobe_events"}, "")
		})
	// Trampolines: BPF trampolines, which fentry, fexit and fmod_ret
	// programs attach through.
	Trampolines = newFeature("BPF trampolines (fentry/fexit/fmod_ret)", "Linux 5.5 on x86-64, 6.0 on arm64",
		"use a tracepoint/, raw_tp/ or tp_btf/ hook instead", probeTrampolines)
)

// All is every named feature, for a benchmark's report and the tests.
var All = []*Feature{Mmapable, RingBuf, Atomics, BTF, TPBTF, BPFLoop, TaskPtRegs, UprobeMulti, SyscallTracepoints,
	InetSockSetState, SockLength, RawSysExit, Kprobes, Trampolines}

// Ring is what every producer of the shared ring needs whatever its
// transport: the control block is a memory-mappable array, and the ring
// buffer is the doorbell or the transport itself. BPF atomic fetch is not
// in it: without it the loaders take the producers that need none.
var Ring = []*Feature{Mmapable, RingBuf}

// btfTracepoint probes the BTF-typed tracepoints tps (all of them).
func btfTracepoint(tps ...string) func() error {
	return func() error {
		for _, tp := range tps {
			if _, err := TracepointProto(tp); err != nil {
				return err
			}
		}
		return nil
	}
}

// tracefsDirs are where tracefs is mounted.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// anyFile is nil where one of dirs+name exists.
func anyFile(dirs []string, name string) error {
	err := errors.New("no such file")
	for _, d := range dirs {
		if _, err = os.Stat(d + name); err == nil {
			return nil
		}
	}
	return err
}

// probeAtomics loads a tiny program with the atomic instructions the
// producers use: fetch-add claims tickets, compare-and-exchange owns a
// slot, exchange publishes it.
func probeAtomics() error {
	return loads(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: atomicsProbe()})
}

// The atomic operations' immediates (BPF_ADD | BPF_FETCH, BPF_XCHG,
// BPF_CMPXCHG). An atomic instruction is BPF_STX | BPF_ATOMIC with the
// operation in its immediate; immediate 0 is the plain add (BPF_XADD) that
// every kernel with BPF takes.
const (
	immFetchAdd = 0x01
	immXchg     = 0xe1
	immCmpXchg  = 0xf1
)

// atomicsProbe is probeAtomics' program. The atomic instructions are
// spelled out with their immediates: cilium/ebpf v0.22's asm.FetchAdd.Mem
// and the like keep the operation in bits of the opcode that Marshal does
// not write, so they reach the kernel as the plain add, which Linux 5.10
// accepts (the probe then passed there, and loading the producers failed
// with the verifier's "BPF_STX uses reserved fields").
func atomicsProbe() asm.Instructions {
	atomic := func(imm int64) asm.Instruction {
		return asm.Instruction{OpCode: asm.OpCode(asm.StXClass).SetMode(asm.AtomicMode).SetSize(asm.DWord),
			Dst: asm.RFP, Src: asm.R2, Offset: -8, Constant: imm}
	}
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R2, 1),
		atomic(immFetchAdd),
		atomic(immXchg),
		asm.Mov.Imm(asm.R0, 0),
		atomic(immCmpXchg),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	}
}

// returnZero is the body of the probes that only need to load.
func returnZero() asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
}

// loads is nil where the kernel loads spec.
func loads(spec *ebpf.ProgramSpec) error {
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return err
	}
	return prog.Close()
}

// probeTPBTF loads a tp_btf program on sched_process_fork, a tracepoint
// every kernel has: the kernel resolves it in its BTF.
func probeTPBTF() error {
	return loads(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
		AttachTo: "sched_process_fork", License: "GPL", Instructions: returnZero()})
}

// probeTrampolines loads an fentry program on getpriority's system call
// entry, which little calls, and attaches it for a moment.
func probeTrampolines() error {
	prefix := map[string]string{"amd64": "__x64_sys_", "arm64": "__arm64_sys_"}[runtime.GOARCH]
	if prefix == "" {
		return errors.New("no system call prefix known for " + runtime.GOARCH)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry,
		AttachTo: prefix + "getpriority", License: "GPL", Instructions: returnZero()})
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		return err
	}
	return l.Close()
}
