// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// Hook names where the kernel programs see the bytes (capture.Hook, kept
// here as strings so the config builds on every platform).
const (
	HookAuto        = "auto"
	HookSocket      = "socket"
	HookSyscalls    = "syscalls"
	HookRawSyscalls = "raw_syscalls"
)

// hooks are the accepted hook names.
var hooks = []string{HookAuto, HookSocket, HookSyscalls, HookRawSyscalls}

// Limits of the settings, shared by Validate and the docs.
const (
	minConnections    = 16
	maxConnections    = 1 << 20
	maxStreams        = 1 << 16
	minHeaderBlock    = 1024
	maxHeaderBlock    = 1 << 20 // capture.MaxHeaderCap
	minIdleTimeout    = time.Second
	minTableSize      = 4096    // SETTINGS_HEADER_TABLE_SIZE's initial value
	maxTableSize      = 1 << 20 // per direction and connection
	minMemory         = 1 << 20
	maxMemory         = 16 << 30
	maxMaxBatch       = 65536
	defaultMaxBatch   = 1024
	defaultServiceNm  = "grpc-calls"
	defaultHeaderCap  = 16 << 10
	defaultIdleWindow = 5 * time.Minute
	defaultRescan     = 10 * time.Second
	minRescan         = time.Second
	// 8 MiB/s: over 100 k gRPC calls a second on one connection (grpc-go's
	// unary calls copy about 36 bytes of frame headers and header blocks
	// per call and socket once HPACK has indexed them: TestCaptureTLSGo).
	defaultCaptureRate = 8 << 20
	minCaptureRate     = 64 << 10
	maxCaptureRate     = 1 << 30
	// Two connections' share per user; 64 tokens a frame (BenchmarkShareCost:
	// the tracker pays about 500 ns for a record of one RST_STREAM frame,
	// what it pays for 25 to 35 bytes of request header blocks; the rest
	// covers the ring and the reader's wake-ups).
	defaultCaptureRatePerUser = 16 << 20
	defaultFrameCost          = 64
	maxFrameCost              = 64 << 10 // capture.MaxFrameCost
	maxMaxMethods             = 1 << 16
	minValueLength            = 16
	maxValueLength            = 1 << 16
)

