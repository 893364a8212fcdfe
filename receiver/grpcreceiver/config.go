// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
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
	minRingSlots      = 256
	maxRingSlots      = 1 << 22 // 512 MiB of ring
	minConnections    = 16
	maxConnections    = 1 << 20
	maxStreams        = 1 << 16
	minHeaderBlock    = 1024
	maxHeaderBlock    = 1 << 20 // capture.MaxHeaderCap
	minIdleTimeout    = time.Second
	maxMaxBatch       = 65536
	defaultRingSlots  = 1 << 16 // 8 MiB
	defaultMaxBatch   = 1024
	defaultServiceNm  = "grpc-calls"
	defaultHeaderCap  = 16 << 10
	defaultIdleWindow = 5 * time.Minute
	defaultRescan     = 10 * time.Second
	minRescan         = time.Second
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
	// in the tracker.
	MaxConnections int `mapstructure:"max_connections"`

	// MaxStreamsPerConnection bounds the open streams tracked per connection.
	MaxStreamsPerConnection int `mapstructure:"max_streams_per_connection"`

	// MaxHeaderBlock is the most bytes of one frame's header block (HEADERS,
	// CONTINUATION, PUSH_PROMISE payload) copied in the kernel and decoded;
	// a larger block is cut, counted, and its call's method may be unknown.
	MaxHeaderBlock int `mapstructure:"max_header_block"`

	// IdleTimeout ends connections and streams with no bytes for this long
	// (their calls are emitted with what was seen).
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`

	// Ports, if set, keeps only calls whose local or remote port is listed.
	Ports []uint16 `mapstructure:"ports"`

	// MaxBatch is the most spans handed to the pipeline in one call.
	MaxBatch int `mapstructure:"max_batch"`

	// ServiceName is the resource's service.name.
	ServiceName string `mapstructure:"service_name"`

	// TLS also captures the plaintext of TLS sessions (opt-in: a uprobe hit
	// costs the traced process about 7 to 11 µs of CPU here, 2 to 6 hits per
	// gRPC call; see the README). OpenSSL: uprobes on SSL_write, SSL_read, SSL_write_ex,
	// SSL_read_ex (entry and return) and SSL_free in every libssl. Go
	// crypto/tls: uprobes on (*tls.Conn).Write, on Read at its entry and at
	// every RET instruction (never uretprobes: they break Go stacks) and on
	// Close, in every Go executable of a process running at start, of one
	// started later (tls::rescan_interval) and in go_binaries.
	TLS TLSConfig `mapstructure:"tls"`

	_ struct{}
}

// TLSConfig configures the TLS probes.
type TLSConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// LibSSLPaths are libssl files to probe besides those mapped by the
	// processes running at start and the usual locations (a libssl of a
	// container or a program started later at another path).
	LibSSLPaths []string `mapstructure:"libssl_paths"`
	// GoBinaries are Go executables (amd64, Go 1.17+) whose crypto/tls to
	// probe besides those of the processes running at start: a program
	// started later. The probes are on the file, so every process started
	// from it is covered. A stripped executable (no .symtab) is read
	// through its .gopclntab. One that cannot be probed fails the start.
	GoBinaries []string `mapstructure:"go_binaries"`
	// RescanInterval is how often the processes started since the last look
	// are looked at: the libssl files they map and their executables (Go)
	// not probed yet get the probes. 0 turns it off (then only what runs at
	// start and the paths above are probed).
	RescanInterval time.Duration `mapstructure:"rescan_interval"`
}

func createDefaultConfig() *Config {
	return &Config{
		Hook:                    HookAuto,
		RingSlots:               defaultRingSlots,
		MaxConnections:          h2.DefaultMaxConns,
		MaxStreamsPerConnection: h2.DefaultMaxStreamsPerConn,
		MaxHeaderBlock:          defaultHeaderCap,
		IdleTimeout:             defaultIdleWindow,
		MaxBatch:                defaultMaxBatch,
		ServiceName:             defaultServiceNm,
		TLS:                     TLSConfig{RescanInterval: defaultRescan},
	}
}

// Validate checks every setting and names the fix.
func (c *Config) Validate() error {
	var errs []error
	if !slices.Contains(hooks, c.Hook) {
		errs = append(errs, fmt.Errorf("hook %q: must be one of %s", c.Hook, strings.Join(hooks, ", ")))
	}
	if c.RingSlots < minRingSlots || c.RingSlots > maxRingSlots || c.RingSlots&(c.RingSlots-1) != 0 {
		errs = append(errs, fmt.Errorf("ring_slots %d: must be a power of two from %d to %d", c.RingSlots, minRingSlots, maxRingSlots))
	}
	if c.MaxConnections < minConnections || c.MaxConnections > maxConnections {
		errs = append(errs, fmt.Errorf("max_connections %d: must be from %d to %d", c.MaxConnections, minConnections, maxConnections))
	}
	if c.MaxStreamsPerConnection < 1 || c.MaxStreamsPerConnection > maxStreams {
		errs = append(errs, fmt.Errorf("max_streams_per_connection %d: must be from 1 to %d", c.MaxStreamsPerConnection, maxStreams))
	}
	if c.MaxHeaderBlock < minHeaderBlock || c.MaxHeaderBlock > maxHeaderBlock {
		errs = append(errs, fmt.Errorf("max_header_block %d: must be from %d to %d bytes", c.MaxHeaderBlock, minHeaderBlock, maxHeaderBlock))
	}
	if c.IdleTimeout < minIdleTimeout {
		errs = append(errs, fmt.Errorf("idle_timeout %s: must be at least %s", c.IdleTimeout, minIdleTimeout))
	}
	if c.MaxBatch < 1 || c.MaxBatch > maxMaxBatch {
		errs = append(errs, fmt.Errorf("max_batch %d: must be from 1 to %d", c.MaxBatch, maxMaxBatch))
	}
	for _, p := range c.Ports {
		if p == 0 {
			errs = append(errs, errors.New("ports: 0 is not a port"))
		}
	}
	if c.ServiceName == "" {
		errs = append(errs, errors.New("service_name: must not be empty"))
	}
	if len(c.TLS.LibSSLPaths) > 0 && !c.TLS.Enabled {
		errs = append(errs, errors.New("tls::libssl_paths: set tls::enabled: true as well, or remove them"))
	}
	if c.TLS.RescanInterval != 0 && c.TLS.RescanInterval < minRescan {
		errs = append(errs, fmt.Errorf("tls::rescan_interval %s: must be 0 (off) or at least %s", c.TLS.RescanInterval, minRescan))
	}
	if len(c.TLS.GoBinaries) > 0 && !c.TLS.Enabled {
		errs = append(errs, errors.New("tls::go_binaries: set tls::enabled: true as well, or remove them"))
	}
	return errors.Join(errs...)
}
