// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
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

func TestConfigArgs(t *testing.T) {
	cfg := loadConfig(t, "args")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, []string{"42", "-x y"}, cfg.Scripts[0].Args)

	// Arguments are strings, as on a command line: YAML numbers or
	// booleans are refused (quote them).
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("bpftrace/args_numbers")
	require.NoError(t, err)
	err = sub.Unmarshal(NewFactory().CreateDefaultConfig())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'scripts[0].args[0]' expected type 'string', got unconvertible type 'int'")
	assert.Contains(t, err.Error(), "'scripts[0].args[1]' expected type 'string', got unconvertible type 'bool'")
}

func TestConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"empty":      "scripts: empty; list one or more bpftrace scripts",
		"bad":        "scripts[0]: both path and program are set; keep exactly one of them",
		"bad_redact": `scripts[0].redact: "secrets" is not a redaction; use argv (redact secrets in printed command lines, as execsnoop prints them) or none`,
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// TestShippedConfigRedactsExecsnoop: config/bpftrace.yaml turns redaction
// on for execsnoop.bt, whose lines are every command line on the host.
func TestShippedConfigRedactsExecsnoop(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("..", "..", "config", "bpftrace.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("receivers::bpftrace")
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	found := false
	for _, sc := range cfg.Scripts {
		if filepath.Base(sc.Path) == "execsnoop.bt" {
			found = true
			assert.Equal(t, "argv", sc.Redact)
		}
	}
	assert.True(t, found, "the shipped config runs execsnoop.bt")
}

// Every field of the configuration, set to a value that is not its
// default, arrives in the Config the runner gets (a field without its
// mapstructure tag, or squashed away, would not); nonZeroFields fails when
// a field is added to the Config without being set here.
// internal/bpftrace's TestConfigFieldsReachRunner takes the same values
// on to the code each configures.
func TestConfigEveryField(t *testing.T) {
	cfg := loadConfig(t, "every_field")
	monotonic := false
	assert.Equal(t, &Config{Config: bpftrace.Config{
		Binary:           "/opt/bpftrace/bin/bpftrace",
		Env:              map[string]string{"BPFTRACE_STRLEN": "200"},
		MaxBufferedBytes: 8 << 20,
		MaxLineBytes:     128,
		Scripts: []bpftrace.ScriptConfig{{
			Name:         "fields",
			Path:         "/etc/otelcol/fields.bt",
			Args:         []string{"7", "-x"},
			PullInterval: 250 * time.Millisecond,
			Redact:       "argv",
			Maps: map[string]bpftrace.MapConfig{"@k": {
				Type: bpftrace.MapTypeSum, Name: "custom.k", Attributes: []string{"first", "second"},
				Monotonic: &monotonic, Unit: "{call}", Description: "keyed calls",
			}},
		}, {Program: "BEGIN { exit(); }"}},
	}}, cfg)
	testutil.AssertEveryFieldSet(t, cfg.Config)
	testutil.AssertEveryFieldSet(t, cfg.Scripts[0], "Program") // Path, or Program:
	assert.NotEmpty(t, cfg.Scripts[1].Program)
	testutil.AssertEveryFieldSet(t, cfg.Scripts[0].Maps["@k"])
}
