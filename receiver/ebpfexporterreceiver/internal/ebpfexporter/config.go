// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultCollectionInterval is how often the maps are read when
// Config.CollectionInterval is zero.
const DefaultCollectionInterval = 10 * time.Second

// Config points at an ebpf_exporter config directory and names the configs
// to load from it, exactly like ebpf_exporter's --config.dir and
// --config.names flags.
type Config struct {
	// ConfigDir holds <name>.yaml next to the compiled <name>.bpf.o.
	ConfigDir string `mapstructure:"config_dir"`
	// Names lists the configs to load; each loads <config_dir>/<name>.yaml
	// and <config_dir>/<name>.bpf.o unmodified.
	Names []string `mapstructure:"names"`
	// CollectionInterval is how often every map is read and a
	// pmetric.Metrics handed to the Output. Default 10s.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`

	_ struct{}
}

// NewDefaultConfig returns a Config with the defaults filled in.
func NewDefaultConfig() Config {
	return Config{CollectionInterval: DefaultCollectionInterval}
}

// Validate checks the settings without touching the file system; each
// error names the offending field.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.ConfigDir) == "" {
		errs = append(errs, errors.New("config_dir: must be set to the ebpf_exporter config directory"))
	}
	if len(c.Names) == 0 {
		errs = append(errs, errors.New("names: at least one config name is required"))
	}
	seen := map[string]int{}
	for i, name := range c.Names {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("names[%d]: empty config name", i))
		case strings.ContainsAny(name, `/\`) || name == "." || name == "..":
			errs = append(errs, fmt.Errorf("names[%d]: %q is a path, not a config name (the files are <config_dir>/<name>.yaml and <config_dir>/<name>.bpf.o)", i, name))
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".bpf.o"):
			errs = append(errs, fmt.Errorf("names[%d]: %q: give the config name without the .yaml / .bpf.o suffix", i, name))
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("names[%d]: %q is already listed at names[%d]", i, name, j))
		} else {
			seen[name] = i
		}
	}
	if c.CollectionInterval < 0 {
		errs = append(errs, fmt.Errorf("collection_interval: must be positive, got %s", c.CollectionInterval))
	} else if c.CollectionInterval > 0 && c.CollectionInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("collection_interval: %s is below the 100ms minimum", c.CollectionInterval))
	}
	return errors.Join(errs...)
}

func (c *Config) interval() time.Duration {
	if c.CollectionInterval <= 0 {
		return DefaultCollectionInterval
	}
	return c.CollectionInterval
}
