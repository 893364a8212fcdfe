// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package decoder

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// ErrSkipLabelSet is returned by a decoder (regexp) to drop the whole key.
var ErrSkipLabelSet = errors.New("this label set should be skipped")

// hostOrder is the byte order of map keys and values: the host's.
var hostOrder = binary.NativeEndian

type decodeFunc func(in []byte, conf spec.Decoder) ([]byte, error)

// Env is what the decoders that look things up on the host read.
// Tests point it at fixtures.
type Env struct {
	KallsymsPath   string                    // ksym, kstack
	CgroupPath     func(id uint64) string    // cgroup; "" when unknown
	IfaceName      func(idx uint32) string   // ifname; "" when unknown
	PartitionsPath string                    // majorminor
	PCIIDsPath     string                    // pci_*
	ErrnoName      func(errno uint64) string // errno; "" when unknown
}

// DefaultEnv reads the host: /proc/kallsyms, the cgroup v2 tree under
// /sys/fs/cgroup, the network interfaces, /proc/partitions and
// /usr/share/misc/pci.ids.
func DefaultEnv() Env {
	return Env{
		KallsymsPath:   "/proc/kallsyms",
		CgroupPath:     NewCgroupResolver("/sys/fs/cgroup").resolve,
		IfaceName:      netIfaceName,
		PartitionsPath: "/proc/partitions",
		PCIIDsPath:     "/usr/share/misc/pci.ids",
		ErrnoName:      errnoName,
	}
}

func netIfaceName(idx uint32) string {
	iface, err := net.InterfaceByIndex(int(idx))
	if err != nil {
		return ""
	}
	return iface.Name
}

// Set holds every decoder ebpf_exporter knows, by config name. It
// is safe for concurrent use.
type Set struct {
	mu       sync.Mutex
	decoders map[string]decodeFunc
	regexps  map[string]*regexp.Regexp
	ksyms    *kallsyms
	pci      *pciDB
	ifnames  map[uint32][]byte
	devnames map[uint64][]byte
	env      Env
}

// NewSet returns the decoders, reading the host through env.
func NewSet(env Env) *Set {
	s := &Set{
		regexps:  map[string]*regexp.Regexp{},
		ksyms:    newKallsyms(env.KallsymsPath),
		pci:      newPCIDB(env.PCIIDsPath),
		ifnames:  map[uint32][]byte{},
		devnames: map[uint64][]byte{},
		env:      env,
	}
	s.decoders = map[string]decodeFunc{
		"cgroup":       s.decodeCgroup,
		"dname":        decodeDname,
		"errno":        s.decodeErrno,
		"hex":          decodeHex,
		"ifname":       s.decodeIfname,
		"inet_ip":      decodeInetIP,
		"kstack":       s.decodeKstack,
		"ksym":         s.decodeKsym,
		"majorminor":   s.decodeMajorMinor,
		"pci_class":    s.decodePCIClass,
		"pci_device":   s.decodePCIDevice,
		"pci_subclass": s.decodePCISubclass,
		"pci_vendor":   s.decodePCIVendor,
		"regexp":       s.decodeRegexp,
		"static_map":   decodeStaticMap,
		"string":       decodeString,
		"syscall":      decodeSyscall,
		"uint":         decodeUint,
	}
	return s
}

// DecodeLabels cuts a key into its labels and decodes each, as
// ebpf_exporter does: the label sizes plus paddings must add up to the key
// length exactly. ErrSkipLabelSet is returned as is.
func (s *Set) DecodeLabels(in []byte, labels []spec.Label) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	total := uint(0)
	for _, l := range labels {
		if l.Size == 0 {
			return nil, fmt.Errorf("error decoding label %q: size is zero or not set", l.Name)
		}
		total += l.Size + l.Padding
	}
	if total != uint(len(in)) {
		return nil, fmt.Errorf("error decoding labels: total size of key %#v is %d bytes, but we have labels to decode %d", in, len(in), total)
	}
	values := make([]string, len(labels))
	off := uint(0)
	for i, l := range labels {
		if len(l.Decoders) == 0 {
			return nil, fmt.Errorf("error decoding label %q: no decoders set", l.Name)
		}
		out, err := s.decodeLocked(in[off:off+l.Size], l)
		if err != nil {
			return nil, err
		}
		off += l.Size + l.Padding
		values[i] = string(out)
	}
	return values, nil
}

