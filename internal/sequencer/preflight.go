//go:build linux

package sequencer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf/btf"
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
// missing privilege or kernel feature is named instead of a verifier dump.
func Preflight() error {
	if missing := MissingCapabilities(); len(missing) > 0 {
		return fmt.Errorf("the seq receiver needs the capabilities CAP_BPF and CAP_PERFMON (or root); missing %s: run the collector as root or grant them with `setcap cap_bpf,cap_perfmon+ep <collector binary>`", strings.Join(missing, " and "))
	}
	if _, err := os.Stat(BTFPath); err != nil {
		return fmt.Errorf("kernel BTF not found at %s (%v): the seq receiver's tp_btf programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y", BTFPath, err)
	}
	if major, minor, ok := kernelVersion(); ok && (major < 5 || major == 5 && minor < 12) {
		return fmt.Errorf("kernel %d.%d is too old: the sequencer needs BPF atomic fetch-add and exchange, Linux 5.12 or newer", major, minor)
	}
	return checkExitTracepoint()
}

// checkExitTracepoint makes sure sched_process_exit passes group_dead (Linux
// 6.16+), which tells a process exit from a thread exit.
func checkExitTracepoint() error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("read kernel BTF: %w", err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_process_exit", &td); err != nil {
		return fmt.Errorf("kernel BTF has no sched_process_exit tracepoint: %w", err)
	}
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return fmt.Errorf("kernel BTF: btf_trace_sched_process_exit is %v, not a function pointer", td.Type)
	}
	proto, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok || len(proto.Params) < 3 {
		return errors.New("this kernel's sched_process_exit tracepoint lacks the group_dead argument that tells a process exit from a thread exit: the seq receiver needs Linux 6.16 or newer")
	}
	return nil
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

func kernelVersion() (major, minor int, ok bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return 0, 0, false
	}
	_, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major, minor, err == nil
}
