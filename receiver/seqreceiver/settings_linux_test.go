// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadatatest"
)

// configPaths lists the mapstructure paths of every leaf field of Config.
func configPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("mapstructure"), ",")[0]
		if tag == "" || !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, configPaths(f.Type, prefix+tag+"::")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

// TestSettingsFromConfig: every field of the configuration, set to a value
// other than its default, arrives in the settings of the part it configures,
// through a started receiver (the kernel faked): the sequencer's options, the
// process model's Config, the log mapper. A field added to Config without a
// check here fails the test.
func TestSettingsFromConfig(t *testing.T) {
	cfg := createDefaultConfig()
	def := createDefaultConfig()
	checked := map[string]func(t *testing.T, r *seqReceiver, opts sequencer.Options){}
	set := func(path string, change func(), check func(t *testing.T, r *seqReceiver, opts sequencer.Options)) {
		change()
		checked[path] = check
	}
	set("transport", func() { cfg.Transport = sequencer.TransportSequencer }, func(t *testing.T, _ *seqReceiver, o sequencer.Options) {
		assert.Equal(t, sequencer.TransportSequencer, o.Transport)
	})
	set("ring_slots", func() { cfg.RingSlots = 2048 }, func(t *testing.T, _ *seqReceiver, o sequencer.Options) {
		assert.Equal(t, 2048, o.RingSlots)
	})
	set("events", func() { cfg.Events = []string{EventExec, EventExit} }, func(t *testing.T, _ *seqReceiver, o sequencer.Options) {
		assert.Equal(t, []event.Type{event.Exec, event.Exit, event.ThreadStart, event.ThreadExit}, o.Events)
	})
	set("thread_events", func() { cfg.ThreadEvents = true }, func(t *testing.T, r *seqReceiver, o sequencer.Options) {
		assert.Contains(t, o.Events, event.ThreadStart)
		assert.True(t, r.mapper.IncludeThreads)
		assert.True(t, r.model.Config().ThreadEvents)
	})
	set("max_args_bytes", func() { cfg.MaxArgsBytes = 333 }, func(t *testing.T, r *seqReceiver, o sequencer.Options) {
		assert.Equal(t, 333, o.MaxArgs)
		assert.Equal(t, 333, r.model.Config().MaxArgsBytes)
		assert.Equal(t, 333, r.inner.snapshotArgs)
	})
	set("nice", func() { cfg.Nice = -3 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, -3, r.inner.nice)
		// Start raised every thread of this process to -3 (the tests run as root).
		for tid, nice := range threadNices(t) {
			assert.LessOrEqual(t, nice, -3, "thread %d", tid)
		}
	})
	set("max_args", func() { cfg.MaxArgs = 17 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, 17, r.mapper.MaxArgs)
		assert.Equal(t, 17, r.model.Config().MaxArgs)
	})
	set("max_batch", func() { cfg.MaxBatch = 77 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, 77, r.model.Config().BuildSpans)
		assert.Equal(t, 77, r.cfg.MaxBatch) // the reader's batch
	})
	set("pressure::shed", func() { cfg.Pressure.Shed = []string{"thread"} }, func(t *testing.T, _ *seqReceiver, o sequencer.Options) {
		assert.Equal(t, []event.Type{event.ThreadStart, event.ThreadExit}, o.Shed)
	})
	set("pressure::above", func() { cfg.Pressure.Above = 0.5 }, func(t *testing.T, _ *seqReceiver, o sequencer.Options) {
		assert.Equal(t, uint64(1024), o.ShedAbove)
	})
	set("traces::service_name", func() { cfg.Traces.ServiceName = "svc" }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		v, _ := r.out.ResourceLogs().At(0).Resource().Attributes().Get("service.name")
		assert.Equal(t, "svc", v.Str())
	})
	set("traces::root_parents", func() { cfg.Traces.RootParents = []string{"make"} }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, []string{"make"}, r.model.Config().RootParents)
	})
	set("traces::session_leaders", func() { cfg.Traces.SessionLeaders = false }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.False(t, r.model.Config().SessionLeaders)
	})
	set("traces::max_processes", func() { cfg.Traces.MaxProcesses = 999 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, 999, r.model.Config().MaxProcesses)
	})
	set("traces::max_memory", func() { cfg.Traces.MaxMemory = 5 << 20 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, 5<<20, r.model.Config().MaxMemory)
	})
	set("traces::max_event_args_bytes", func() { cfg.Traces.MaxEventArgsBytes = 3000 }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.Equal(t, 3000, r.model.Config().MaxEventArgsBytes)
	})
	set("redaction::enabled", func() {}, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		assert.NotNil(t, r.inner.redact)
	})
	// names_only would hide the rules' fields' effects: checked on a config
	// of its own below, with the rules' fields set as here.
	set("redaction::args", func() {}, func(*testing.T, *seqReceiver, sequencer.Options) {})
	set("redaction::extra_flags", func() { cfg.Redaction.ExtraFlags = []string{"--zz"} }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		got, _ := r.inner.redact.Args([]string{"x", "--zz", "v"})
		assert.Equal(t, []string{"x", "--zz", "REDACTED"}, got)
	})
	set("redaction::extra_keys", func() { cfg.Redaction.ExtraKeys = []string{"yy_id"} }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		got, _ := r.inner.redact.Args([]string{"x", "YY_ID=v"})
		assert.Equal(t, []string{"x", "YY_ID=REDACTED"}, got)
	})
	set("redaction::extra_patterns", func() { cfg.Redaction.ExtraPatterns = []string{`qq_[0-9]+`} }, func(t *testing.T, r *seqReceiver, _ sequencer.Options) {
		got, _ := r.inner.redact.Args([]string{"x", "qq_123"})
		assert.Equal(t, []string{"x", "REDACTED"}, got)
	})

	// Every field is covered, and every covered field (but enabled, on by
	// default and checked by its effect) differs from its default.
	paths := configPaths(reflect.TypeFor[Config](), "")
	for _, p := range paths {
		assert.Contains(t, checked, p, "config field %s: set it in TestSettingsFromConfig and check it arrives", p)
	}
	assert.Len(t, checked, len(paths))
	require.NotEqual(t, def, cfg)
	require.NoError(t, confmap.Validate(cfg))

	// names_only arrives: every value goes, argv[0] and flag names stay.
	strict := *cfg
	strict.Redaction.Args = ArgsNamesOnly
	require.NoError(t, confmap.Validate(&strict))
	ss, err := strict.settings()
	require.NoError(t, err)
	names, _ := ss.redact.Args([]string{"ls", "--color", "/home/x"})
	assert.Equal(t, []string{"ls", "--color", "REDACTED"}, names, "names_only drops every value")

	// Redaction off arrives too.
	off := createDefaultConfig()
	off.Redaction.Enabled = false
	s, err := off.settings()
	require.NoError(t, err)
	assert.Nil(t, s.redact)

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	lr, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tel), cfg, &consumertest.LogsSink{})
	require.NoError(t, err)
	k := newFakeKernel(t, 1024)
	var got sequencer.Options
	r := lr.(*sharedcomponent.Component[*seqReceiver]).C
	r.open = func(o sequencer.Options) (kernel, error) { got = o; return k, nil }
	require.NoError(t, lr.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, lr.Shutdown(context.Background())) }()
	for p, check := range checked {
		t.Run(strings.ReplaceAll(p, "::", "."), func(t *testing.T) { check(t, r, got) })
	}
}

// threadNices reads the nice value of each thread of this process
// (/proc/self/task/TID/stat, field 19).
func threadNices(t *testing.T) map[int]int {
	ents, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	out := map[int]int{}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue // exited
		}
		// Fields after the command name, which ends at the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		nice, err := strconv.Atoi(f[16])
		require.NoError(t, err)
		tid, _ := strconv.Atoi(e.Name())
		out[tid] = nice
	}
	require.NotEmpty(t, out)
	return out
}
