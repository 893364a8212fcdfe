// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package loader

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
)

// attachProgram attaches one loaded program as its section says. The
// returned closers (links, perf events) must be closed even on error.
func attachProgram(prog *ebpf.Program, ps *ebpf.ProgramSpec, plan attachPlan) ([]io.Closer, error) {
	var (
		l   link.Link
		err error
	)
	switch plan.kind {
	case attachTracepoint:
		l, err = link.Tracepoint(plan.group, plan.name, prog, nil)
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (no tracepoint %s:%s in %s)", err, plan.group, plan.name, tracefsEvents())
		}
	case attachRawTracepoint:
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: plan.name, Program: prog})
	case attachTracing:
		l, err = link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ps.AttachType})
		if err != nil && !strings.HasPrefix(plan.section, "tp_btf") &&
			(errors.Is(err, os.ErrPermission) || errors.Is(err, link.ErrNotSupported) || errors.Is(err, syscall.Errno(524)) /* ENOTSUPP */) {
			err = kernelfeatures.Trampolines.Missing("an fentry/, fexit/ or fmod_ret/ program", err)
		}
	case attachLSM:
		l, err = link.AttachLSM(link.LSMOptions{Program: prog})
	case attachKprobe, attachKretprobe:
		sym := plan.symbol
		if plan.syscall {
			sym = SyscallPrefix() + sym
		}
		opts := &link.KprobeOptions{Offset: plan.offset}
		if plan.kind == attachKprobe {
			l, err = link.Kprobe(sym, prog, opts)
		} else {
			l, err = link.Kretprobe(sym, prog, nil)
		}
		if kerr := kernelfeatures.Kprobes.Probe(); err != nil && kerr != nil {
			err = fmt.Errorf("%w: %w", kernelfeatures.Kprobes.Missing("a kprobe/ program", kerr), err)
		}
	case attachUprobe, attachUretprobe:
		return attachUprobeProgram(prog, plan)
	case attachPerfEvent:
		return attachPerfEventProgram(prog, plan.perf)
	case attachXDP:
		iface, ierr := net.InterfaceByName(plan.iface)
		if ierr != nil {
			return nil, fmt.Errorf("failed to find device %q: %w", plan.iface, ierr)
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: iface.Index})
	default:
		return nil, fmt.Errorf("no attach method for %s", plan.kind)
	}
	if err != nil {
		return nil, err
	}
	return []io.Closer{l}, nil
}

func attachUprobeProgram(prog *ebpf.Program, plan attachPlan) ([]io.Closer, error) {
	path, err := resolveBinary(plan.binary)
	if err != nil {
		return nil, err
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	opts := &link.UprobeOptions{Address: plan.address, Offset: plan.offset}
	var l link.Link
	if plan.kind == attachUprobe {
		l, err = ex.Uprobe(plan.symbol, prog, opts)
	} else {
		l, err = ex.Uretprobe(plan.symbol, prog, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []io.Closer{l}, nil
}

// perfEventFD closes a perf event opened for a program.
type perfEventFD int

func (fd perfEventFD) Close() error { return unix.Close(int(fd)) }

// attachPerfEventProgram opens the perf event on every online CPU (all
// threads) and attaches the program to each, as ebpf_exporter does.
func attachPerfEventProgram(prog *ebpf.Program, a perfEventAttr) ([]io.Closer, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("failed to determine online cpus: %w", err)
	}
	var closers []io.Closer
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   a.typ,
			Config: a.config,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		}
		if a.frequency > 0 {
			attr.Sample = a.frequency
			attr.Bits |= unix.PerfBitFreq
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return closers, fmt.Errorf("failed to open perf_event type=%d config=%d on cpu %d: %w", a.typ, a.config, cpu, err)
		}
		closers = append(closers, perfEventFD(fd))
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err == nil {
			closers = append(closers, l)
			continue
		}
		// Kernels before 5.15 have no perf_event BPF links: attach by ioctl.
		if ierr := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); ierr != nil {
			return closers, fmt.Errorf("failed to attach perf event %d:%d on cpu %d: %w", a.typ, a.config, cpu, errors.Join(err, ierr))
		}
		if ierr := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); ierr != nil {
			return closers, fmt.Errorf("failed to enable perf event %d:%d on cpu %d: %w", a.typ, a.config, cpu, ierr)
		}
	}
	return closers, nil
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad cpu list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad cpu list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func tracefsEvents() string {
	if _, err := os.Stat("/sys/kernel/tracing/events"); err == nil {
		return "/sys/kernel/tracing/events"
	}
	return "/sys/kernel/tracing/events (tracefs is not mounted there)"
}