// Config is the grpc receiver's configuration. `grpc: {}` uses the defaults.
type Config struct {
	// Hook is where the kernel programs see the bytes: socket (the
	// sock:sock_send_length / sock_recv_length tracepoints, Linux 6.3+),
	// syscalls (the syscalls:sys_exit_* tracepoints of write, writev, sendto,
	// sendmsg, read, readv, recvfrom, recvmsg), raw_syscalls (the same calls
	// picked from raw_syscalls:sys_exit, a raw tracepoint: for kernels that
	// refuse BPF on the syscalls:* ones, such as PREEMPT_RT before 6.3) or
	// auto (socket where the kernel has it, else syscalls, else raw_syscalls).
	Hook string `mapstructure:"hook"`

	// RingSlots is the number of 128-byte slots of the capture ring (a power
	// of two). Records the reader falls a whole ring behind on are lost,
	// counted, and the calls they carried are flagged with a gap.
	RingSlots int `mapstructure:"ring_slots"`

	// MaxConnections bounds the HTTP/2 connections followed at once, in the
	// kernel (LRU; connections not classified yet, and those found not
	// HTTP/2, have maps of their own, max(4*MaxConnections, 16384) each) and
	// in the tracker (LRU too: a new one evicts the least recently active).
	MaxConnections int `mapstructure:"max_connections"`

	// MaxStreamsPerConnection bounds the open streams tracked per connection.
	MaxStreamsPerConnection int `mapstructure:"max_streams_per_connection"`

	// MaxHeaderBlock is the most bytes of one frame's header block (HEADERS,
	// CONTINUATION, PUSH_PROMISE payload) copied in the kernel and decoded;
	// a larger block is cut, counted, and its call's method may be unknown.
	MaxHeaderBlock int `mapstructure:"max_header_block"`

	// MaxCaptureRate is each connection's share of the capture ring, in
	// bytes the kernel copies for it a second (frame headers and header
	// blocks; an eighth of a second's worth at once, at most a sixteenth of the ring). A connection over it has
	// calls skipped (counted as throttled) until its share refills, so one
	// process pair flooding header blocks cannot make every other
	// connection's records be lost. 0: no limit.
	MaxCaptureRate int `mapstructure:"max_capture_rate"`

	// MaxCaptureRatePerUser is each user's share of the capture ring (uid:
	// all the connections whose calls one uid makes, together), in the
	// tokens of max_capture_rate a second: a user who opens many
	// connections gets no more of the collector than this. Over it that
	// user's calls are skipped (throttled_user). 0: no limit.
	MaxCaptureRatePerUser int `mapstructure:"max_capture_rate_per_user"`

	// CaptureFrameCost is what each frame the kernel walks costs the
	// shares on top of the bytes copied for it: the tracker pays per frame
	// whatever its size, so without it a flood of 13-byte RST_STREAM frames
	// costs the collector many times what the same share costs in header
	// blocks. Each HTTP/1.x call costs it too (a body written a byte a
	// call). 0: bytes only.
	CaptureFrameCost int `mapstructure:"capture_frame_cost"`

	// MaxHeaderTableSize caps the HPACK table kept per direction of a
	// connection, whatever size the peer announces: beyond it the oldest
	// entries are dropped and a header naming one is not decoded (counted).
	MaxHeaderTableSize int `mapstructure:"max_header_table_size"`

	// MaxMemory is the trackers' memory budget in bytes (connections,
	// streams, HPACK tables, header-block buffers; HTTP/1.x heads and
	// queued requests), halved between the HTTP/2 and HTTP/1.x trackers
	// when both protocols are on: over it the least recently active
	// connections are evicted (their open calls emitted with what was
	// seen), counted.
	MaxMemory int `mapstructure:"max_memory"`

	// IdleTimeout ends connections and streams with no bytes for this long
	// (their calls are emitted with what was seen).
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`

	// Ports, if set, keeps only calls whose local or remote port is listed.
	Ports []uint16 `mapstructure:"ports"`

	// MaxBatch is the most spans handed to the pipeline in one call.
	MaxBatch int `mapstructure:"max_batch"`

	// ServiceName is the resource's service.name.
	ServiceName string `mapstructure:"service_name"`

	// Spans bounds what a peer's headers put into the spans (every value of
	// them is chosen by whoever runs a process on the host).
	Spans SpansConfig `mapstructure:"spans"`

	// Protocols picks what is captured: HTTP/2 (gRPC and plain HTTP/2)
	// and HTTP/1.x, both on by default.
	Protocols ProtocolsConfig `mapstructure:"protocols"`

	// TLS also captures the plaintext of TLS sessions (opt-in: a uprobe hit
	// costs the traced process about 7 to 11 µs of CPU here, 2 to 6 hits per
	// gRPC call; see README.md beside this file). OpenSSL: uprobes on SSL_write, SSL_read, SSL_write_ex,
	// SSL_read_ex (entry and return) and SSL_free in every libssl. Go
	// crypto/tls: uprobes on (*tls.Conn).Write, on Read at its entry and at
	// every RET instruction (never uretprobes: they break Go stacks) and on
	// Close, in every Go executable of a process running at start, of one
	// started later (tls::rescan_interval) and in go_binaries.
	TLS TLSConfig `mapstructure:"tls"`

	_ struct{}
}

// ProtocolsConfig turns each protocol's capture on or off. A connection of
// a protocol turned off is taken for neither, in the kernel (one lookup a
// call after its first).
type ProtocolsConfig struct {
	// HTTP2: gRPC and plain HTTP/2 calls (the client preface, or SETTINGS
	// and frame headers for connections that predate the collector).
	HTTP2 bool `mapstructure:"http2"`
	// HTTP1: HTTP/1.0 and HTTP/1.1 requests (a request or status line at a
	// system call's start); keep-alive and pipelined requests, each paired
	// with its response in order.
	HTTP1 bool `mapstructure:"http1"`
}

// Validate says when nothing is left to capture.
func (c *ProtocolsConfig) Validate() error {
	if !c.HTTP2 && !c.HTTP1 {
		return errors.New("http2 and http1 are both off: nothing to capture; turn one on, or remove the receiver")
	}
	return nil
}

// SpansConfig bounds the span attributes and names taken from the peers'
// headers.
type SpansConfig struct {
	// Methods, when set, are the gRPC methods ("pkg.Service/Method") that
	// keep their name; any other is rpc.method _OTHER with
	// rpc.method_original.
	Methods []string `mapstructure:"methods"`
	// MaxMethods bounds the distinct rpc.method values (and span names)
	// when methods is not set: the first ones seen are kept, later new ones
	// are _OTHER (counted).
	MaxMethods int `mapstructure:"max_methods"`
	// MaxAttributeLength cuts url.path, url.query, rpc.method_original,
	// http.request.method_original and server.address (bytes, counted).
	MaxAttributeLength int `mapstructure:"max_attribute_length"`
	// MaxStatusMessageLength cuts grpc-message, the span's status message.
	MaxStatusMessageLength int `mapstructure:"max_status_message_length"`
	// URLQuery exports url.query for plain HTTP/2 and HTTP/1.x requests
	// (off: query strings carry tokens).
	URLQuery bool `mapstructure:"url_query"`
}

// Validate checks the bounds; confmap puts "spans: " before the message.
func (c *SpansConfig) Validate() error {
	var errs []error
	if c.MaxMethods < 1 || c.MaxMethods > maxMaxMethods {
		errs = append(errs, fmt.Errorf("max_methods: %d is out of range; use 1 to %d", c.MaxMethods, maxMaxMethods))
	}
	if c.MaxAttributeLength < minValueLength || c.MaxAttributeLength > maxValueLength {
		errs = append(errs, fmt.Errorf("max_attribute_length: %d is out of range; use %d to %d bytes", c.MaxAttributeLength, minValueLength, maxValueLength))
	}
	if c.MaxStatusMessageLength < 1 || c.MaxStatusMessageLength > maxValueLength {
		errs = append(errs, fmt.Errorf("max_status_message_length: %d is out of range; use 1 to %d bytes", c.MaxStatusMessageLength, maxValueLength))
	}
	for _, m := range c.Methods {
		if _, _, ok := h2.SplitPath("/" + m); !ok {
			errs = append(errs, fmt.Errorf("methods: %q is not a gRPC method; write it as package.Service/Method", m))
		}
	}
	return errors.Join(errs...)
}

// TLSConfig configures the TLS probes.
type TLSConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// LibSSLPaths are libssl files to probe besides those mapped by the
	// processes running at start and the usual locations (a libssl of a
	// container or a program started later at another path).
	LibSSLPaths []string `mapstructure:"libssl_paths"`
	// GoBinaries are Go executables (amd64 Go 1.17+, arm64 Go 1.18+, of the
	// collector's architecture) whose crypto/tls to probe besides those of
	// the processes running at start: a program started later. The probes are on the file, so every process started
	// from it is covered. A stripped executable (no .symtab) is read
	// through its .gopclntab. One that cannot be probed fails the start.
	GoBinaries []string `mapstructure:"go_binaries"`
	// RescanInterval is how often the processes started since the last look
	// are looked at: the libssl files they map and their executables (Go)
	// not probed yet get the probes. 0 turns it off (then only what runs at
	// start and the paths above are probed).
	RescanInterval time.Duration `mapstructure:"rescan_interval"`
	// IncludeExecutables and ExcludeExecutables pick the processes whose
	// executable and libssl are probed by the path of their executable as
	// the process sees it (/proc/<pid>/exe), with globs (path.Match: * does
	// not cross /). Exclusion wins; no include list includes every process.
	// The collector's own executable is never probed.
	IncludeExecutables []string `mapstructure:"include_executables"`
	ExcludeExecutables []string `mapstructure:"exclude_executables"`
	// IncludeCgroups and ExcludeCgroups pick them by cgroup v2 path (the
	// 0:: line of /proc/<pid>/cgroup), as prefixes of whole components:
	// /kubepods.slice covers /kubepods.slice/x. Exclusion wins.
	IncludeCgroups []string `mapstructure:"include_cgroups"`
	ExcludeCgroups []string `mapstructure:"exclude_cgroups"`
}

func createDefaultConfig() *Config {
	return &Config{
		Hook:                    HookAuto,
		RingSlots:               ring.DefaultRingSlots,
		MaxConnections:          h2.DefaultMaxConns,
		MaxStreamsPerConnection: h2.DefaultMaxStreamsPerConn,
		MaxHeaderBlock:          defaultHeaderCap,
		MaxCaptureRate:          defaultCaptureRate,
		MaxCaptureRatePerUser:   defaultCaptureRatePerUser,
		CaptureFrameCost:        defaultFrameCost,
		MaxHeaderTableSize:      h2.DefaultMaxHeaderTableSize,
		MaxMemory:               h2.DefaultMemoryBudget,
		IdleTimeout:             defaultIdleWindow,
		MaxBatch:                defaultMaxBatch,
		ServiceName:             defaultServiceNm,
		Protocols:               ProtocolsConfig{HTTP2: true, HTTP1: true},
		TLS:                     TLSConfig{RescanInterval: defaultRescan},
		Spans: SpansConfig{
			MaxMethods:             spanmap.DefaultMaxMethods,
			MaxAttributeLength:     spanmap.DefaultMaxValueLength,
			MaxStatusMessageLength: spanmap.DefaultMaxStatusMessageLen,
		},
	}
}

// Validate checks this level's settings and names the fix; spans and tls
// validate themselves (confmap calls their Validate and puts their path
// before the message).
func (c *Config) Validate() error {
	var errs []error
	if !slices.Contains(hooks, c.Hook) {
		errs = append(errs, fmt.Errorf("hook: %q is not a hook; use one of %s", c.Hook, strings.Join(hooks, ", ")))
	}
	if err := ring.CheckRingSlots(c.RingSlots); err != nil {
		errs = append(errs, fmt.Errorf("ring_slots: %w", err))
	}
	for _, r := range []struct {
		name        string
		v, min, max int
		unit        string
	}{
		{"max_connections", c.MaxConnections, minConnections, maxConnections, ""},
		{"max_streams_per_connection", c.MaxStreamsPerConnection, 1, maxStreams, ""},
		{"max_header_block", c.MaxHeaderBlock, minHeaderBlock, maxHeaderBlock, " bytes"},
		{"max_header_table_size", c.MaxHeaderTableSize, minTableSize, maxTableSize, " bytes"},
		{"max_memory", c.MaxMemory, minMemory, maxMemory, " bytes"},
		{"max_batch", c.MaxBatch, 1, maxMaxBatch, ""},
	} {
		if r.v < r.min || r.v > r.max {
			errs = append(errs, fmt.Errorf("%s: %d is out of range; use %d to %d%s", r.name, r.v, r.min, r.max, r.unit))
		}
	}
	if c.MaxCaptureRate != 0 && (c.MaxCaptureRate < minCaptureRate || c.MaxCaptureRate > maxCaptureRate) {
		errs = append(errs, fmt.Errorf("max_capture_rate: %d is out of range; use 0 (no limit) or %d to %d bytes a second", c.MaxCaptureRate, minCaptureRate, maxCaptureRate))
	}
	if c.MaxCaptureRatePerUser != 0 && (c.MaxCaptureRatePerUser < minCaptureRate || c.MaxCaptureRatePerUser > maxCaptureRate) {
		errs = append(errs, fmt.Errorf("max_capture_rate_per_user: %d is out of range; use 0 (no limit) or %d to %d bytes a second", c.MaxCaptureRatePerUser, minCaptureRate, maxCaptureRate))
	}
	if c.CaptureFrameCost < 0 || c.CaptureFrameCost > maxFrameCost {
		errs = append(errs, fmt.Errorf("capture_frame_cost: %d is out of range; use 0 (bytes only) to %d bytes a frame", c.CaptureFrameCost, maxFrameCost))
	}
	if c.IdleTimeout < minIdleTimeout {
		errs = append(errs, fmt.Errorf("idle_timeout: %s is too short; use at least %s", c.IdleTimeout, minIdleTimeout))
	}
	for _, p := range c.Ports {
		if p == 0 {
			errs = append(errs, errors.New("ports: 0 is not a port; list ports from 1 to 65535"))
		}
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("service_name: empty; give the service.name of the spans"))
	}
	return errors.Join(errs...)
}

// Validate checks the TLS settings; confmap puts "tls: " before the message.
func (c *TLSConfig) Validate() error {
	var errs []error
	if c.RescanInterval != 0 && c.RescanInterval < minRescan {
		errs = append(errs, fmt.Errorf("rescan_interval: %s is too short; use 0 (off) or at least %s", c.RescanInterval, minRescan))
	}
	for _, l := range []struct {
		name string
		list []string
	}{
		{"libssl_paths", c.LibSSLPaths}, {"go_binaries", c.GoBinaries},
		{"include_executables", c.IncludeExecutables}, {"exclude_executables", c.ExcludeExecutables},
		{"include_cgroups", c.IncludeCgroups}, {"exclude_cgroups", c.ExcludeCgroups},
	} {
		if len(l.list) > 0 && !c.Enabled {
			errs = append(errs, fmt.Errorf("%s: set while TLS capture is off; set enabled: true as well, or remove them", l.name))
		}
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"include_executables", c.IncludeExecutables}, {"exclude_executables", c.ExcludeExecutables}} {
		for _, g := range l.list {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				errs = append(errs, fmt.Errorf("%s: %q is not a glob (path.Match syntax: *, ?, [a-z], \\ to escape; a closed [ ]); fix or remove it", l.name, g))
			}
		}
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"include_cgroups", c.IncludeCgroups}, {"exclude_cgroups", c.ExcludeCgroups}} {
		for _, cg := range l.list {
			if !strings.HasPrefix(cg, "/") {
				errs = append(errs, fmt.Errorf("%s: %q is not a cgroup v2 path; start it with / (as in /proc/<pid>/cgroup's 0:: line, e.g. /system.slice)", l.name, cg))
			}
		}
	}
	return errors.Join(errs...)
}
