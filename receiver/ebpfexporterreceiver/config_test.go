// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporterreceiver

import (
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

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
	assert.Equal(t, "/etc/ebpf_exporter", cfg.ConfigDir)
	assert.Equal(t, []string{"biolatency", "timers"}, cfg.Names)
	assert.Equal(t, 10*time.Second, cfg.CollectionInterval, "ebpf_exporter's own default")

	fast := loadConfig(t, "fast")
	require.NoError(t, confmap.Validate(fast))
	assert.Equal(t, 500*time.Millisecond, fast.CollectionInterval)
	assert.Zero(t, fast.InitialDelay)
	assert.False(t, fast.Strict, "as ebpf_exporter: a program that cannot attach is reported, its config runs")

	strict := loadConfig(t, "strict")
	require.NoError(t, confmap.Validate(strict))
	assert.True(t, strict.Strict)
}

func TestConfigInvalid(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "empty"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config_dir: empty; set it to the ebpf_exporter config directory")
	assert.Contains(t, err.Error(), "names: empty; list one or more config names")

	err = confmap.Validate(loadConfig(t, "bad"))
	require.Error(t, err)
	for _, want := range []string{
		`names[0]: "biolatency.yaml" has a file suffix; give the config name without .yaml / .bpf.o`,
		`names[1]: "a/b" is a path, not a config name`,
		"collection_interval: 10ms is too short; use at least 100ms",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestConfigNegativeTimeout(t *testing.T) {
	cfg := loadConfig(t, "")
	cfg.Timeout = -time.Second
	// scraperhelper's ControllerConfig refuses it too, but its message
	// names a "controllerconfig" key no YAML has; this one names the fix.
	assert.ErrorContains(t, confmap.Validate(cfg), "timeout: -1s is negative; use 0 or a positive duration")
}

// Every field, set to a value that is not its default, arrives in the
// Config (TestConfigFieldsArrive takes them on to the code they
// configure); AssertEveryFieldSet fails when a field is added without
// being set here.
func TestConfigEveryField(t *testing.T) {
	cfg := loadConfig(t, "every_field")
	require.NoError(t, confmap.Validate(cfg))
	want := createDefaultConfig()
	want.ConfigDir, want.Names, want.Strict = "/etc/ebpf_exporter", []string{"biolatency"}, true
	want.CollectionInterval, want.InitialDelay, want.Timeout = 150*time.Millisecond, 10*time.Millisecond, 5*time.Second
	want.MaxSeries, want.MaxMemory, want.MaxQueuedSpans = 7, 12345, 3 // TestConfigLimitsArrive: they reach the exporter
	assert.Equal(t, want, cfg)
	testutil.AssertEveryFieldSet(t, cfg)
}
