// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"errors"
	"fmt"
	"strings"
)

// The defaults of Config's limits: what is kept between collections is
// chosen by other processes (see the budget package).
const (
	// DefaultMaxSeries is the default Config.MaxSeries: decoded map keys
	// and perf_event_array series held at once, over all configs. A
	// node's per-cgroup or per-process maps hold a few thousand.
	DefaultMaxSeries = 50_000
	// DefaultMaxMemory is the default Config.MaxMemory: 32 MiB, about a
	// tenth of the agent's 300 MiB limit; the collection's pdata of as
	// many series is about as much again, in flight to the exporters.
	DefaultMaxMemory = 32 << 20
	// DefaultMaxQueuedSpans is the default Config.MaxQueuedSpans: spans
	// read from the ring buffers and not yet taken by the traces pipeline,
	// over all ring buffers (a span is at most a few hundred bytes: the
	// labels' sizes are the operator's, a cgroup path is cut at
	// maxCgroupPath).
	DefaultMaxQueuedSpans = 8192
)

// Config points at an ebpf_exporter config directory and names the configs
// to load from it, exactly like ebpf_exporter's --config.dir and
// --config.names flags.
type Config struct {
	// ConfigDir holds <name>.yaml next to the compiled <name>.bpf.o.
	ConfigDir string `mapstructure:"config_dir"`
	// Names lists the configs to load; each loads <config_dir>/<name>.yaml
	// and <config_dir>/<name>.bpf.o unmodified.
	Names []string `mapstructure:"names"`
	// Strict fails a config when any of its programs cannot be attached
	// (ebpf_exporter's --config.strict, but per config: the other configs
	// run). By default, as ebpf_exporter, such a program is logged and
	// counted and the rest of its config runs.
	Strict bool `mapstructure:"strict"`
	// MaxSeries bounds the decoded map keys and perf_event_array series
	// held at once, over all configs (0: DefaultMaxSeries). A new key
	// beyond it is left out of the collection and counted.
	MaxSeries int `mapstructure:"max_series"`
	// MaxMemory bounds the bytes those series are charged (0:
	// DefaultMaxMemory).
	MaxMemory int64 `mapstructure:"max_memory"`
	// MaxQueuedSpans bounds the spans read from the ring buffers and not
	// yet taken by the traces pipeline, over all ring buffers (0:
	// DefaultMaxQueuedSpans); records read beyond it are dropped and
	// counted.
	MaxQueuedSpans int `mapstructure:"max_queued_spans"`

	_ struct{}
}

// Validate checks the settings without touching the file system; each
// error names the offending field.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.ConfigDir) == "" {
		errs = append(errs, errors.New("config_dir: empty; set it to the ebpf_exporter config directory"))
	}
	if len(c.Names) == 0 {
		errs = append(errs, errors.New("names: empty; list one or more config names"))
	}
	if c.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("max_series: %d is negative; use 0 for the default (%d) or a positive count", c.MaxSeries, DefaultMaxSeries))
	}
	if c.MaxMemory < 0 {
		errs = append(errs, fmt.Errorf("max_memory: %d is negative; use 0 for the default (%d bytes) or a positive byte count", c.MaxMemory, DefaultMaxMemory))
	}
	if c.MaxQueuedSpans < 0 {
		errs = append(errs, fmt.Errorf("max_queued_spans: %d is negative; use 0 for the default (%d) or a positive count", c.MaxQueuedSpans, DefaultMaxQueuedSpans))
	}
	seen := map[string]int{}
	for i, name := range c.Names {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("names[%d]: empty; give a config name or remove the entry", i))
		case strings.ContainsAny(name, `/\`) || name == "." || name == "..":
			errs = append(errs, fmt.Errorf("names[%d]: %q is a path, not a config name; give the name only (the files are <config_dir>/<name>.yaml and <config_dir>/<name>.bpf.o)", i, name))
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".bpf.o"):
			errs = append(errs, fmt.Errorf("names[%d]: %q has a file suffix; give the config name without .yaml / .bpf.o", i, name))
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("names[%d]: %q is already listed at names[%d]; list it once", i, name, j))
		} else {
			seen[name] = i
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns c with its zero limits set to their defaults.
func (c Config) withDefaults() Config {
	if c.MaxSeries == 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	if c.MaxQueuedSpans == 0 {
		c.MaxQueuedSpans = DefaultMaxQueuedSpans
	}
	return c
}
