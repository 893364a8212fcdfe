// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package seqreceiver

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// Event names accepted in `events`.
const (
	EventFork = "fork"
	EventExec = "exec"
	EventExit = "exit"
)

var knownEvents = []string{EventFork, EventExec, EventExit}

// Limits of the settings, shared by Validate and the docs.
const (
	maxMaxBatch  = 65536
	minProcesses = 64
	maxProcesses = 1 << 22
	maxMaxArgs   = event.MaxArgs / 2 // one byte and a NUL each
	minMemory    = 1 << 20
	maxMemory    = 1 << 34
	minEventArgs = 1 << 10
	maxEventArgs = 1 << 20
	commLen      = 15 // TASK_COMM_LEN - 1
)

// DefaultNice is Config.Nice's default: a task at nice -10 weighs as much
// as about nine at nice 0.
const DefaultNice = -10

// Config is the seq receiver's configuration. `seq: {}` uses the defaults.
type Config struct {
	// Transport is how records travel from the BPF programs to the reader:
	// sequencer (a ticketed ring, Linux 5.12+), ringbuf (the BPF ring buffer),
	// perfbuf (per-CPU perf buffers) or auto (the sequencer where it loads,
	// else the ring buffer, else perf buffers; never perf on PREEMPT_RT).
	// Every transport delivers the same records in ticket order.
	Transport sequencer.Transport `mapstructure:"transport"`

	// RingSlots is the number of 128-byte slots in the ring (a power of two);
	// the ring buffer, or the perf buffers together, get as many bytes.
	// Size it for 1–2 s of the host's peak event rate: a reader that falls
	// further behind than this loses the oldest events, counted as lost.
	RingSlots int `mapstructure:"ring_slots"`

	// Events lists which process events to capture: fork, exec, exit.
	// Events not listed are filtered in the kernel and never take a ticket.
	Events []string `mapstructure:"events"`

	// ThreadEvents also captures thread creation and thread exit, emitted as
	// `thread.start` / `thread.exit` records (never as process events).
	ThreadEvents bool `mapstructure:"thread_events"`

	// MaxArgsBytes bounds the argv bytes copied per exec (0 disables argv).
	// Longer command lines are cut and flagged `seq.args.truncated`.
	MaxArgsBytes int `mapstructure:"max_args_bytes"`

	// MaxArgs bounds the arguments kept of one exec (and of a process seen
	// at start) in its log record, its span and its span event; the rest
	// are cut, flagged `seq.args.truncated`, and counted
	// (otelcol_receiver_seq_args_truncated).
	MaxArgs int `mapstructure:"max_args"`

	// MaxBatch is the most log records handed to the pipeline in one call.
	MaxBatch int `mapstructure:"max_batch"`

	// Nice is the nice value the collector's threads run at from Start on
	// (-20..19; 0 leaves them as they are; a thread already at a lower value
	// keeps it). The scheduler shares a CPU by task: a user who runs many
	// processes gets as many shares, and at the default nice the reader
	// falls behind the ring and loses other users' events (lapped).
	Nice int `mapstructure:"nice"`

	// Pressure sheds low-priority events in the kernel while the ring is
	// nearly full (sequencer transport), counted, so that the events that
	// matter most — exits — keep their place.
	Pressure PressureConfig `mapstructure:"pressure"`

	// Traces shapes the span-per-process output of a traces pipeline.
	Traces TracesConfig `mapstructure:"traces"`

	// Redaction replaces secrets in command lines (process.command_args,
	// the exec records' Body, the spans and their exec events) by REDACTED.
	// On by default.
	Redaction RedactionConfig `mapstructure:"redaction"`

	_ struct{}
}

// RedactionConfig: the built-in rules (see README.md beside this file) and additions.
type RedactionConfig struct {
	// Enabled turns redaction on (the default) or off.
	Enabled bool `mapstructure:"enabled"`
	// ExtraFlags are more flags, as written (`--db-pass`, `-P`), whose value
	// (the next argument, or after =) is secret.
	ExtraFlags []string `mapstructure:"extra_flags"`
	// ExtraKeys are more secret-like names for flags, key=value pairs, JSON
	// members and headers, matched as a suffix of the name lower-cased with
	// - and . read as _ (`session_id` matches `--session-id`, `X_SESSION_ID=`).
	ExtraKeys []string `mapstructure:"extra_keys"`
	// ExtraPatterns are regular expressions (Go RE2 syntax) of secrets: each
	// match is replaced, or only its groups where the expression has groups.
	ExtraPatterns []string `mapstructure:"extra_patterns"`
	// Args is how argv is redacted: "rules" (the default, also when empty)
	// replaces the values the rules find; "names_only" keeps argv[0] and the
	// names of flags (the in-argument rules applied to them) and replaces
	// every other value.
	Args string `mapstructure:"args"`

	_ struct{}
}

// Values of RedactionConfig.Args.
const (
	ArgsRules     = "rules"
	ArgsNamesOnly = "names_only"
)

