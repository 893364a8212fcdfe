// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/internal/multiarch"
)

// attachKind is how a program is attached, decided from its ELF section
// name the way libbpf's auto-attach (plus ebpf_exporter's own perf_event/
// and xdp/ handlers) decides it.
type attachKind int

const (
	attachNone          attachKind = iota // loaded, not attached (bare "kprobe", "tp", ...)
	attachTracepoint                      // tracepoint/<category>/<name>, tp/...
	attachRawTracepoint                   // raw_tracepoint/<name>, raw_tp/...
	attachTracing                         // tp_btf/, fentry/, fexit/, fmod_ret/ (BPF trampolines and BTF tracepoints)
	attachLSM                             // lsm/<hook>
	attachKprobe                          // kprobe/<func>[+<offset>], ksyscall/<name>
	attachKretprobe                       // kretprobe/<func>, kretsyscall/<name>
	attachUprobe                          // uprobe/<binary>:<func>[+<offset>]
	attachUretprobe                       // uretprobe/<binary>:<func>[+<offset>]
	attachPerfEvent                       // perf_event/type=<n>,config=<n>,frequency=<n>
	attachXDP                             // xdp/<ifname>
)

func (k attachKind) String() string {
	switch k {
	case attachNone:
		return "none"
	case attachTracepoint:
		return "tracepoint"
	case attachRawTracepoint:
		return "raw tracepoint"
	case attachTracing:
		return "BTF tracing"
	case attachLSM:
		return "lsm"
	case attachKprobe:
		return "kprobe"
	case attachKretprobe:
		return "kretprobe"
	case attachUprobe:
		return "uprobe"
	case attachUretprobe:
		return "uretprobe"
	case attachPerfEvent:
		return "perf_event"
	case attachXDP:
		return "xdp"
	}
	return "unknown"
}

// attachPlan is what planAttach makes of a section name.
type attachPlan struct {
	kind     attachKind
	section  string
	group    string // tracepoint category
	name     string // tracepoint / raw tracepoint / BTF target name
	symbol   string // kprobe / uprobe function ("" with address for uprobes)
	offset   uint64 // kprobe / uprobe offset from symbol
	address  uint64 // uprobe: absolute address in the binary, when no symbol
	binary   string // uprobe binary as written in the section
	syscall  bool   // ksyscall / kretsyscall: symbol is a syscall name
	perf     perfEventAttr
	iface    string // xdp interface
	disabled bool   // "?" prefix: libbpf does not autoload the program
}

// perfEventAttr is the subset of perf_event_attr ebpf_exporter's
// perf_event/ sections set.
type perfEventAttr struct {
	typ       uint32
	config    uint64
	frequency uint64
}

// ErrNotSupported marks sections this receiver refuses (USDT and program
// types that cannot be auto-attached).
var ErrNotSupported = errors.New("not supported")

// planAttach parses a program's section name. It refuses, with an error
// wrapping ErrNotSupported, what this receiver cannot attach.
func planAttach(section string) (attachPlan, error) {
	p := attachPlan{section: section}
	sec := section
	if strings.HasPrefix(sec, "?") {
		p.disabled = true
		sec = sec[1:]
	}
	kind, rest, hasRest := strings.Cut(sec, "/")
	bad := func(format string, args ...any) (attachPlan, error) {
		return p, fmt.Errorf("section %q: %s", section, fmt.Sprintf(format, args...))
	}
	switch kind {
	case "tracepoint", "tp":
		if !hasRest || rest == "" {
			return p, nil
		}
		group, name, ok := strings.Cut(rest, "/")
		if !ok || group == "" || name == "" {
			return bad("want tracepoint/<category>/<name>")
		}
		p.kind, p.group, p.name = attachTracepoint, group, name
	case "raw_tracepoint", "raw_tp", "raw_tracepoint.w", "raw_tp.w":
		if !hasRest || rest == "" {
			return p, nil
		}
		p.kind, p.name = attachRawTracepoint, rest
	case "tp_btf", "fentry", "fexit", "fmod_ret", "fentry.s", "fexit.s", "fmod_ret.s":
		if !hasRest || rest == "" {
			return bad("%s needs a target: %s/<name>", kind, kind)
		}
		p.kind, p.name = attachTracing, rest
	case "lsm", "lsm.s":
		if !hasRest || rest == "" {
			return bad("lsm needs a hook: lsm/<hook>")
		}
		p.kind, p.name = attachLSM, rest
	case "kprobe", "kretprobe":
		if !hasRest || rest == "" {
			return p, nil
		}
		sym, off, err := splitOffset(rest)
		if err != nil {
			return bad("%v", err)
		}
		if kind == "kretprobe" && off != 0 {
			return bad("kretprobe does not take an offset")
		}
		p.kind, p.symbol, p.offset = attachKprobe, sym, off
		if kind == "kretprobe" {
			p.kind = attachKretprobe
		}
	case "ksyscall", "kretsyscall":
		if !hasRest || rest == "" {
			return p, nil
		}
		p.kind, p.symbol, p.syscall = attachKprobe, rest, true
		if kind == "kretsyscall" {
			p.kind = attachKretprobe
		}
	case "uprobe", "uretprobe", "uprobe.s", "uretprobe.s":
		if !hasRest || rest == "" {
			return p, nil
		}
		bin, fn, ok := strings.Cut(rest, ":")
		if !ok || bin == "" || fn == "" {
			return bad("want %s/<binary>:<function>[+<offset>]", kind)
		}
		p.binary = bin
		if n, err := strconv.ParseUint(fn, 0, 64); err == nil {
			p.address = n
		} else {
			sym, off, err := splitOffset(fn)
			if err != nil {
				return bad("%v", err)
			}
			p.symbol, p.offset = sym, off
		}
		p.kind = attachUprobe
		if strings.HasPrefix(kind, "uretprobe") {
			p.kind = attachUretprobe
		}
	case "usdt", "usdt.s":
		return p, fmt.Errorf("section %q: USDT probes are %w by this receiver (they need libbpf's USDT argument spec machinery); use a uprobe on the probed function instead", section, ErrNotSupported)
	case "perf_event":
		if !hasRest {
			return p, nil
		}
		attr, err := parsePerfEventSection(rest)
		if err != nil {
			return bad("%v", err)
		}
		p.kind, p.perf = attachPerfEvent, attr
	case "xdp":
		if !hasRest || rest == "" || rest == "devmap" || rest == "cpumap" {
			return p, nil
		}
		p.kind, p.iface = attachXDP, rest
	default:
		return p, fmt.Errorf("section %q: auto-attaching this program type is %w (supported: tracepoint/, tp/, raw_tp/, raw_tracepoint/, tp_btf/, fentry/, fexit/, fmod_ret/, lsm/, kprobe/, kretprobe/, ksyscall/, kretsyscall/, uprobe/, uretprobe/, perf_event/, xdp/<ifname>)", section, ErrNotSupported)
	}
	return p, nil
}

