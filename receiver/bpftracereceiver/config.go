// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"errors"

	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"
)

// Config is the bpftrace receiver's configuration:
//
//	bpftrace:
//	  binary: bpftrace        # on PATH, 0.13 or newer
//	  env: {}                 # e.g. BPFTRACE_KERNEL_SOURCE
//	  scripts:
//	    - path: /usr/sbin/execsnoop.bt
//	    - name: opens
//	      program: 'tracepoint:syscalls:sys_enter_openat { @opens[comm] = count(); }'
//	      pull_interval: 10s
//	      maps: {"@opens": {type: sum, attributes: [comm]}}
type Config struct {
	bpftrace.Config `mapstructure:",squash"`
}

// Validate asks for at least one script; confmap validates the embedded
// bpftrace.Config (each script, each map) itself.
func (c *Config) Validate() error {
	if len(c.Scripts) == 0 {
		return errors.New("scripts: empty; list one or more bpftrace scripts (path: a .bt file, or program: its text)")
	}
	return nil
}
