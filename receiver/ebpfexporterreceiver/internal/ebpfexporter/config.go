// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"errors"
	"fmt"
	"strings"
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
