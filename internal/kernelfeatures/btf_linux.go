// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package kernelfeatures

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf/btf"
)

// BTFPath is where the kernel exposes its own type information.
const BTFPath = "/sys/kernel/btf/vmlinux"

// probeBTF finds and reads the kernel's BTF.
func probeBTF() error {
	if _, err := os.Stat(BTFPath); err != nil {
		return err
	}
	_, err := btf.LoadKernelSpec()
	return err
}

// HasTracepoint reports whether the kernel's BTF has the raw tracepoint tp
// (btf_trace_<tp>), which a tp_btf program attaches to.
func HasTracepoint(tp string) bool {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false
	}
	var td *btf.Typedef
	return spec.TypeByName("btf_trace_"+tp, &td) == nil
}

// TracepointProto returns the arguments of the BTF-typed tracepoint tp.
func TracepointProto(tp string) (*btf.FuncProto, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("read kernel BTF: %w", err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+tp, &td); err != nil {
		return nil, fmt.Errorf("kernel BTF has no %s tracepoint (btf_trace_%s): %w", tp, tp, err)
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return nil, fmt.Errorf("kernel BTF: btf_trace_%s is %v, not a function pointer", tp, td.Type)
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("kernel BTF: btf_trace_%s points to %v, not a function", tp, ptr.Target)
	}
	return proto, nil
}

// ExitHasGroupDead reports whether sched_process_exit passes group_dead
// (Linux 6.16+): (void *ctx, task, group_dead). Without it the producers
// tell a process exit from a thread exit by the thread group's live count
// and claim the one process exit per process in a map (the seq producers).
func ExitHasGroupDead() (bool, error) {
	proto, err := TracepointProto("sched_process_exit")
	if err != nil {
		return false, err
	}
	return len(proto.Params) >= 3, nil
}
