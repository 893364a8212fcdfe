// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// The types below are ebpf_exporter's configuration schema (its
// config.Config and friends), field for field and with the same YAML keys,
// so that an unmodified <name>.yaml decodes to the same values.

// ProgramConfig is one ebpf_exporter config: the contents of <name>.yaml.
type ProgramConfig struct {
	Name        string      `yaml:"name"`
	Metrics     Metrics     `yaml:"metrics"`
	Tracing     Tracing     `yaml:"tracing"`
	Kaddrs      []string    `yaml:"kaddrs"`
	CgroupIDMap CgroupIDMap `yaml:"cgroup_id_map"`

	// YAMLPath and BPFPath are where the config was read from and where
	// its object lives; they are not part of the YAML.
	YAMLPath string `yaml:"-"`
	BPFPath  string `yaml:"-"`
}

// Metrics is the collection of metrics a config exports.
type Metrics struct {
	Counters   []Counter   `yaml:"counters"`
	Histograms []Histogram `yaml:"histograms"`
}

// Counter is a counter read from the map named like it (or, with
// PerfEventArray, counted from the events of the perf event array of that
// name).
type Counter struct {
	Name           string        `yaml:"name"`
	Help           string        `yaml:"help"`
	PerfEventArray bool          `yaml:"perf_event_array"`
	FlushInterval  time.Duration `yaml:"flush_interval"`
	Labels         []Label       `yaml:"labels"`
}

// Histogram is a histogram read from the map named like it; the last
// label is the bucket index.
type Histogram struct {
	Name             string              `yaml:"name"`
	Help             string              `yaml:"help"`
	BucketType       HistogramBucketType `yaml:"bucket_type"`
	BucketMultiplier float64             `yaml:"bucket_multiplier"`
	BucketMin        int                 `yaml:"bucket_min"`
	BucketMax        int                 `yaml:"bucket_max"`
	BucketKeys       []float64           `yaml:"bucket_keys"`
	Labels           []Label             `yaml:"labels"`
}

// Label cuts Size bytes (then skips Padding bytes) of the map key and runs
// them through Decoders in order.
type Label struct {
	Name     string    `yaml:"name"`
	Size     uint      `yaml:"size"`
	Padding  uint      `yaml:"padding"`
	Decoders []Decoder `yaml:"decoders"`
}

// Decoder is one step of a label's decoder chain.
type Decoder struct {
	Name         string            `yaml:"name"`
	StaticMap    map[string]string `yaml:"static_map"`
	Regexps      []string          `yaml:"regexps"`
	AllowUnknown bool              `yaml:"allow_unknown"`
}

// HistogramBucketType says how a bucket index becomes an upper bound.
type HistogramBucketType string

// The bucket types ebpf_exporter knows.
const (
	HistogramBucketExp2         HistogramBucketType = "exp2"
	HistogramBucketExp2WithZero HistogramBucketType = "exp2zero"
	HistogramBucketLinear       HistogramBucketType = "linear"
	HistogramBucketFixed        HistogramBucketType = "fixed"
)

// Tracing is ebpf_exporter's span configuration: each span ring buffer's
// records become spans (package spans).
type Tracing struct {
	Spans []Span `yaml:"spans"`
}

// Span is one ring buffer of span records. Name defaults to RingBuf,
// Service to $OTEL_SERVICE_NAME or "ebpf_exporter".
type Span struct {
	Name    string  `yaml:"name"`
	RingBuf string  `yaml:"ringbuf"`
	Service string  `yaml:"service"`
	Labels  []Label `yaml:"labels"`
}

// CgroupIDMap names a map the exporter keeps filled with the ids of the
// cgroups whose path matches one of Regexps.
type CgroupIDMap struct {
	Name    string          `yaml:"name"`
	Type    CgroupIDMapType `yaml:"type"`
	Regexps []string        `yaml:"regexps"`
}

// CgroupIDMapType is the kind of map a CgroupIDMap names.
type CgroupIDMapType string

// The cgroup id map kinds ebpf_exporter knows; empty means hash.
const (
	CgroupIDMapHashType        CgroupIDMapType = "hash"
	CgroupIDMapCgrpStorageType CgroupIDMapType = "cgrp_storage"
)

