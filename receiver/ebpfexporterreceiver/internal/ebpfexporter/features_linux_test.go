// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/loader"
)

// Kernel feature probes for the tests: each tries the feature itself, the
// way a program would use it (never a kernel version), and returns nil when
// it works or the kernel's refusal.

// fixtureSymbol is the kernel function the kprobe and fentry fixtures
// probe: getpriority's syscall entry, which nothing else on a test machine
// calls, so no CPU runs it while it is patched (under QEMU TCG that can
// hang a guest; see ebpfx_kprobe.bpf.c). The tests' workload calls
// getpriority. __x64_sys_getpriority, or __arm64_sys_getpriority on arm64
// (EBPFX_SYS_GETPRIORITY of ebpfx.bpf.h).
var fixtureSymbol = loader.SyscallPrefix() + "getpriority"

// getpriority makes one getpriority call: the fixtures' workload.
func getpriority() { _, _ = unix.Getpriority(unix.PRIO_PROCESS, 0) }

func returnZero() asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
}

// probeKprobe attaches a minimal kprobe program to getpriority, the
// fixtures' target (see testdata/ebpf_exporter/ebpfx_kprobe.bpf.c).
func probeKprobe(t *testing.T) error {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: returnZero()})
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.Kprobe(fixtureSymbol, prog, nil)
	if err != nil {
		return err
	}
	return l.Close()
}

// probeFentry is whether the kernel takes an fentry program on getpriority
// (kernelfeatures.Trampolines probes exactly that).
func probeFentry(t *testing.T) error {
	t.Helper()
	return kernelfeatures.Trampolines.Probe()
}

// probeTracepoint tells whether the kernel has the tracepoint group:name:
// its tracefs directory (tracefs must be mounted) and its context type
// trace_event_raw_<class> in the kernel's BTF agree.
func probeTracepoint(t *testing.T, group, name, class string) bool {
	t.Helper()
	events := "/sys/kernel/tracing/events"
	_, err := os.Stat(events)
	require.NoError(t, err, "tracefs is not mounted at /sys/kernel/tracing (make deps mounts it)")
	_, err = os.Stat(filepath.Join(events, group, name))
	inTracefs := err == nil
	spec, err := btf.LoadKernelSpec()
	require.NoError(t, err)
	var s *btf.Struct
	err = spec.TypeByName("trace_event_raw_"+class, &s)
	require.True(t, err == nil || errors.Is(err, btf.ErrNotFound), "%v", err)
	require.Equal(t, inTracefs, err == nil, "tracefs and BTF disagree on tracepoint %s:%s", group, name)
	return inTracefs
}
