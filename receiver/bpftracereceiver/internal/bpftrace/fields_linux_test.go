// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// Every Config field, set to a value that is not its default (the values
// of the receiver's TestConfigEveryField), reaches the code it configures:
// the binary runs, with the environment and the argv; the program has the
// pull probe; the map becomes the metric configured; lines are cut at
// MaxLineBytes; the budget is MaxBufferedBytes.
func TestConfigFieldsReachRunner(t *testing.T) {
	e := newFakeEnv(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "fields.bt")
	text := "// fake: config\ntracepoint:syscalls:sys_enter_openat { @k[1, 2] = count(); }\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	monotonic := false
	cfg := Config{
		Binary:           e.bin,
		Env:              map[string]string{"BPFTRACE_STRLEN": "200"},
		MaxBufferedBytes: 8 << 20,
		MaxLineBytes:     128,
		Scripts: []ScriptConfig{{
			Name:         "fields",
			Path:         path,
			Args:         []string{"7", "-x"},
			PullInterval: 250 * time.Millisecond,
			Redact:       RedactArgv,
			Maps: map[string]MapConfig{"@k": {
				Type: MapTypeSum, Name: "custom.k", Attributes: []string{"first", "second"},
				Monotonic: &monotonic, Unit: "{call}", Description: "keyed calls",
			}},
		}, {Program: "// fake: args\n"}},
	}
	testutil.AssertEveryFieldSet(t, cfg)
	testutil.AssertEveryFieldSet(t, cfg.Scripts[0], "Program")
	testutil.AssertEveryFieldSet(t, cfg.Scripts[0].Maps["@k"])
	r := e.runner(t, cfg)

	// Redact: the script's printed lines go through the argv redactor.
	require.Len(t, r.scripts, 2)
	assert.NotNil(t, r.scripts[0].spec.redactor, "redact: argv on the script that sets it")
	assert.Nil(t, r.scripts[1].spec.redactor, "and only there")

	// MaxBufferedBytes: the budget, and the most one record may take.
	assert.Equal(t, int64(8<<20), r.batch.maxBytes)
	assert.Equal(t, 8<<20, r.maxRec)
	assert.Equal(t, 128, r.maxLine)

	eventually(t, 10*time.Second, func() bool { return len(e.out.metricsNamed("custom.k")) > 0 }, "the map as custom.k")
	m := e.out.metricsNamed("custom.k")[0]
	assert.Equal(t, "{call}", m.Unit())
	assert.Equal(t, "keyed calls", m.Description())
	require.Equal(t, pmetric.MetricTypeSum, m.Type())
	assert.False(t, m.Sum().IsMonotonic())
	dp := m.Sum().DataPoints().At(0)
	assert.Equal(t, map[string]any{"first": "x", "second": "y", AttrScript: "fields"}, dp.Attributes().AsRaw())

	// MaxLineBytes: the printed line and the stderr line, cut and counted.
	eventually(t, 10*time.Second, func() bool {
		_, warned := e.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "WARNING: lll") })
		_, printed := e.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "lll") })
		return warned && printed
	}, "the stderr line and the printed line")
	line, ok := e.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "lll") })
	require.True(t, ok)
	assert.Equal(t, strings.Repeat("l", 128), line.body)
	assert.Equal(t, "fields", line.attrs[AttrScript])
	warn, _ := e.out.findRecord(func(l logRec) bool { return strings.HasPrefix(l.body, "WARNING: lll") })
	assert.Len(t, warn.body, 128)
	// The line, the WARNING and the fake's RLIMIT_MEMLOCK line.
	assert.Equal(t, uint64(3), r.Counters()["fields"].Cut[CutLineTooLong])

	// Binary, Env, Path, Args, PullInterval: what the fake was run with.
	env, err := os.ReadFile(filepath.Join(e.dir, "config.env"))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(env), "\n"), "BPFTRACE_STRLEN=200")
	argv, err := os.ReadFile(filepath.Join(e.dir, "config.argv"))
	require.NoError(t, err)
	args := strings.Split(strings.TrimSpace(string(argv)), "\n")
	require.Len(t, args, 8)
	assert.Equal(t, []string{"-f", "json", "-I", dir, "--"}, args[:5])
	assert.Equal(t, []string{"7", "-x"}, args[6:])
	composed, err := os.ReadFile(filepath.Join(e.dir, "config.bt"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(composed), text), "the script at Path")
	assert.Contains(t, string(composed), "interval:ms:250 { print(@k); }")
	// Program: the inline script runs as it is.
	eventually(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(e.dir, "args.bt"))
		return err == nil && string(b) == "// fake: args\n"
	}, "the inline program")
	assert.Len(t, e.pids(t, "config"), 1, "Binary: the fake ran")
}
