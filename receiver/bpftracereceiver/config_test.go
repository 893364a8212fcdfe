// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func loadConfig(t *testing.T, name string) *Config {
	return testutil.LoadConfig(t, NewFactory(), name).(*Config)
}

func TestConfig(t *testing.T) {
	cfg := loadConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	require.Len(t, cfg.Scripts, 1)
	assert.Equal(t, "/usr/sbin/execsnoop.bt", cfg.Scripts[0].Path)

	sched := loadConfig(t, "sched")
	require.NoError(t, confmap.Validate(sched))
	assert.Equal(t, "/usr/bin/bpftrace", sched.Binary)
	assert.Equal(t, "/usr/src/linux-headers-6.1.0-common", sched.Env["BPFTRACE_KERNEL_SOURCE"])
	require.Len(t, sched.Scripts, 1)
	assert.Equal(t, 5*time.Second, sched.Scripts[0].PullInterval)
	assert.Equal(t, []string{"comm"}, sched.Scripts[0].Maps["@opens"].Attributes)
}

func TestConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"empty": "scripts: empty; list one or more bpftrace scripts",
		"bad":   "scripts[0]: both path and program are set; keep exactly one of them",
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