// redactor compiles the rules; nil when redaction is off.
func (c *RedactionConfig) redactor() (*redact.Redactor, error) {
	if !c.Enabled {
		return nil, nil
	}
	return redact.New(redact.Config{ExtraFlags: c.ExtraFlags, ExtraKeys: c.ExtraKeys, ExtraPatterns: c.ExtraPatterns, NamesOnly: c.Args == ArgsNamesOnly})
}

// PressureConfig: adaptive pressure, off unless Shed lists event classes.
type PressureConfig struct {
	// Shed lists the classes the producers drop, before they take a ticket,
	// while the reader is more than Above × ring_slots tickets behind: any of
	// fork, exec, thread (thread start and exit). Never exit. Shed events are
	// counted (otelcol_receiver_seq_events_shed), not gaps: they never took a
	// ticket. Shedding stops by itself as soon as the reader catches up.
	Shed []string `mapstructure:"shed"`

	// Above is the backlog, as a fraction of ring_slots, above which the
	// listed classes are shed (0.1 to 0.99; default 0.75).
	Above float64 `mapstructure:"above"`

	_ struct{}
}

// ShedClasses are the event classes pressure may shed.
var ShedClasses = []string{EventFork, EventExec, "thread"}

// TracesConfig shapes the spans: one per process lifetime, parent to child,
// and where a trace starts.
type TracesConfig struct {
	// ServiceName is the service.name resource attribute of the spans and log records.
	ServiceName string `mapstructure:"service_name"`

	// RootParents are executable names (comm, at most 15 characters) whose
	// children start a new trace: daemons that run jobs, logins, container shims.
	RootParents []string `mapstructure:"root_parents"`

	// SessionLeaders makes a child of a session leader (an interactive shell,
	// a daemon after setsid) start a new trace: one trace per command typed.
	SessionLeaders bool `mapstructure:"session_leaders"`

	// MaxProcesses bounds the live processes tracked; beyond it the oldest is
	// evicted (its span exported early, marked seq.process.evicted), counted.
	MaxProcesses int `mapstructure:"max_processes"`

	// MaxMemory is the byte budget of the process model: live processes,
	// their names, paths and argv, their span events, and the spans waiting
	// for the pipeline. Over it the argv of the oldest exec span events is
	// dropped, then span events, then waiting spans, then the oldest live
	// processes are evicted, each counted by reason.
	MaxMemory int `mapstructure:"max_memory"`

	// MaxEventArgsBytes bounds the argv bytes (16 per argument plus its
	// length) that the process.exec span events of one process keep; older
	// events give theirs up first, marked `seq.args.dropped`, counted.
	MaxEventArgsBytes int `mapstructure:"max_event_args_bytes"`

	_ struct{}
}

// DefaultRootParents are the executables whose children start a trace by default.
var DefaultRootParents = []string{
	"systemd", "init", "cron", "crond", "anacron", "atd", "sshd", "login", "su", "sudo",
	"containerd-shim", "conmon", "runc", "crun", "tmux: server", "screen",
}

func createDefaultConfig() *Config {
	return &Config{
		Transport:    sequencer.TransportAuto,
		RingSlots:    ring.DefaultRingSlots,
		Events:       []string{EventFork, EventExec, EventExit},
		MaxArgsBytes: 1024,
		MaxArgs:      process.DefaultMaxArgs,
		MaxBatch:     1024,
		Nice:         DefaultNice,
		Pressure:     PressureConfig{Above: 0.75},
		Traces: TracesConfig{
			ServiceName:    "linux-processes",
			RootParents:    DefaultRootParents,
			SessionLeaders: true,
			MaxProcesses:   65536,
			// A host's real processes take a few MiB; 32 MiB leaves the
			// agent's 240 MiB memory_limiter the rest for the pipeline.
			MaxMemory:         process.DefaultMaxMemory,
			MaxEventArgsBytes: process.DefaultMaxEventArgsBytes,
		},
		Redaction: RedactionConfig{Enabled: true},
	}
}

