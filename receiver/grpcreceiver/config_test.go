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

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
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
		MaxCaptureRatePerUser: 2 << 20, CaptureFrameCost: 32,
		MaxHeaderTableSize: 8192, MaxMemory: 32 << 20, IdleTimeout: 30 * time.Second, Ports: []uint16{50051, 8443}, MaxBatch: 64, ServiceName: "mesh",
		TLS: TLSConfig{RescanInterval: 10 * time.Second}, Spans: createDefaultConfig().Spans,
		Protocols: ProtocolsConfig{HTTP2: true},
	}, cfg)
	cfg.Protocols.HTTP2 = false
	require.ErrorContains(t, confmap.Validate(cfg), "protocols: http2 and http1 are both off: nothing to capture; turn one on")
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
	// confmap puts the nested config's path before its errors.
	require.EqualError(t, confmap.Validate(cfg), "tls: rescan_interval: 100ms is too short; use 0 (off) or at least 1s")
	cfg.TLS.RescanInterval = 0
	require.NoError(t, confmap.Validate(cfg))
	cfg.TLS.Enabled = false
	require.ErrorContains(t, confmap.Validate(cfg), "tls: libssl_paths: set while TLS capture is off; set enabled: true as well")
	require.ErrorContains(t, confmap.Validate(cfg), "go_binaries")
	cfg.TLS.LibSSLPaths = nil
	require.ErrorContains(t, confmap.Validate(cfg), "tls: go_binaries")
	cfg.TLS.GoBinaries = nil
	for _, f := range []string{"include_executables", "exclude_executables", "include_cgroups", "exclude_cgroups"} {
		require.ErrorContains(t, confmap.Validate(cfg), "tls: ")
		require.ErrorContains(t, confmap.Validate(cfg), f+": set while TLS capture is off; set enabled: true as well")
	}
	cfg.TLS.IncludeExecutables, cfg.TLS.ExcludeExecutables, cfg.TLS.IncludeCgroups, cfg.TLS.ExcludeCgroups = nil, nil, nil, nil
	require.NoError(t, confmap.Validate(cfg))
}

// Bad globs and cgroup paths are refused, naming the setting and the fix.
func TestConfigTLSFilters(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.TLS.Enabled = true
	cfg.TLS.IncludeExecutables = []string{"/usr/bin/[a-"}
	cfg.TLS.ExcludeExecutables = []string{""}
	cfg.TLS.ExcludeCgroups = []string{"system.slice"}
	err := confmap.Validate(cfg)
	require.ErrorContains(t, err, `tls: include_executables: "/usr/bin/[a-" is not a glob`)
	require.ErrorContains(t, err, `exclude_executables: "" is not a glob`)
	require.ErrorContains(t, err, `exclude_cgroups: "system.slice" is not a cgroup v2 path; start it with /`)
	cfg.TLS.IncludeExecutables, cfg.TLS.ExcludeExecutables, cfg.TLS.ExcludeCgroups = []string{"/usr/bin/*", `/opt/\*`}, nil, []string{"/system.slice"}
	require.NoError(t, confmap.Validate(cfg))
}

func TestConfigSpans(t *testing.T) {
	cfg := loadConfig(t, "spans")
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, SpansConfig{
		Methods: []string{"helloworld.Greeter/SayHello"}, MaxMethods: 50, MaxAttributeLength: 128,
		MaxStatusMessageLength: 64, URLQuery: true,
	}, cfg.Spans)
	for name, mod := range map[string]func(*SpansConfig){
		"max_methods: 0 is out of range; use 1 to 65536":                 func(c *SpansConfig) { c.MaxMethods = 0 },
		"max_attribute_length: 8 is out of range; use 16 to 65536 bytes": func(c *SpansConfig) { c.MaxAttributeLength = 8 },
		"max_status_message_length: 1048576 is out of range":             func(c *SpansConfig) { c.MaxStatusMessageLength = 1 << 20 },
		`methods: "SayHello" is not a gRPC method`:                       func(c *SpansConfig) { c.Methods = []string{"SayHello"} },
	} {
		c := createDefaultConfig()
		mod(&c.Spans)
		err := confmap.Validate(c)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "spans: "+name, name)
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
	assert.EqualError(t, cfg.Validate(), `hook: "kprobe" is not a hook; use one of auto, socket, syscalls, raw_syscalls`)
}

func TestConfigInvalid(t *testing.T) {
	for want, mod := range map[string]func(*Config){
		`hook: "kprobe" is not a hook`:                           func(c *Config) { c.Hook = "kprobe" },
		"ring_slots: 1000 is not allowed; use a power of two":    func(c *Config) { c.RingSlots = 1000 },
		"max_connections: 1 is out of range; use 16 to":          func(c *Config) { c.MaxConnections = 1 },
		"max_streams_per_connection: 0 is out of range; use 1":   func(c *Config) { c.MaxStreamsPerConnection = 0 },
		"max_header_block: 2097152 is out of range; use 1024":    func(c *Config) { c.MaxHeaderBlock = 1 << 21 },
		"max_capture_rate: 1000 is out of range; use 0":          func(c *Config) { c.MaxCaptureRate = 1000 },
		"max_capture_rate_per_user: 1000 is out of range; use 0": func(c *Config) { c.MaxCaptureRatePerUser = 1000 },
		"capture_frame_cost: -1 is out of range; use 0":          func(c *Config) { c.CaptureFrameCost = -1 },
		"max_header_table_size: 2097152 is out of range; use":    func(c *Config) { c.MaxHeaderTableSize = 1 << 21 },
		"max_memory: 1000 is out of range; use 1048576":          func(c *Config) { c.MaxMemory = 1000 },
		"idle_timeout: 1ms is too short; use at least 1s":        func(c *Config) { c.IdleTimeout = time.Millisecond },
		"max_batch: 0 is out of range; use 1 to 65536":           func(c *Config) { c.MaxBatch = 0 },
		"ports: 0 is not a port":                                 func(c *Config) { c.Ports = []uint16{0} },
		"service_name: empty; give the service.name":             func(c *Config) { c.ServiceName = "" },
	} {
		t.Run(strings.SplitN(want, ":", 2)[0], func(t *testing.T) {
			c := createDefaultConfig()
			mod(c)
			assert.ErrorContains(t, c.Validate(), want)
		})
	}
}