// ConfigError is a config that ebpf_exporter would refuse: it names the
// file and, where there is one, the field.
type ConfigError struct {
	Config string // config name
	File   string // file the problem is in
	Field  string // dotted path of the field, e.g. metrics.counters[0].labels[1].size
	Err    error
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("config %q (%s): %v", e.Config, e.File, e.Err)
	}
	return fmt.Sprintf("config %q (%s): %s: %v", e.Config, e.File, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// ObjectErrorf returns a ConfigError about c's object file (BPFPath),
// formatted as fmt.Errorf does.
func (c *ProgramConfig) ObjectErrorf(format string, args ...any) error {
	return &ConfigError{Config: c.Name, File: c.BPFPath, Err: fmt.Errorf(format, args...)}
}

// LoadProgramConfig reads and validates <dir>/<name>.yaml the way
// ebpf_exporter does. Unknown YAML keys are accepted (ebpf_exporter ignores
// them) and returned as warnings. The object file is not opened here.
func LoadProgramConfig(dir, name string) (*ProgramConfig, []string, error) {
	yamlPath := filepath.Join(dir, name+".yaml")
	data, err := os.ReadFile(yamlPath)
	if err != nil {
		return nil, nil, &ConfigError{Config: name, File: yamlPath, Err: fmt.Errorf("error opening config: %w", err)}
	}
	cfg, warnings, err := ParseProgramConfig(name, yamlPath, data)
	if err != nil {
		return nil, warnings, err
	}
	cfg.BPFPath = filepath.Join(dir, name+".bpf.o")
	return cfg, warnings, nil
}

// ParseProgramConfig decodes and validates one config's YAML; file is only
// used in messages.
func ParseProgramConfig(name, file string, data []byte) (*ProgramConfig, []string, error) {
	cfg := &ProgramConfig{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(cfg); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the file is empty")
		}
		return nil, nil, &ConfigError{Config: name, File: file, Err: fmt.Errorf("error parsing config: %w", err)}
	}
	var warnings []string
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&ProgramConfig{}); err != nil {
		warnings = append(warnings, fmt.Sprintf("config %q (%s): keys ebpf_exporter does not know are ignored: %v", name, file, err))
	}
	cfg.Name = name
	cfg.YAMLPath = file
	if err := validateProgramConfig(cfg); err != nil {
		return nil, warnings, err
	}
	return cfg, warnings, nil
}

// Prometheus name rules: a config whose names break them is refused by
// ebpf_exporter when its descriptors are registered.
var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// knownDecoders are the decoder names ebpf_exporter's config schema allows.
var knownDecoders = map[string]bool{
	"cgroup": true, "dname": true, "errno": true, "hex": true, "ifname": true,
	"inet_ip": true, "kstack": true, "ksym": true, "majorminor": true,
	"pci_class": true, "pci_device": true, "pci_subclass": true, "pci_vendor": true,
	"regexp": true, "static_map": true, "string": true, "syscall": true, "uint": true,
}

