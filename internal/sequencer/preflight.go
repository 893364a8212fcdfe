//go:build linux

package sequencer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Capability numbers from linux/capability.h (CAP_BPF and CAP_PERFMON are 5.8+).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// BTFPath is where the kernel exposes its own type information.
var BTFPath = "/sys/kernel/btf/vmlinux"

// Preflight checks what the programs need before anything is loaded, so that a
// missing privilege or kernel feature is named, with the kernel it arrived
// in, instead of a verifier dump. Every check probes the running kernel
// (distributions backport features), none reads its version number.
func Preflight() error {
	if missing := MissingCapabilities(); len(missing) > 0 {
		return fmt.Errorf("the seq receiver needs the capabilities CAP_BPF and CAP_PERFMON (or root); missing %s: run the collector as root or grant them with `setcap cap_bpf,cap_perfmon+ep <collector binary>`", strings.Join(missing, " and "))
	}
	if _, err := os.Stat(BTFPath); err != nil {
		return fmt.Errorf("kernel BTF not found at %s (%v): the seq receiver's tp_btf programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y (Linux 5.5+)", BTFPath, err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("read kernel BTF: %w", err)
	}
	for _, tp := range []string{"sched_process_fork", "sched_process_exec", "sched_process_exit"} {
		if _, err := tracepointProto(spec, tp); err != nil {
			return err
		}
	}
	// BPF atomic fetch (Linux 5.12) is not a must: without it Open loads the
	// ring buffer producers that need none (NoFetch).
	return ProbeFeatures("the seq receiver", BaseFeatures...)
}

// Feature is a kernel feature a loader needs: what it is (with the Linux
// release it arrived in) and how the running kernel is probed for it.
type Feature struct {
	What  string
	Probe func() error
}

// Lacks says that the kernel lacks f, with what its probe returned: a
// verifier's refusal by the last line of its log before the statistics
// ("processed N insns ..."), which is the reason, not cilium/ebpf's
// summary with "(N line(s) omitted)".
func (f Feature) Lacks(err error) string {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		for i := len(ve.Log) - 1; i >= 0; i-- {
			if line := strings.TrimSpace(ve.Log[i]); line != "" && !strings.HasPrefix(line, "processed ") {
				return fmt.Sprintf("this kernel lacks %s (its verifier: %s)", f.What, line)
			}
		}
	}
	return fmt.Sprintf("this kernel lacks %s (%v)", f.What, err)
}

// BaseFeatures are what the seq receiver's programs need whatever the
// transport: the control block is a memory-mappable array, and the ring
// buffer is the doorbell or the transport itself.
var BaseFeatures = []Feature{
	{"memory-mappable BPF arrays (BPF_F_MMAPABLE, Linux 5.5)", func() error { return features.HaveMapFlag(features.BPF_F_MMAPABLE) }},
	{"the BPF ring buffer, the reader's doorbell (Linux 5.8)", func() error { return features.HaveMapType(ebpf.RingBuf) }},
}

// AtomicsFeature is BPF atomic fetch, which claims a ticket's number.
var AtomicsFeature = Feature{"BPF atomic fetch-add, exchange and compare-and-exchange (Linux 5.12)", ProbeAtomics}

// RingFeatures are what every producer of a sequencer ring needs (the seq
// receiver's sequencer and the grpc receiver's programs).
var RingFeatures = append(BaseFeatures[:len(BaseFeatures):len(BaseFeatures)], AtomicsFeature)

// ProbeFeatures probes fs in order; the first one missing is the error,
// naming it and who needs it.
func ProbeFeatures(who string, fs ...Feature) error {
	for _, f := range fs {
		if err := f.Probe(); err != nil {
			return fmt.Errorf("this kernel lacks %s, which %s needs: %w", f.What, who, err)
		}
	}
	return nil
}

// tracepointProto returns the arguments of a BTF-typed tracepoint.
func tracepointProto(spec *btf.Spec, tp string) (*btf.FuncProto, error) {
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
// and claim the one process exit per process in a map (bpf/seq.bpf.c).
func ExitHasGroupDead() (bool, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false, fmt.Errorf("read kernel BTF: %w", err)
	}
	proto, err := tracepointProto(spec, "sched_process_exit")
	if err != nil {
		return false, err
	}
	return len(proto.Params) >= 3, nil
}

// ProbeAtomics loads a tiny program with the atomic instructions the
// producers use: fetch-add claims tickets, compare-and-exchange owns a
// slot, exchange publishes it.
func ProbeAtomics() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.SocketFilter,
		License:      "GPL",
		Instructions: atomicsProbe(),
	})
	if err != nil {
		return err
	}
	return prog.Close()
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

// atomicsProbe is ProbeAtomics' program. The atomic instructions are spelled
// out with their immediates: cilium/ebpf v0.22's asm.FetchAdd.Mem and the
// like keep the operation in bits of the opcode that Marshal does not write,
// so they reach the kernel as the plain add, which Linux 5.10 accepts (the
// probe then passed there, and loading the producers failed with the
// verifier's "BPF_STX uses reserved fields").
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

// MissingCapabilities names the effective capabilities the programs need and lack.
// CAP_SYS_ADMIN stands in for both, as the kernel allows.
func MissingCapabilities() []string {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return []string{fmt.Sprintf("(capget failed: %v)", err)}
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(capSysAdmin) {
		return nil
	}
	var missing []string
	if !has(capBPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) {
		missing = append(missing, "CAP_PERFMON")
	}
	return missing
}
