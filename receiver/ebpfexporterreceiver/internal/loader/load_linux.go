// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package loader

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// Options are what Load takes besides the config.
type Options struct {
	// Strict fails the config when a program cannot be attached; by
	// default that program is logged and reported and the rest runs.
	Strict bool
	// KallsymsPath is where kaddrs are looked up (/proc/kallsyms).
	KallsymsPath string
	// Logger gets the programs not attached.
	Logger *zap.Logger
}

// Object is one config's object, loaded into the kernel with its programs
// attached. Close releases it.
type Object struct {
	// Coll holds the loaded programs and maps.
	Coll *ebpf.Collection
	// Metrics are the counters' and histograms' maps, by name, checked
	// against the config.
	Metrics map[string]MetricMap

	plans   map[string]attachPlan
	closers []io.Closer // links and perf events, closed in reverse order
}

// MetricMap is a counter's or histogram's map as the config reads it.
type MetricMap struct {
	Map    *ebpf.Map
	PerCPU bool
	Labels []spec.Label
}

// Load reads cfg's object (cfg.BPFPath), checks its maps against the
// config, loads the programs and attaches them. A program that cannot be
// attached is logged and reported in progs while the rest of the config
// runs, as ebpf_exporter does; with Strict it fails the config. On error
// nothing is left loaded; progs then holds the programs that failed to
// attach, if any.
func Load(cfg *spec.ProgramConfig, opts Options) (_ *Object, progs map[string]error, err error) {
	objSpec, err := loadSpec(cfg.BPFPath)
	if err != nil {
		return nil, nil, &spec.ConfigError{Config: cfg.Name, File: cfg.BPFPath, Err: fmt.Errorf("error loading bpf object: %w", err)}
	}
	objErr := cfg.ObjectErrorf
	plans, progs, err := planPrograms(objSpec, opts.Strict, objErr)
	if err != nil {
		return nil, progs, err
	}
	metrics, err := checkMaps(cfg, objSpec)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.Kaddrs) > 0 {
		if err := setKaddrs(cfg, objSpec, opts.KallsymsPath); err != nil {
			return nil, nil, err
		}
	}
	coll, err := loadCollection(objSpec, plans, objErr)
	if err != nil {
		return nil, nil, err
	}
	o := &Object{Coll: coll, Metrics: metrics, plans: plans}
	defer func() {
		if err != nil {
			_ = o.Close()
		}
	}()
	o.closers = attachPrograms(coll, objSpec, plans, progs, objErr)
	if err := reportUnattached(cfg.Name, progs, opts); err != nil {
		return nil, failedOnly(progs), err
	}
	for name, mm := range metrics {
		if mm.Map = coll.Maps[name]; mm.Map == nil {
			return nil, nil, objErr("map %q is missing after load", name)
		}
		metrics[name] = mm
	}
	return o, progs, nil
}

// loadSpec reads the object as libbpf reads it. libbpf's <bpf/usdt.bpf.h>
// declares its two maps (__bpf_usdt_specs, __bpf_usdt_ip_to_spec_id)
// __weak; in a single object a weak symbol is the definition itself, and
// libbpf takes it as global, while cilium/ebpf refuses the binding
// (cilium/ebpf#466: "unsupported binding STB_WEAK"). So the spec is read
// from a copy in which the weak symbols of .maps are global: the same maps.
// Which programs then attach is planAttach's (USDT ones do not).
func loadSpec(path string) (*ebpf.CollectionSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	globalWeakMaps(b)
	objSpec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, err)
	}
	return objSpec, nil
}

// globalWeakMaps rebinds, in the 64-bit ELF b, every STB_WEAK symbol of
// section .maps to STB_GLOBAL (st_info, byte 4 of an Elf64_Sym). An ELF it
// cannot read is left as it is, for cilium/ebpf to say what is wrong.
func globalWeakMaps(b []byte) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil || f.Class != elf.ELFCLASS64 {
		return
	}
	symtab := f.SectionByType(elf.SHT_SYMTAB)
	syms, err := f.Symbols()
	if symtab == nil || err != nil {
		return
	}
	for i, s := range syms {
		if elf.ST_BIND(s.Info) != elf.STB_WEAK || int(s.Section) >= len(f.Sections) || f.Sections[s.Section].Name != ".maps" {
			continue
		}
		// Symbols omits the null symbol 0.
		b[symtab.Offset+uint64(i+1)*symtab.Entsize+4] = byte(elf.STB_GLOBAL)<<4 | byte(elf.ST_TYPE(s.Info))
	}
}

// Programs is the number of programs loaded.
func (o *Object) Programs() int { return len(o.plans) }

