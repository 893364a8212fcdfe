// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package seqreceiver

import (
	"testing"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

func loadConfig(t *testing.T, name string) *Config {
	return testutil.LoadConfig(t, NewFactory(), name).(*Config)
}

func TestConfigDefaults(t *testing.T) {
	cfg := loadConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, createDefaultConfig(), cfg)
	assert.Equal(t, 65536, cfg.RingSlots)
	assert.Equal(t, []string{"fork", "exec", "exit"}, cfg.Events)
	assert.False(t, cfg.ThreadEvents)
	assert.Equal(t, sequencer.TransportAuto, cfg.Transport)
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, &Config{
		Transport: "sequencer", RingSlots: 1024, Events: []string{"exec", "exit"}, ThreadEvents: true, MaxArgsBytes: 4096, MaxArgs: 100, MaxBatch: 64, Nice: 5,
		Pressure: PressureConfig{Shed: []string{"fork", "exec"}, Above: 0.5},
		Traces: TracesConfig{ServiceName: "build-farm", RootParents: []string{"cron", "make"}, MaxProcesses: 1024,
			MaxMemory: 8 << 20, MaxEventArgsBytes: 4096},
		Redaction: RedactionConfig{Enabled: true},
	}, cfg)
}

func TestConfigRedaction(t *testing.T) {
	cfg := loadConfig(t, "redaction")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, RedactionConfig{Enabled: true, ExtraFlags: []string{"--db-pass", "-P"}, ExtraKeys: []string{"session_id"},
		ExtraPatterns: []string{`sk_live_[0-9a-zA-Z]{24}`, `pin:(\d+)`}}, cfg.Redaction)
	r, err := cfg.Redaction.redactor()
	require.NoError(t, err)
	got, n := r.Args([]string{"app", "--db-pass", "x", "-P", "y", "--session-id=z", "pin:1234", "--password", "p"})
	assert.Equal(t, []string{"app", "--db-pass", "REDACTED", "-P", "REDACTED", "--session-id=REDACTED", "pin:REDACTED", "--password", "REDACTED"}, got)
	assert.Equal(t, 5, n)

	// args: names_only reaches the redactor: every value goes.
	cfg = loadConfig(t, "names_only")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, ArgsNamesOnly, cfg.Redaction.Args)
	r, err = cfg.Redaction.redactor()
	require.NoError(t, err)
	got, n = r.Args([]string{"mysql", "-u", "root", "--host=db", "shop"})
	assert.Equal(t, []string{"mysql", "-u", "REDACTED", "--host=REDACTED", "REDACTED"}, got)
	assert.Equal(t, 3, n)

	cfg = loadConfig(t, "no_redaction")
	require.NoError(t, confmap.Validate(cfg))
	r, err = cfg.Redaction.redactor()
	require.NoError(t, err)
	assert.Nil(t, r)
}

func TestConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"bad_ring":      "ring_slots: 1000 is not allowed; use a power of two from 256 to 4194304",
		"bad_transport": `transport: "bpf" is not a transport; use one of sequencer, ringbuf, perfbuf, auto`,
		"bad_event":     `events: "spawn" is not an event; use fork, exec, exit`,
		"bad_args": "max_args_bytes: 5000 is out of range; use 0 to 4096\n" +
			"max_args: 0 is out of range; use 1 to 2048 (max_args_bytes: 0 turns argv off)",
		"bad_batch": "max_batch: 0 is out of range; use 1 to 65536",
		"bad_nice":  "nice: -21 is out of range; use -20 to 19 (0 leaves the collector's priority as it is)",
		"no_events": "events: empty; list one or more of fork, exec, exit",
		// A nested config's errors come after confmap's path to it
		// ("pressure: "); the setting that depends on transport is
		// checked at the top, naming both.
		"bad_pressure": `transport: "ringbuf" cannot shed (pressure::shed works on the sequencer transport only); use transport: sequencer or auto, or remove pressure::shed` + "\n" +
			"pressure: shed: exit cannot be shed (exits end spans and free the process table); shed fork, exec or thread\n" +
			`shed: "spawn" is not a class; use fork, exec, thread` + "\n" +
			"above: 1.5 is out of range; use 0.1 to 0.99 (a fraction of ring_slots)",
		"bad_redaction": `redaction: extra_patterns[1]: "(unclosed" is not a regular expression (error parsing regexp: missing closing ): ` + "`(unclosed`); fix or remove it\n" +
			`args: "values" is not a redaction mode; use rules (redact the values the rules find) or names_only (keep argv[0] and flag names only)` + "\n" +
			`extra_flags: "db-pass" is not a flag as written on a command line; write it as --db-pass or -P` + "\n" +
			`extra_flags: "--x=y" is not a flag as written on a command line; write it as --db-pass or -P` + "\n" +
			`extra_keys: "a=b" is not a key name; use letters, digits and - _ . only`,
		"bad_traces": "traces: service_name: empty; give the service.name for the process spans\n" +
			"max_processes: 10 is out of range; use 64 to 4194304\n" +
			"max_memory: 1000 is out of range; use 1048576 (1 MiB) to 17179869184 (16 GiB) bytes\n" +
			"max_event_args_bytes: 0 is out of range; use 1024 to 1048576\n" +
			`root_parents: "containerd-shim-runc-v2" is not an executable name as the kernel keeps it; use its first 1 to 15 characters`,
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