func (s *Set) decodeLocked(in []byte, l spec.Label) ([]byte, error) {
	result := in
	for _, d := range l.Decoders {
		fn, ok := s.decoders[d.Name]
		if !ok {
			return result, fmt.Errorf("unknown decoder %q", d.Name)
		}
		out, err := fn(result, d)
		if err != nil {
			if errors.Is(err, ErrSkipLabelSet) {
				return out, err
			}
			return out, fmt.Errorf("error decoding with decoder %q: %w", d.Name, err)
		}
		result = out
	}
	return result, nil
}

// decodeOne runs a single decoder; tests use it.
func (s *Set) decodeOne(name string, in []byte, conf spec.Decoder) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conf.Name = name
	return s.decodeLocked(in, spec.Label{Name: "test", Size: uint(len(in)), Decoders: []spec.Decoder{conf}})
}

// uint: 1, 2, 4 or 8 bytes in host order to decimal.
func decodeUint(in []byte, _ spec.Decoder) ([]byte, error) {
	var v uint64
	switch len(in) {
	case 8:
		v = hostOrder.Uint64(in)
	case 4:
		v = uint64(hostOrder.Uint32(in))
	case 2:
		v = uint64(hostOrder.Uint16(in))
	case 1:
		v = uint64(in[0])
	default:
		return nil, fmt.Errorf("unknown value length %d for %#v", len(in), in)
	}
	return []byte(strconv.FormatUint(v, 10)), nil
}

// string: up to the first NUL.
func decodeString(in []byte, _ spec.Decoder) ([]byte, error) {
	for i, b := range in {
		if b == 0 {
			return in[:i], nil
		}
	}
	return in, nil
}

// hex: lowercase hex of the bytes.
func decodeHex(in []byte, _ spec.Decoder) ([]byte, error) {
	return []byte(hex.EncodeToString(in)), nil
}

// inet_ip: 4 or 16 bytes as Go's net.IP prints them.
func decodeInetIP(in []byte, _ spec.Decoder) ([]byte, error) {
	return []byte(net.IP(in).String()), nil
}

// dname: DNS wire-format name (length-prefixed labels) to dotted form;
// input that overruns is returned unchanged.
func decodeDname(in []byte, _ spec.Decoder) ([]byte, error) {
	if len(in) == 0 {
		return []byte("."), nil
	}
	out := make([]byte, len(in))
	for off := 0; off < len(in); {
		n := int(in[off])
		out[off] = '.'
		off++
		if off+n > len(in) {
			return in, nil
		}
		copy(out[off:off+n], in[off:off+n])
		off += n
	}
	return out[1:], nil
}

// static_map: look the (already decoded) value up in the map.
func decodeStaticMap(in []byte, conf spec.Decoder) ([]byte, error) {
	if conf.StaticMap == nil {
		return []byte("empty mapping"), nil
	}
	v, ok := conf.StaticMap[string(in)]
	if !ok {
		if conf.AllowUnknown {
			return in, nil
		}
		return fmt.Appendf(nil, "unknown:%s", in), nil
	}
	return []byte(v), nil
}

// syscall: decimal syscall number to its name.
func decodeSyscall(in []byte, _ spec.Decoder) ([]byte, error) {
	n, err := strconv.Atoi(string(in))
	if err != nil {
		return nil, err
	}
	if name, ok := syscallNames[uint64(n)]; ok {
		return []byte(name), nil
	}
	return fmt.Appendf(nil, "unknown_syscall:%d", uint64(n)), nil
}