// Close detaches the programs (in the reverse order of attaching) and
// closes the collection.
func (o *Object) Close() error {
	var errs []error
	for i := len(o.closers) - 1; i >= 0; i-- {
		if err := o.closers[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	o.closers = nil
	if o.Coll != nil {
		o.Coll.Close()
		o.Coll = nil
	}
	return errors.Join(errs...)
}

// errorfFunc makes an error as fmt.Errorf does.
type errorfFunc func(format string, args ...any) error

// planPrograms plans the attachment of every program from its section,
// before anything is loaded: with Strict a section that cannot be attached
// fails the config (progs then names only that program); otherwise it is
// reported in progs and still loaded, except what this receiver never
// attaches (ErrNotSupported: it would never run; loaded, a USDT program
// would need what only libbpf gives, <bpf/usdt.bpf.h>'s
// LINUX_HAS_BPF_COOKIE kconfig, which cilium/ebpf does not resolve, and
// fail the config's other programs with it). SEC("?...") programs are
// dropped from spec, as libbpf does not autoload them.
func planPrograms(objSpec *ebpf.CollectionSpec, strict bool, objErr errorfFunc) (plans map[string]attachPlan, progs map[string]error, err error) {
	plans = map[string]attachPlan{}
	progs = map[string]error{}
	for _, pname := range slices.Sorted(maps.Keys(objSpec.Programs)) {
		plan, err := planAttach(objSpec.Programs[pname].SectionName)
		if err != nil {
			err = objErr("program %q: %w", pname, err)
			if strict {
				return nil, map[string]error{pname: err}, err
			}
			progs[pname] = err
			if errors.Is(err, ErrNotSupported) {
				delete(objSpec.Programs, pname)
			}
			continue
		}
		if plan.disabled {
			delete(objSpec.Programs, pname)
			continue
		}
		plans[pname] = plan
	}
	return plans, progs, nil
}

// loadCollection loads the object into the kernel, pinning under libbpf's
// default root the maps that ask for it.
func loadCollection(objSpec *ebpf.CollectionSpec, plans map[string]attachPlan, objErr errorfFunc) (*ebpf.Collection, error) {
	opts := ebpf.CollectionOptions{Cache: btf.NewCache()}
	for _, ms := range objSpec.Maps {
		if ms.Pinning != ebpf.PinNone {
			opts.Maps.PinPath = "/sys/fs/bpf" // libbpf's default pin root
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(objSpec, opts)
	if err != nil {
		return nil, objErr("error loading bpf object into the kernel: %w", explainLoadError(err, plans))
	}
	return coll, nil
}

// attachPrograms attaches every planned program of coll, records each
// outcome in progs (nil: attached) and returns the links to close.
func attachPrograms(coll *ebpf.Collection, objSpec *ebpf.CollectionSpec, plans map[string]attachPlan, progs map[string]error, objErr errorfFunc) []io.Closer {
	var links []io.Closer
	for _, pname := range slices.Sorted(maps.Keys(plans)) {
		plan := plans[pname]
		prog := coll.Programs[pname]
		if prog == nil {
			continue
		}
		if plan.kind == attachNone {
			// libbpf's bpf_program__attach fails such a program (EOPNOTSUPP):
			// ebpf_exporter reports it as a missed attachment.
			progs[pname] = objErr("program %q: not attached: SEC %q names no target, and libbpf does not auto-attach such a section", pname, plan.section)
			continue
		}
		closers, err := attachProgram(prog, objSpec.Programs[pname], plan)
		if err != nil {
			for _, c := range closers {
				_ = c.Close()
			}
			progs[pname] = objErr("program %q: failed to attach %s (SEC %q): %w", pname, plan.kind, plan.section, err)
			continue
		}
		links = append(links, closers...)
		progs[pname] = nil
	}
	return links
}

// reportUnattached logs each program that is not attached; with Strict the
// first (by name) fails the config instead.
func reportUnattached(name string, progs map[string]error, opts Options) error {
	for _, pname := range slices.Sorted(maps.Keys(progs)) {
		if perr := progs[pname]; perr != nil {
			if opts.Strict {
				return perr
			}
			opts.Logger.Warn("program not attached; the rest of its config runs (strict: true fails the config instead)",
				zap.String("config", name), zap.String("program", pname), zap.Error(perr))
		}
	}
	return nil
}

// failedOnly returns the programs of progs that failed.
func failedOnly(progs map[string]error) map[string]error {
	out := map[string]error{}
	for p, err := range progs {
		if err != nil {
			out[p] = err
		}
	}
	return out
}

var percpuMapTypes = map[ebpf.MapType]bool{
	ebpf.PerCPUHash:  true,
	ebpf.PerCPUArray: true,
	ebpf.LRUCPUHash:  true,
}

var readableMapTypes = map[ebpf.MapType]bool{
	ebpf.Hash: true, ebpf.Array: true, ebpf.LRUHash: true,
	ebpf.PerCPUHash: true, ebpf.PerCPUArray: true, ebpf.LRUCPUHash: true,
}

// checkMaps checks every metric's map in the object against the config:
// it must exist, hold u64 values, and its key must be exactly what the
// labels cut (sizes plus paddings; the cpu label of a per-CPU map is not
// part of the key).
func checkMaps(cfg *spec.ProgramConfig, objSpec *ebpf.CollectionSpec) (map[string]MetricMap, error) {
	out := map[string]MetricMap{}
	fail := func(field, format string, args ...any) error {
		return &spec.ConfigError{Config: cfg.Name, File: cfg.YAMLPath, Field: field, Err: fmt.Errorf(format, args...)}
	}
	check := func(field, name string, labels []spec.Label) error {
		ms, ok := objSpec.Maps[name]
		if !ok {
			return fail(field+".name", "failed to retrieve map %q: %s has no map of that name (the map name must equal the metric name)", name, cfg.BPFPath)
		}
		if !readableMapTypes[ms.Type] {
			return fail(field+".name", "map %q is a %s; metrics are read from hash, array, lru_hash and their per-CPU variants", name, ms.Type)
		}
		if ms.ValueSize != 8 {
			return fail(field+".name", "value size for map %q is not expected 8 bytes (u64), it is %d bytes", name, ms.ValueSize)
		}
		perCPU := percpuMapTypes[ms.Type]
		if err := checkKeySize(labels, perCPU, ms); err != nil {
			return fail(field+".labels", "map %q: %v", name, err)
		}
		out[name] = MetricMap{PerCPU: perCPU, Labels: labels}
		return nil
	}
	for i, c := range cfg.Metrics.Counters {
		field := fmt.Sprintf("metrics.counters[%d]", i)
		if c.PerfEventArray {
			ms, ok := objSpec.Maps[c.Name]
			if !ok {
				return nil, fail(field+".name", "failed to retrieve perf event array %q: no map of that name in %s", c.Name, cfg.BPFPath)
			}
			if ms.Type != ebpf.PerfEventArray {
				return nil, fail(field+".perf_event_array", "map %q is a %s, not a perf event array", c.Name, ms.Type)
			}
			continue
		}
		if err := check(field, c.Name, c.Labels); err != nil {
			return nil, err
		}
	}
	for i, h := range cfg.Metrics.Histograms {
		if err := check(fmt.Sprintf("metrics.histograms[%d]", i), h.Name, h.Labels); err != nil {
			return nil, err
		}
	}
	for i, s := range cfg.Tracing.Spans {
		ms, ok := objSpec.Maps[s.RingBuf]
		if !ok {
			return nil, fail(fmt.Sprintf("tracing.spans[%d].ringbuf", i), "no map %q in %s", s.RingBuf, cfg.BPFPath)
		}
		if ms.Type != ebpf.RingBuf {
			return nil, fail(fmt.Sprintf("tracing.spans[%d].ringbuf", i), "map %q is a %s, not a ring buffer", s.RingBuf, ms.Type)
		}
	}
	if m := cfg.CgroupIDMap; m.Name != "" {
		ms, ok := objSpec.Maps[m.Name]
		if !ok {
			return nil, fail("cgroup_id_map.name", "failed to get map %q: no map of that name in %s", m.Name, cfg.BPFPath)
		}
		typ := m.Type
		if typ == "" {
			typ = spec.CgroupIDMapHashType
		}
		want := uint32(8)
		if typ == spec.CgroupIDMapCgrpStorageType {
			want = 4
		}
		if ms.KeySize != want {
			return nil, fail("cgroup_id_map.type", "key size for map %q is not expected %d bytes for map type %s, it is %d bytes", m.Name, want, typ, ms.KeySize)
		}
		if ms.ValueSize != 8 {
			return nil, fail("cgroup_id_map.name", "value size for map %q is not expected 8 bytes (u64), it is %d bytes", m.Name, ms.ValueSize)
		}
	}
	return out, nil
}

// checkKeySize checks that labels cut the map's key exactly.
func checkKeySize(labels []spec.Label, perCPU bool, ms *ebpf.MapSpec) error {
	keyType := ""
	if ms.Key != nil {
		keyType = fmt.Sprintf(" (BTF key type %s)", btfTypeName(ms.Key))
	}
	if spec.OnlyKeyZero(labels, perCPU) {
		if ms.KeySize != 4 {
			what := "with no labels"
			if len(labels) > 0 {
				what = "whose only label is cpu"
			}
			return fmt.Errorf("a metric %s reads key uint32(0), but the map has %d-byte keys%s", what, ms.KeySize, keyType)
		}
		if len(labels) == 1 && labels[0].Size+labels[0].Padding != 2 {
			return fmt.Errorf("the cpu label of a per-CPU map is the CPU number as a uint16: its size must be 2, got size %d padding %d", labels[0].Size, labels[0].Padding)
		}
		return nil
	}
	total := uint(0)
	for _, l := range labels {
		total += l.Size + l.Padding
	}
	if perCPU && labels[len(labels)-1].Name == "cpu" {
		last := labels[len(labels)-1]
		if last.Size+last.Padding != 2 {
			return fmt.Errorf("the cpu label of a per-CPU map is the CPU number as a uint16: its size must be 2, got size %d padding %d", last.Size, last.Padding)
		}
		total -= 2
	}
	if total != uint(ms.KeySize) {
		return fmt.Errorf("label sizes and paddings add up to %d bytes, but the map has %d-byte keys%s", total, ms.KeySize, keyType)
	}
	return nil
}

func btfTypeName(t btf.Type) string {
	switch t := t.(type) {
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	}
	if t.TypeName() != "" {
		return t.TypeName()
	}
	return fmt.Sprintf("%T", t)
}

// setKaddrs sets each "const volatile u64 kaddr_<symbol>" to the
// symbol's address, as ebpf_exporter does for kaddrs.
func setKaddrs(cfg *spec.ProgramConfig, objSpec *ebpf.CollectionSpec, kallsymsPath string) error {
	addrs, err := readKaddrs(kallsymsPath)
	if err != nil {
		return &spec.ConfigError{Config: cfg.Name, File: cfg.YAMLPath, Field: "kaddrs", Err: fmt.Errorf("error populating kaddrs: %w", err)}
	}
	for i, sym := range cfg.Kaddrs {
		field := fmt.Sprintf("kaddrs[%d]", i)
		addr, ok := addrs[sym]
		if !ok {
			return &spec.ConfigError{Config: cfg.Name, File: cfg.YAMLPath, Field: field, Err: fmt.Errorf("error finding kaddr for %q", sym)}
		}
		vname := "kaddr_" + sym
		v, ok := objSpec.Variables[vname]
		if !ok {
			return &spec.ConfigError{Config: cfg.Name, File: cfg.BPFPath, Field: field, Err: fmt.Errorf("error setting kaddr value for %q: the object has no global %q (declare const volatile u64 %s)", sym, vname, vname)}
		}
		if err := v.Set(addr); err != nil {
			return &spec.ConfigError{Config: cfg.Name, File: cfg.BPFPath, Field: field, Err: fmt.Errorf("error setting kaddr value for %q (const volatile %q) to 0x%x: %w", sym, vname, addr, err)}
		}
	}
	return nil
}

// readKaddrs maps symbol names to addresses like ebpf_exporter: lines of
// exactly three space-separated fields, the last occurrence winning.
func readKaddrs(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), " ")
		if len(parts) != 3 {
			continue
		}
		addr, err := strconv.ParseUint(parts[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("error parsing addr %q from line %q: %w", parts[0], sc.Text(), err)
		}
		out[parts[2]] = addr
	}
	return out, sc.Err()
}

// explainLoadError replaces the loader's EPERM advice (raise MEMLOCK)
// with the real reason when an fentry/fexit/fmod_ret program is refused:
// this kernel does not allow BPF trampolines.
//
// A tracepoint/ program whose tracepoint this kernel lacks fails to load
// too (its context type trace_event_raw_* is missing from the kernel's BTF,
// so its CO-RE relocations fail): that is said, wrapping os.ErrNotExist.
func explainLoadError(err error, plans map[string]attachPlan) error {
	for _, name := range slices.Sorted(maps.Keys(plans)) {
		p := plans[name]
		if p.kind != attachTracepoint || !strings.Contains(err.Error(), "program "+name+":") {
			continue
		}
		events := "/sys/kernel/tracing/events"
		if _, serr := os.Stat(events); serr != nil {
			continue // tracefs not mounted: cannot tell
		}
		if _, serr := os.Stat(filepath.Join(events, p.group, p.name)); errors.Is(serr, os.ErrNotExist) {
			return fmt.Errorf("program %q (SEC %q): this kernel has no tracepoint %s:%s (not in %s) (%w); the loader said: %v", name, p.section, p.group, p.name, events, os.ErrNotExist, err)
		}
	}
	if !errors.Is(err, os.ErrPermission) {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(plans)) {
		p := plans[name]
		trampoline := strings.HasPrefix(p.section, "fentry") || strings.HasPrefix(p.section, "fexit") || strings.HasPrefix(p.section, "fmod_ret")
		if trampoline && strings.Contains(err.Error(), "program "+name+":") {
			return fmt.Errorf("program %q (SEC %q): the kernel refused to load it: %w", name, p.section, kernelfeatures.Trampolines.Missing("an fentry/, fexit/ or fmod_ret/ program", os.ErrPermission))
		}
	}
	return err
}