// splitOffset splits "func+0x10" into its symbol and offset.
func splitOffset(s string) (string, uint64, error) {
	sym, off, ok := strings.Cut(s, "+")
	if sym == "" {
		return "", 0, fmt.Errorf("missing function name in %q", s)
	}
	if !ok {
		return sym, 0, nil
	}
	n, err := strconv.ParseUint(off, 0, 64)
	if err != nil {
		return "", 0, fmt.Errorf("bad offset %q in %q", off, s)
	}
	return sym, n, nil
}

// parsePerfEventSection parses ebpf_exporter's perf_event/ section
// syntax: comma-separated type=<n>, config=<n> and frequency=<n>.
func parsePerfEventSection(s string) (perfEventAttr, error) {
	var a perfEventAttr
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return a, fmt.Errorf("invalid perf_event item: %q", item)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return a, fmt.Errorf("error parsing value of item %q as integer: %v", item, err)
		}
		switch k {
		case "type":
			a.typ = uint32(n)
		case "config":
			a.config = uint64(n)
		case "frequency":
			a.frequency = uint64(n)
		default:
			return a, fmt.Errorf("unknown perf_event item %q", item)
		}
	}
	return a, nil
}

// resolveBinary finds a uprobe target the way libbpf does: a name with a
// slash is used as is; a shared library (".so" or ".so.") is looked for in
// LD_LIBRARY_PATH, then /usr/lib64:/usr/lib, then the architecture's
// multiarch directories; anything else in PATH, then /usr/bin:/usr/sbin.
func resolveBinary(file string) (string, error) {
	if strings.Contains(file, "/") {
		if _, err := os.Stat(file); err != nil {
			return "", fmt.Errorf("uprobe binary %q: %w", file, err)
		}
		return file, nil
	}
	var search []string
	wantExec := true
	if strings.HasSuffix(file, ".so") || strings.Contains(file, ".so.") {
		wantExec = false
		search = append(search, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
		search = append(search, "/usr/lib64", "/usr/lib")
		search = append(search, multiarch.LibDirs()...)
	} else {
		search = append(search, filepath.SplitList(os.Getenv("PATH"))...)
		search = append(search, "/usr/bin", "/usr/sbin")
	}
	for _, dir := range search {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, file)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if wantExec && st.Mode()&0o111 == 0 {
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("uprobe binary %q not found in %s", file, strings.Join(search, ":"))
}

// SyscallPrefix is the arch prefix of syscall entry points, as libbpf
// uses for ksyscall/.
func SyscallPrefix() string {
	switch runtime.GOARCH {
	case "amd64":
		return "__x64_sys_"
	case "arm64":
		return "__arm64_sys_"
	case "s390x":
		return "__s390x_sys_"
	case "riscv64":
		return "__riscv_sys_"
	case "ppc64le":
		return "sys_"
	}
	return "sys_"
}