// Validate names the field, the bad value and the fix. The nested configs
// validate themselves (confmap calls their Validate and puts their path,
// pressure, traces or redaction, before the message); what is left here are
// this level's fields and the settings that depend on each other.
func (c *Config) Validate() error {
	var errs []error
	if !slices.Contains(sequencer.Transports, c.Transport) {
		errs = append(errs, fmt.Errorf("transport: %q is not a transport; use one of %s", c.Transport, joinNames(sequencer.Transports)))
	}
	if err := ring.CheckRingSlots(c.RingSlots); err != nil {
		errs = append(errs, fmt.Errorf("ring_slots: %w", err))
	}
	if len(c.Events) == 0 && !c.ThreadEvents {
		errs = append(errs, fmt.Errorf("events: empty; list one or more of %s (or set thread_events)", strings.Join(knownEvents, ", ")))
	}
	seen := map[string]bool{}
	for _, e := range c.Events {
		switch {
		case !slices.Contains(knownEvents, e):
			errs = append(errs, fmt.Errorf("events: %q is not an event; use %s", e, strings.Join(knownEvents, ", ")))
		case seen[e]:
			errs = append(errs, fmt.Errorf("events: %q is listed twice; list it once", e))
		}
		seen[e] = true
	}
	if c.MaxArgsBytes < 0 || c.MaxArgsBytes > event.MaxArgs {
		errs = append(errs, fmt.Errorf("max_args_bytes: %d is out of range; use 0 to %d", c.MaxArgsBytes, event.MaxArgs))
	}
	if c.MaxArgs < 1 || c.MaxArgs > maxMaxArgs {
		errs = append(errs, fmt.Errorf("max_args: %d is out of range; use 1 to %d (max_args_bytes: 0 turns argv off)", c.MaxArgs, maxMaxArgs))
	}
	if c.MaxBatch < 1 || c.MaxBatch > maxMaxBatch {
		errs = append(errs, fmt.Errorf("max_batch: %d is out of range; use 1 to %d", c.MaxBatch, maxMaxBatch))
	}
	if c.Nice < -20 || c.Nice > 19 {
		errs = append(errs, fmt.Errorf("nice: %d is out of range; use -20 to 19 (0 leaves the collector's priority as it is)", c.Nice))
	}
	if len(c.Pressure.Shed) > 0 && (c.Transport == sequencer.TransportRingBuf || c.Transport == sequencer.TransportPerfBuf) {
		errs = append(errs, fmt.Errorf("transport: %q cannot shed (pressure::shed works on the sequencer transport only); use transport: %s or %s, or remove pressure::shed",
			c.Transport, sequencer.TransportSequencer, sequencer.TransportAuto))
	}
	return errors.Join(errs...)
}

// Validate checks the shed classes and the threshold; confmap puts
// "pressure: " before the message.
func (c *PressureConfig) Validate() error {
	var errs []error
	for _, e := range c.Shed {
		switch {
		case e == EventExit:
			errs = append(errs, errors.New("shed: exit cannot be shed (exits end spans and free the process table); shed fork, exec or thread"))
		case !slices.Contains(ShedClasses, e):
			errs = append(errs, fmt.Errorf("shed: %q is not a class; use %s", e, strings.Join(ShedClasses, ", ")))
		}
	}
	if len(c.Shed) > 0 && (c.Above < 0.1 || c.Above > 0.99) {
		errs = append(errs, fmt.Errorf("above: %g is out of range; use 0.1 to 0.99 (a fraction of ring_slots)", c.Above))
	}
	return errors.Join(errs...)
}

// Validate checks the span settings; confmap puts "traces: " before the
// message.
func (c *TracesConfig) Validate() error {
	var errs []error
	if c.ServiceName == "" {
		errs = append(errs, errors.New("service_name: empty; give the service.name for the process spans"))
	}
	if c.MaxProcesses < minProcesses || c.MaxProcesses > maxProcesses {
		errs = append(errs, fmt.Errorf("max_processes: %d is out of range; use %d to %d", c.MaxProcesses, minProcesses, maxProcesses))
	}
	if c.MaxMemory < minMemory || c.MaxMemory > maxMemory {
		errs = append(errs, fmt.Errorf("max_memory: %d is out of range; use %d (1 MiB) to %d (16 GiB) bytes", c.MaxMemory, minMemory, maxMemory))
	}
	if c.MaxEventArgsBytes < minEventArgs || c.MaxEventArgsBytes > maxEventArgs {
		errs = append(errs, fmt.Errorf("max_event_args_bytes: %d is out of range; use %d to %d", c.MaxEventArgsBytes, minEventArgs, maxEventArgs))
	}
	for _, name := range c.RootParents {
		if name == "" || len(name) > commLen {
			errs = append(errs, fmt.Errorf("root_parents: %q is not an executable name as the kernel keeps it; use its first 1 to %d characters", name, commLen))
		}
	}
	return errors.Join(errs...)
}

// Validate compiles the rules and checks the added flags and keys; confmap
// puts "redaction: " before the message.
func (c *RedactionConfig) Validate() error {
	var errs []error
	if _, err := c.redactor(); err != nil {
		errs = append(errs, err)
	}
	switch c.Args {
	case "", ArgsRules, ArgsNamesOnly:
	default:
		errs = append(errs, fmt.Errorf("args: %q is not a redaction mode; use rules (redact the values the rules find) or names_only (keep argv[0] and flag names only)", c.Args))
	}
	for _, f := range c.ExtraFlags {
		if !strings.HasPrefix(f, "-") || strings.TrimLeft(f, "-") == "" || strings.ContainsAny(f, "= \t") {
			errs = append(errs, fmt.Errorf("extra_flags: %q is not a flag as written on a command line; write it as --db-pass or -P", f))
		}
	}
	for _, k := range c.ExtraKeys {
		if strings.Trim(k, "-_.") == "" || strings.ContainsAny(k, "= :\t") {
			errs = append(errs, fmt.Errorf("extra_keys: %q is not a key name; use letters, digits and - _ . only", k))
		}
	}
	return errors.Join(errs...)
}

func joinNames[S ~string](names []S) string {
	ss := make([]string, len(names))
	for i, n := range names {
		ss[i] = string(n)
	}
	return strings.Join(ss, ", ")
}
