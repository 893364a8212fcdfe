// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-seq/otelcol-seq/internal/testutil"
)

func loadConfig(t *testing.T, name string) *Config {
	return testutil.LoadConfig(t, NewFactory(), name).(*Config)
}

func TestConfigDefaults(t *testing.T) {
	cfg := loadConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, createDefaultConfig(), cfg)
	assert.Equal(t, HookAuto, cfg.Hook)
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, &Config{
		Hook: HookSyscalls, RingSlots: 4096, MaxConnections: 1024, MaxStreamsPerConnection: 100, MaxHeaderBlock: 4096, MaxCaptureRate: 1 << 20,
		MaxHeaderTableSize: 8192, MaxMemory: 32 << 20, IdleTimeout: 30 * time.Second, Ports: []uint16{50051, 8443}, MaxBatch: 64, ServiceName: "mesh",
		TLS: TLSConfig{RescanInterval: 10 * time.Second}, Spans: createDefaultConfig().Spans,
	}, cfg)
}

func TestConfigTLS(t *testing.T) {
	cfg := loadConfig(t, "tls")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, TLSConfig{
		Enabled: true, LibSSLPaths: []string{"/opt/app/lib/libssl.so.3"}, GoBinaries: []string{"/opt/app/bin/server"},
		RescanInterval:     30 * time.Second,
		IncludeExecutables: []string{"/opt/app/bin/*"}, ExcludeExecutables: []string{"*/debug-*"},
		IncludeCgroups: []string{"/kubepods.slice"}, ExcludeCgroups: []string{"/system.slice"},
	}, cfg.TLS)
	assert.Equal(t, 10*time.Second, createDefaultConfig().TLS.RescanInterval)
	cfg.TLS.RescanInterval = 100 * time.Millisecond
	require.EqualError(t, cfg.Validate(), "tls::rescan_interval 100ms: must be 0 (off) or at least 1s")
	cfg.TLS.RescanInterval = 0
	require.NoError(t, cfg.Validate())
	cfg.TLS.Enabled = false
	require.ErrorContains(t, cfg.Validate(), "tls::libssl_paths")
	require.ErrorContains(t, cfg.Validate(), "tls::go_binaries")
	cfg.TLS.LibSSLPaths = nil
	require.ErrorContains(t, cfg.Validate(), "tls::go_binaries")
	cfg.TLS.GoBinaries = nil
	for _, f := range []string{"include_executables", "exclude_executables", "include_cgroups", "exclude_cgroups"} {
		require.ErrorContains(t, cfg.Validate(), "tls::"+f+": set tls::enabled: true as well")
	}
	cfg.TLS.IncludeExecutables, cfg.TLS.ExcludeExecutables, cfg.TLS.IncludeCgroups, cfg.TLS.ExcludeCgroups = nil, nil, nil, nil
	require.NoError(t, cfg.Validate())
}

// Bad globs and cgroup paths are refused, naming the setting and the fix.
func TestConfigTLSFilters(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.TLS.Enabled = true
	cfg.TLS.IncludeExecutables = []string{"/usr/bin/[a-"}
	cfg.TLS.ExcludeExecutables = []string{""}
	cfg.TLS.ExcludeCgroups = []string{"system.slice"}
	err := cfg.Validate()
	require.ErrorContains(t, err, `tls::include_executables: "/usr/bin/[a-" is not a glob`)
	require.ErrorContains(t, err, `tls::exclude_executables: "" is not a glob`)
	require.ErrorContains(t, err, `tls::exclude_cgroups: "system.slice": a cgroup v2 path starts with /`)
	cfg.TLS.IncludeExecutables, cfg.TLS.ExcludeExecutables, cfg.TLS.ExcludeCgroups = []string{"/usr/bin/*", `/opt/\*`}, nil, []string{"/system.slice"}
	require.NoError(t, cfg.Validate())
}

func TestConfigSpans(t *testing.T) {
	cfg := loadConfig(t, "spans")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, SpansConfig{
		Methods: []string{"helloworld.Greeter/SayHello"}, MaxMethods: 50, MaxAttributeLength: 128,
		MaxStatusMessageLength: 64, URLQuery: true,
	}, cfg.Spans)
	for name, mod := range map[string]func(*SpansConfig){
		"max_methods %d: must be from 1 to 65536":                 func(c *SpansConfig) { c.MaxMethods = 0 },
		"max_attribute_length %d: must be from 16 to 65536 bytes": func(c *SpansConfig) { c.MaxAttributeLength = 8 },
		"max_status_message_length":                               func(c *SpansConfig) { c.MaxStatusMessageLength = 1 << 20 },
		`methods: "SayHello" is not a gRPC method`:                func(c *SpansConfig) { c.Methods = []string{"SayHello"} },
	} {
		c := createDefaultConfig()
		mod(&c.Spans)
		err := confmap.Validate(c)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "spans: ", name)
		assert.Contains(t, err.Error(), strings.SplitN(name, " %d", 2)[0], name)
	}
}

func TestConfigHooks(t *testing.T) {
	for _, hook := range []string{HookAuto, HookSocket, HookSyscalls, HookRawSyscalls} {
		c := createDefaultConfig()
		c.Hook = hook
		assert.NoError(t, c.Validate(), hook)
	}
	cfg := loadConfig(t, "raw")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, HookRawSyscalls, cfg.Hook)
	cfg.Hook = "kprobe"
	assert.EqualError(t, cfg.Validate(), `hook "kprobe": must be one of auto, socket, syscalls, raw_syscalls`)
}

func TestConfigInvalid(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"hook":        func(c *Config) { c.Hook = "kprobe" },
		"ring_slots":  func(c *Config) { c.RingSlots = 1000 },
		"connections": func(c *Config) { c.MaxConnections = 1 },
		"streams":     func(c *Config) { c.MaxStreamsPerConnection = 0 },
		"header":      func(c *Config) { c.MaxHeaderBlock = 1 << 21 },
		"rate":        func(c *Config) { c.MaxCaptureRate = 1000 },
		"table":       func(c *Config) { c.MaxHeaderTableSize = 1 << 21 },
		"memory":      func(c *Config) { c.MaxMemory = 1000 },
		"idle":        func(c *Config) { c.IdleTimeout = time.Millisecond },
		"batch":       func(c *Config) { c.MaxBatch = 0 },
		"port":        func(c *Config) { c.Ports = []uint16{0} },
		"service":     func(c *Config) { c.ServiceName = "" },
	} {
		t.Run(name, func(t *testing.T) {
			c := createDefaultConfig()
			mod(c)
			assert.Error(t, c.Validate())
		})
	}
}