func validateProgramConfig(cfg *ProgramConfig) error {
	fail := func(field string, format string, args ...any) error {
		return &ConfigError{Config: cfg.Name, File: cfg.YAMLPath, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if cfg.Metrics.Counters == nil && cfg.Metrics.Histograms == nil && cfg.Tracing.Spans == nil {
		return fail("", "neither metrics nor tracing are defined for config %q", cfg.Name)
	}
	names := map[string]string{}
	checkName := func(field, kind, name, help string) error {
		if name == "" {
			return fail(field+".name", "%s %q in config %q lacks name", kind, name, cfg.Name)
		}
		if help == "" {
			return fail(field+".help", "%s %q in config %q lacks help", kind, name, cfg.Name)
		}
		if !metricNameRE.MatchString(name) {
			return fail(field+".name", "%q is not a valid Prometheus metric name (also the map name)", name)
		}
		if prev, dup := names[name]; dup {
			return fail(field+".name", "metric %q is already defined at %s", name, prev)
		}
		names[name] = field
		return nil
	}
	for i, c := range cfg.Metrics.Counters {
		field := fmt.Sprintf("metrics.counters[%d]", i)
		if err := checkName(field, "counter", c.Name, c.Help); err != nil {
			return err
		}
		if c.FlushInterval < 0 {
			return fail(field+".flush_interval", "must not be negative, got %s", c.FlushInterval)
		}
		if err := validateLabels(cfg, field, c.Labels, true); err != nil {
			return err
		}
	}
	for i, h := range cfg.Metrics.Histograms {
		field := fmt.Sprintf("metrics.histograms[%d]", i)
		if err := checkName(field, "histogram", h.Name, h.Help); err != nil {
			return err
		}
		if len(h.Labels) == 0 {
			return fail(field+".labels", "a histogram needs at least one label: the last one is the bucket index")
		}
		if err := validateLabels(cfg, field, h.Labels, true); err != nil {
			return err
		}
		for j, l := range h.Labels[:len(h.Labels)-1] {
			if l.Name == "le" {
				return fail(fmt.Sprintf("%s.labels[%d].name", field, j), `"le" is reserved for histogram buckets`)
			}
		}
		if _, err := HistogramLayout(h); err != nil {
			return fail(field, "%v", err)
		}
	}
	for i, s := range cfg.Tracing.Spans {
		field := fmt.Sprintf("tracing.spans[%d]", i)
		if s.RingBuf == "" {
			return fail(field+".ringbuf", "span %q in config %q lacks ringbuf", s.Name, cfg.Name)
		}
		if err := validateLabels(cfg, field, s.Labels, false); err != nil {
			return err
		}
	}
	for i, k := range cfg.Kaddrs {
		if k == "" {
			return fail(fmt.Sprintf("kaddrs[%d]", i), "empty symbol name")
		}
	}
	if m := cfg.CgroupIDMap; m.Name != "" || m.Type != "" || len(m.Regexps) > 0 {
		if m.Name == "" {
			return fail("cgroup_id_map.name", "cgroup id map in config %q lacks name", cfg.Name)
		}
		switch m.Type {
		case "", CgroupIDMapHashType, CgroupIDMapCgrpStorageType:
		default:
			return fail("cgroup_id_map.type", "cgroup id map %q in config %q has unsupported type %q (want %q or %q)", m.Name, cfg.Name, m.Type, CgroupIDMapHashType, CgroupIDMapCgrpStorageType)
		}
		if len(m.Regexps) == 0 {
			return fail("cgroup_id_map.regexps", "cgroup id map %q in config %q lacks regexps", m.Name, cfg.Name)
		}
		for j, expr := range m.Regexps {
			if _, err := regexp.Compile(expr); err != nil {
				return fail(fmt.Sprintf("cgroup_id_map.regexps[%d]", j), "error compiling regexp %q: %v", expr, err)
			}
		}
	}
	return nil
}

// validateLabels checks a metric's or a span's labels. Only a metric's
// label names become Prometheus labels and follow Prometheus's rule; a
// span's become attribute keys, which ebpf_exporter takes as they are
// (tracing/extract.go: attribute.String(label.Name, value); its upstream
// sched-trace example names two "cpu.orig" and "cpu.dest").
func validateLabels(cfg *ProgramConfig, field string, labels []Label, metric bool) error {
	fail := func(f string, format string, args ...any) error {
		return &ConfigError{Config: cfg.Name, File: cfg.YAMLPath, Field: f, Err: fmt.Errorf(format, args...)}
	}
	seen := map[string]int{}
	for i, l := range labels {
		lf := fmt.Sprintf("%s.labels[%d]", field, i)
		if metric && (!labelNameRE.MatchString(l.Name) || strings.HasPrefix(l.Name, "__")) {
			return fail(lf+".name", "%q is not a valid Prometheus label name", l.Name)
		}
		if j, dup := seen[l.Name]; dup {
			return fail(lf+".name", "duplicate label name %q (also labels[%d])", l.Name, j)
		}
		seen[l.Name] = i
		if l.Size == 0 {
			return fail(lf+".size", "error decoding label %q: size is zero or not set", l.Name)
		}
		if len(l.Decoders) == 0 {
			return fail(lf+".decoders", "error decoding label %q: no decoders set", l.Name)
		}
		for j, d := range l.Decoders {
			df := fmt.Sprintf("%s.decoders[%d]", lf, j)
			if !knownDecoders[d.Name] {
				return fail(df+".name", "unknown decoder %q", d.Name)
			}
			switch d.Name {
			case "regexp":
				if d.Regexps == nil {
					return fail(df+".regexps", "no regexps defined in config")
				}
				for k, expr := range d.Regexps {
					if _, err := regexp.Compile(expr); err != nil {
						return fail(fmt.Sprintf("%s.regexps[%d]", df, k), "error compiling regexp %q: %v", expr, err)
					}
				}
			case "uint":
				// uint reads 1, 2, 4 or 8 bytes; any other size fails every key.
				if j == 0 && l.Size != 1 && l.Size != 2 && l.Size != 4 && l.Size != 8 {
					return fail(lf+".size", "the uint decoder reads 1, 2, 4 or 8 bytes, label %q has size %d", l.Name, l.Size)
				}
			case "ksym":
				if j == 0 && l.Size != 8 {
					return fail(lf+".size", "the ksym decoder reads an 8-byte address, label %q has size %d", l.Name, l.Size)
				}
			case "kstack":
				if j == 0 && l.Size%8 != 0 {
					return fail(lf+".size", "the kstack decoder reads 8-byte addresses, label %q has size %d", l.Name, l.Size)
				}
			case "ifname", "majorminor":
				if j == 0 && l.Size < 4 {
					return fail(lf+".size", "the %s decoder reads a 4-byte number, label %q has size %d", d.Name, l.Name, l.Size)
				}
			}
		}
	}
	return nil
}

// OnlyKeyZero reports whether a metric reads just key uint32(0): one with
// no labels, or a per-CPU one whose only label is cpu.
func OnlyKeyZero(labels []Label, perCPU bool) bool {
	return len(labels) == 0 || (perCPU && len(labels) == 1 && labels[0].Name == "cpu")
}
