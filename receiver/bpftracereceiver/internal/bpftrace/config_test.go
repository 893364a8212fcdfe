// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func boolp(b bool) *bool { return &b }

func TestValidateValid(t *testing.T) {
	cfg := Config{Scripts: []ScriptConfig{
		{
			Path:         "testdata/syscount.bt",
			PullInterval: 10 * time.Second,
			Maps: map[string]MapConfig{
				"@syscall": {Type: MapTypeSum, Attributes: []string{"syscall"}},
				"@process": {Type: MapTypeSum, Attributes: []string{"comm"}, Unit: "{syscall}"},
			},
		},
		{Path: "testdata/runqlat_btf.bt", Name: "runqlat", PullInterval: 1500 * time.Millisecond,
			Maps: map[string]MapConfig{"@usecs": {Type: MapTypeHistogram, Name: "runq.latency", Unit: "us"}}},
		{Program: `tracepoint:syscalls:sys_enter_getppid { @ = count(); @max = max(1); }`,
			Maps: map[string]MapConfig{
				"@":    {Type: MapTypeSum, Monotonic: boolp(false)},
				"@max": {Type: MapTypeGauge},
			}},
		{Program: `BEGIN { printf("hi\n"); }`},
	}}
	require.NoError(t, cfg.Validate())

	specs, err := cfg.resolve(true)
	require.NoError(t, err)
	require.Len(t, specs, 4)
	assert.Equal(t, "syscount", specs[0].name)
	assert.Equal(t, []string{"@process", "@syscall"}, specs[0].order)
	assert.Equal(t, "bpftrace.syscount.syscall", specs[0].maps["@syscall"].metricName)
	assert.True(t, specs[0].maps["@syscall"].monotonic)
	assert.Equal(t, "runqlat", specs[1].name)
	assert.Equal(t, "runq.latency", specs[1].maps["@usecs"].metricName)
	assert.Equal(t, "inline-2", specs[2].name)
	assert.Equal(t, "bpftrace.inline-2", specs[2].maps["@"].metricName)
	assert.False(t, specs[2].maps["@"].monotonic)
	assert.Equal(t, "bpftrace.inline-2.max", specs[2].maps["@max"].metricName)
	assert.Equal(t, "inline-3", specs[3].name)

	assert.NoError(t, (&Config{}).Validate(), "no scripts: nothing to run")
}

func TestValidateErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "mine.bt")
	require.NoError(t, os.WriteFile(script, []byte("// @commented\nBEGIN { printf(\"@quoted\\n\"); @real = count(); }\n"), 0o600))
	sum := MapConfig{Type: MapTypeSum}
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error
	}{
		{"neither path nor program", Config{Scripts: []ScriptConfig{{Name: "x"}}},
			[]string{"scripts[0]: neither path nor program is set; set path"}},
		{"both", Config{Scripts: []ScriptConfig{{Path: script, Program: "BEGIN {}"}}},
			[]string{"scripts[0]: both path and program are set; keep exactly one"}},
		{"missing file", Config{Scripts: []ScriptConfig{{Path: filepath.Join(dir, "nope.bt")}}},
			[]string{"scripts[0].path:", "no such file", "fix the path"}},
		{"missing file with maps", Config{Scripts: []ScriptConfig{{Path: filepath.Join(dir, "nope.bt"), Maps: map[string]MapConfig{"@a": sum}}}},
			[]string{"scripts[0].path:", "no such file"}},
		{"duplicate names", Config{Scripts: []ScriptConfig{{Path: script}, {Name: "mine", Program: "BEGIN {}"}}},
			[]string{`scripts[1].name: "mine" is already the name of scripts[0]`}},
		{"bad name", Config{Scripts: []ScriptConfig{{Name: "a/b", Program: "BEGIN {}"}}},
			[]string{`scripts[0].name: "a/b" is not a usable name`}},
		{"NUL in an argument", Config{Scripts: []ScriptConfig{{Program: "BEGIN {}", Args: []string{"ok", "a\x00b"}}}},
			[]string{`scripts[0].args[1]: "a\x00b" contains a NUL byte`}},
		{"negative pull", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", PullInterval: -time.Second, Maps: map[string]MapConfig{"@a": sum}}}},
			[]string{"scripts[0].pull_interval: -1s is negative"}},
		{"sub-millisecond pull", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", PullInterval: time.Microsecond, Maps: map[string]MapConfig{"@a": sum}}}},
			[]string{"scripts[0].pull_interval: 1µs is below bpftrace's 1ms interval resolution"}},
		{"pull without maps", Config{Scripts: []ScriptConfig{{Program: "BEGIN {}", PullInterval: time.Second}}},
			[]string{"scripts[0].pull_interval: set, but maps is empty"}},
		{"map without @", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", Maps: map[string]MapConfig{"a": sum}}}},
			[]string{`scripts[0].maps["a"]: "a" is not a bpftrace map name; write the map as in the script, with its @`}},
		{"missing type", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", Maps: map[string]MapConfig{"@a": {}}}}},
			[]string{`scripts[0].maps["@a"].type: missing; set it to sum`}},
		{"bad type", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", Maps: map[string]MapConfig{"@a": {Type: "counter"}}}}},
			[]string{`scripts[0].maps["@a"].type: "counter" is not a map type; use sum, gauge or histogram`}},
		{"monotonic on gauge", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1 }", Maps: map[string]MapConfig{"@a": {Type: MapTypeGauge, Monotonic: boolp(true)}}}}},
			[]string{`scripts[0].maps["@a"].monotonic: applies to type sum only`}},
		{"duplicate metric name", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a = 1; @b = 2 }", Maps: map[string]MapConfig{
			"@a": {Type: MapTypeGauge, Name: "m"}, "@b": {Type: MapTypeGauge, Name: "m"}}}}},
			[]string{`scripts[0].maps["@b"].name: metric name "m" is also used by maps["@a"]`}},
		{"attributes", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @a[1,2,3] = 1 }", Maps: map[string]MapConfig{
			"@a": {Type: MapTypeGauge, Attributes: []string{"x", "", "x", AttrScript}}}}}},
			[]string{`attributes[1]: empty`, `attributes[2]: "x" is listed twice`, `attributes[3]: "bpftrace.script" is set on every point already`}},
		{"map not in inline program", Config{Scripts: []ScriptConfig{{Program: "BEGIN { @ab = 1; @b_c = 2 }", PullInterval: time.Second, Maps: map[string]MapConfig{
			"@a": sum, "@b": sum}}}},
			[]string{"scripts[0].maps: maps @a, @b are not used by the script", "Undefined map"}},
		{"negative budget", Config{MaxBufferedBytes: -1, Scripts: []ScriptConfig{{Program: "BEGIN {}"}}},
			[]string{"max_buffered_bytes: -1 is negative; use 0 (the default, 16777216)"}},
		{"negative line", Config{MaxLineBytes: -1, Scripts: []ScriptConfig{{Program: "BEGIN {}"}}},
			[]string{"max_line_bytes: -1 is negative"}},
		{"tiny line", Config{MaxLineBytes: 10, Scripts: []ScriptConfig{{Program: "BEGIN {}"}}},
			[]string{"max_line_bytes: 10 is too small to hold a line; use at least 64"}},
		{"budget below lines", Config{MaxBufferedBytes: 100000, MaxLineBytes: 10000, Scripts: []ScriptConfig{{Program: "BEGIN {}"}}},
			[]string{"max_buffered_bytes: 100000 holds fewer than 16 lines of max_line_bytes (10000); raise max_buffered_bytes to at least 160000"}},
		{"map only in comment or string", Config{Scripts: []ScriptConfig{{Path: script, Maps: map[string]MapConfig{
			"@commented": sum, "@quoted": sum, "@real": sum}}}},
			[]string{"maps @commented, @quoted are not used by the script"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			_, err = New(tt.cfg, nil, &sink{})
			if !strings.Contains(tt.name, "file") && !strings.Contains(tt.name, "not in") && !strings.Contains(tt.name, "only in") {
				assert.Error(t, err, "New rejects what Validate rejects (but for checks of the script text, done at start)")
			}
		})
	}
}

func TestPullProbeAndCompose(t *testing.T) {
	spec := &scriptSpec{pull: 10 * time.Second, order: []string{"@process", "@syscall"}}
	assert.Equal(t, "interval:s:10 { print(@process); print(@syscall); }", spec.pullProbe())
	spec.pull = 1500 * time.Millisecond
	assert.Equal(t, "interval:ms:1500 { print(@process); print(@syscall); }", spec.pullProbe())
	spec.pull = 250 * time.Millisecond
	assert.Equal(t, "interval:ms:250 { print(@process); print(@syscall); }", spec.pullProbe())

	text := "BEGIN { @process[comm] = count(); @syscall[1] = count(); }"
	got := spec.compose(text)
	assert.True(t, strings.HasPrefix(got, text+"\n"), "the script comes first, unchanged")
	assert.True(t, strings.HasSuffix(got, "interval:ms:250 { print(@process); print(@syscall); }\n"))

	spec.pull = 0
	assert.Equal(t, text, spec.compose(text), "nothing pulled: the script as it is")
}

func TestCheckMapsUsed(t *testing.T) {
	text := `
/* @block
   comment */
// @line comment
BEGIN { printf("@str \" @str2\n"); @x = 1; @[1] = 2; @xy = 3; $v = @x2; }`
	assert.NoError(t, checkMapsUsed(text, []string{"@x", "@", "@xy", "@x2"}))
	for _, m := range []string{"@block", "@line", "@comment", "@str", "@str2", "@y", "@x3"} {
		assert.Error(t, checkMapsUsed(text, []string{m}), m)
	}
	assert.Error(t, checkMapsUsed("BEGIN { @a = 1; }", []string{"@"}), "the unnamed map is not @a")
	assert.ErrorContains(t, checkMapsUsed("BEGIN {}", []string{"@nope"}), "map @nope is not used by the script")
}