// errno: decimal errno to its E* name.
func (s *Set) decodeErrno(in []byte, _ spec.Decoder) ([]byte, error) {
	n, err := strconv.ParseUint(string(in), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("error parsing %q as uint", string(in))
	}
	name := ""
	if s.env.ErrnoName != nil {
		name = s.env.ErrnoName(n)
	}
	if name == "" {
		name = fmt.Sprintf("unknown:%d", n)
	}
	return []byte(name), nil
}

// regexp: the first expression that matches gives the label its match, as
// ebpf_exporter v2.5.1 does: the expression's group when it has exactly one,
// the whole match when it has none (an expression with more groups is
// passed over). No match drops the whole label set.
func (s *Set) decodeRegexp(in []byte, conf spec.Decoder) ([]byte, error) {
	if conf.Regexps == nil {
		return nil, errors.New("no regexps defined in config")
	}
	for _, expr := range conf.Regexps {
		re, ok := s.regexps[expr]
		if !ok {
			var err error
			if re, err = regexp.Compile(expr); err != nil {
				return nil, fmt.Errorf("error compiling regexp %q: %s", expr, err)
			}
			s.regexps[expr] = re
		}
		switch m := re.FindSubmatch(in); len(m) {
		case 2:
			return m[1], nil
		case 1:
			return m[0], nil
		}
	}
	return nil, ErrSkipLabelSet
}

// ksym: 8-byte kernel address to the symbol starting exactly there.
func (s *Set) decodeKsym(in []byte, _ spec.Decoder) ([]byte, error) {
	if len(in) < 8 {
		return nil, fmt.Errorf("ksym needs 8 bytes, got %d", len(in))
	}
	ptr := hostOrder.Uint64(in)
	sym, err := s.ksyms.sym(ptr)
	if err != nil {
		return nil, err
	}
	if sym == "" {
		sym = fmt.Sprintf("unknown_addr:0x%x", ptr)
	}
	return []byte(sym), nil
}

// kstack: array of 8-byte frame addresses (ending at the first zero) to
// newline-separated symbols, "??" for frames below every symbol.
func (s *Set) decodeKstack(in []byte, _ spec.Decoder) ([]byte, error) {
	var addrs []uint64
	for off := 0; off+8 <= len(in); off += 8 {
		ptr := hostOrder.Uint64(in[off : off+8])
		if ptr == 0 {
			break
		}
		addrs = append(addrs, ptr)
	}
	syms, err := s.ksyms.stack(addrs)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(syms)*24)
	for i, sym := range syms {
		if i > 0 {
			out = append(out, '\n')
		}
		if sym == "" {
			sym = "??"
		}
		out = append(out, sym...)
	}
	return out, nil
}

// cgroup: decimal cgroup id to its path under /sys/fs/cgroup.
func (s *Set) decodeCgroup(in []byte, _ spec.Decoder) ([]byte, error) {
	id, err := strconv.Atoi(string(in))
	if err != nil {
		return nil, err
	}
	path := ""
	if s.env.CgroupPath != nil {
		path = s.env.CgroupPath(uint64(id))
	}
	if path == "" {
		path = fmt.Sprintf("unknown_cgroup_id:%d", id)
	}
	return []byte(path), nil
}

// ifname: 4-byte interface index to its name.
func (s *Set) decodeIfname(in []byte, _ spec.Decoder) ([]byte, error) {
	if len(in) < 4 {
		return nil, fmt.Errorf("ifname needs 4 bytes, got %d", len(in))
	}
	idx := hostOrder.Uint32(in[0:4])
	if name, ok := s.ifnames[idx]; ok {
		return name, nil
	}
	name := ""
	if s.env.IfaceName != nil {
		name = s.env.IfaceName(idx)
	}
	if name == "" {
		return fmt.Appendf(nil, "unknown:%d", idx), nil
	}
	s.ifnames[idx] = []byte(name)
	return []byte(name), nil
}
