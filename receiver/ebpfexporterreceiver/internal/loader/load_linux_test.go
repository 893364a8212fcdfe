// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package loader

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// fixturesDir holds the fixtures built for this machine's architecture.
var fixturesDir = testutil.ArchDir("../../../../testdata/ebpf_exporter")

func label(name string, size, padding uint) spec.Label {
	return spec.Label{Name: name, Size: size, Padding: padding, Decoders: []spec.Decoder{{Name: "uint"}}}
}

// TestCheckKeySize pins which label layouts fit which keys (no kernel needed).
func TestCheckKeySize(t *testing.T) {
	hash := func(keySize uint32) *ebpf.MapSpec {
		return &ebpf.MapSpec{Type: ebpf.Hash, KeySize: keySize, ValueSize: 8}
	}
	for _, c := range []struct {
		name   string
		labels []spec.Label
		perCPU bool
		spec   *ebpf.MapSpec
		err    string
	}{
		{"sizes add up", []spec.Label{label("a", 4, 0), label("b", 1, 3), label("c", 8, 0)}, false, hash(16), ""},
		{"too short", []spec.Label{label("a", 4, 0), label("b", 4, 0)}, false, hash(12), "label sizes and paddings add up to 8 bytes, but the map has 12-byte keys"},
		{"padding counts", []spec.Label{label("a", 4, 4)}, false, hash(4), "add up to 8 bytes, but the map has 4-byte keys"},
		{"no labels: u32 key", nil, false, hash(4), ""},
		{"no labels: other key", nil, false, hash(8), "a metric with no labels reads key uint32(0), but the map has 8-byte keys"},
		{"per-CPU with cpu last", []spec.Label{label("pid", 4, 0), label("cpu", 2, 0)}, true, hash(4), ""},
		{"per-CPU cpu label not 2 bytes", []spec.Label{label("pid", 4, 0), label("cpu", 4, 0)}, true, hash(4), "the cpu label of a per-CPU map is the CPU number as a uint16"},
		{"per-CPU only cpu", []spec.Label{label("cpu", 2, 0)}, true, hash(4), ""},
		{"per-CPU only cpu, wide key", []spec.Label{label("cpu", 2, 0)}, true, hash(8), "whose only label is cpu reads key uint32(0)"},
		{"cpu label on a shared map is an ordinary label", []spec.Label{label("cpu", 4, 0)}, false, hash(4), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkKeySize(c.labels, c.perCPU, c.spec)
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

// TestCheckMapsAgainstObject checks a fixture's object against configs
// that do and do not match it (no kernel needed: only the ELF is read).
func TestCheckMapsAgainstObject(t *testing.T) {
	objSpec, err := ebpf.LoadCollectionSpec(filepath.Join(fixturesDir, "ebpfx_counters.bpf.o"))
	require.NoError(t, err)
	cfg, _, err := spec.LoadProgramConfig(fixturesDir, "ebpfx_counters")
	require.NoError(t, err)
	metrics, err := checkMaps(cfg, objSpec)
	require.NoError(t, err)
	assert.Len(t, metrics, len(cfg.Metrics.Counters))
	assert.True(t, metrics["ebpfx_getppid_per_cpu_total"].PerCPU)
	assert.False(t, metrics["ebpfx_syscalls_total"].PerCPU)

	for _, c := range []struct {
		name, yaml, field, msg string
	}{
		{"perf array is not a perf event array", "metrics:\n  counters:\n    - {name: ebpfx_getppid_calls_total, help: x, perf_event_array: true}\n", "metrics.counters[0].perf_event_array", "is a Array, not a perf event array"},
		{"histogram on a counter map", "metrics:\n  histograms:\n    - {name: ebpfx_getppid_by_cgroup_total, help: x, bucket_type: exp2, bucket_max: 3, labels: [{name: bucket, size: 4, decoders: [{name: uint}]}]}\n", "metrics.histograms[0].labels", "add up to 4 bytes, but the map has 8-byte keys (BTF key type u64)"},
		{"span ringbuf missing", "tracing:\n  spans:\n    - {name: s, ringbuf: nope, labels: []}\n", "tracing.spans[0].ringbuf", `no map "nope"`},
		{"cgroup id map key size", "metrics:\n  counters: [{name: ebpfx_getppid_calls_total, help: x}]\ncgroup_id_map: {name: ebpfx_getppid_calls_total, regexps: [x]}\n", "cgroup_id_map.type", "key size for map \"ebpfx_getppid_calls_total\" is not expected 8 bytes for map type hash, it is 4 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, _, err := spec.ParseProgramConfig("t", "t.yaml", []byte(c.yaml))
			require.NoError(t, err)
			cfg.BPFPath = "t.bpf.o"
			_, err = checkMaps(cfg, objSpec)
			var ce *spec.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.field, ce.Field)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-3,5,7-8")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2, 3, 5, 7, 8}, got)
	got, err = parseCPUList("0")
	require.NoError(t, err)
	assert.Equal(t, []int{0}, got)
	_, err = parseCPUList("3-1")
	assert.Error(t, err)
	_, err = parseCPUList("x")
	assert.Error(t, err)
}

// TestSectionsOfFixtures: every fixture's programs plan as expected.
func TestSectionsOfFixtures(t *testing.T) {
	want := map[string]attachKind{
		"ebpfx_counters": attachTracepoint, "ebpfx_histograms": attachTracepoint,
		"ebpfx_attach": attachRawTracepoint, "ebpfx_xdp": attachXDP, "ebpfx_uprobe": attachUprobe,
		"ebpfx_kprobe": attachKprobe, "ebpfx_fentry": attachTracing,
	}
	for name, kind := range want {
		objSpec, err := ebpf.LoadCollectionSpec(filepath.Join(fixturesDir, name+".bpf.o"))
		require.NoError(t, err, name)
		kinds := map[attachKind]bool{}
		for _, p := range objSpec.Programs {
			plan, err := planAttach(p.SectionName)
			require.NoError(t, err, p.SectionName)
			kinds[plan.kind] = true
		}
		assert.True(t, kinds[kind], "%s: %v", name, kinds)
	}
	objSpec, err := ebpf.LoadCollectionSpec(filepath.Join(fixturesDir, "ebpfx_usdt.bpf.o"))
	require.NoError(t, err)
	for _, p := range objSpec.Programs {
		_, err := planAttach(p.SectionName)
		assert.ErrorIs(t, err, ErrNotSupported)
	}
}

// TestLoadSpecWeakMaps: libbpf's <bpf/usdt.bpf.h> declares its maps
// __weak (ebpf_exporter's upstream usdt and sched-trace examples);
// cilium/ebpf refuses the binding, loadSpec reads them as libbpf does. The
// fixture's map is made weak in a copy, as clang writes
// __attribute__((weak)): the symbol's binding byte.
func TestLoadSpecWeakMaps(t *testing.T) {
	orig := filepath.Join(fixturesDir, "ebpfx_usdt.bpf.o")
	b, err := os.ReadFile(orig)
	require.NoError(t, err)
	f, err := elf.Open(orig)
	require.NoError(t, err)
	syms, err := f.Symbols()
	require.NoError(t, err)
	symtab := f.SectionByType(elf.SHT_SYMTAB)
	require.NotNil(t, symtab)
	weak := 0
	for i, s := range syms {
		if s.Name == "ebpfx_usdt_calls_total" {
			b[symtab.Offset+uint64(i+1)*symtab.Entsize+4] = byte(elf.STB_WEAK)<<4 | byte(elf.ST_TYPE(s.Info))
			weak++
		}
	}
	require.NoError(t, f.Close())
	require.Equal(t, 1, weak)
	path := filepath.Join(t.TempDir(), "weak.bpf.o")
	require.NoError(t, os.WriteFile(path, b, 0o644))

	_, err = ebpf.LoadCollectionSpec(path)
	require.ErrorContains(t, err, `map "ebpfx_usdt_calls_total": unsupported binding: STB_WEAK`)
	want, err := ebpf.LoadCollectionSpec(orig)
	require.NoError(t, err)
	got, err := loadSpec(path)
	require.NoError(t, err)
	require.Contains(t, got.Maps, "ebpfx_usdt_calls_total")
	assert.Equal(t, want.Maps["ebpfx_usdt_calls_total"].KeySize, got.Maps["ebpfx_usdt_calls_total"].KeySize)
	assert.Equal(t, want.Maps["ebpfx_usdt_calls_total"].MaxEntries, got.Maps["ebpfx_usdt_calls_total"].MaxEntries)
	assert.Equal(t, len(want.Programs), len(got.Programs))
}

// TestLoadLeavesOutUnsupported: a program the receiver never attaches (a
// USDT probe) is reported and not loaded; the config's maps are.
func TestLoadLeavesOutUnsupported(t *testing.T) {
	testutil.RequireRoot(t)
	cfg, _, err := spec.LoadProgramConfig(fixturesDir, "ebpfx_usdt")
	require.NoError(t, err)
	o, progs, err := Load(cfg, Options{Logger: zap.NewNop()})
	require.NoError(t, err)
	defer o.Close()
	require.Len(t, progs, 1)
	for name, perr := range progs {
		require.ErrorIs(t, perr, ErrNotSupported)
		assert.NotContains(t, o.Coll.Programs, name)
	}
	assert.Zero(t, o.Programs())
	assert.Contains(t, o.Metrics, "ebpfx_usdt_calls_total")
}
