// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/redact"
)

// corpusSecrets reads internal/redact/testdata/secrets.txt: each command's
// argv (markers removed) and its secrets.
func corpusSecrets(t *testing.T) (argvs [][]string, secrets [][]string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "internal", "redact", "testdata", "secrets.txt"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var ss []string
		rest := line
		for {
			i := strings.Index(rest, "{{")
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], "}}")
			ss = append(ss, rest[i+2:i+j])
			rest = rest[i+j+2:]
		}
		plain := strings.NewReplacer("{{", "", "}}", "").Replace(line)
		argvs = append(argvs, redact.Words(plain))
		secrets = append(secrets, ss)
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(argvs), 40)
	return argvs, secrets
}

// execsnoopCapture writes the captured execsnoop output followed by one
// exec line per corpus command, as execsnoop.bt prints it (printf of time
// and pid, then join(args->argv)), and returns the file.
func execsnoopCapture(t *testing.T, argvs [][]string) string {
	t.Helper()
	capture, err := os.ReadFile("testdata/capture/execsnoop.jsonl")
	require.NoError(t, err)
	var b strings.Builder
	b.Write(capture)
	for _, argv := range argvs {
		p, err := json.Marshal(map[string]any{"type": "printf", "data": "500        " + strings.Repeat("9", 5) + " "})
		require.NoError(t, err)
		j, err := json.Marshal(map[string]any{"type": "join", "data": strings.Join(argv, " ")})
		require.NoError(t, err)
		b.Write(p)
		b.WriteByte('\n')
		b.Write(j)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "execsnoop.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// TestRedactExecsnoop replays the captured execsnoop output plus the
// corpus' command lines: with redact: argv no secret is left in any log
// record and Counters.Redacted counts the values replaced; the captured
// lines (no secrets in them) come out as without redaction. Without it
// the secrets leave (what the shipped config did before).
func TestRedactExecsnoop(t *testing.T) {
	argvs, secrets := corpusSecrets(t)
	capture := execsnoopCapture(t, argvs)

	count := func(o outcome) int {
		n := 0
		for _, l := range o.logs {
			for _, ss := range secrets {
				for _, s := range ss {
					n += strings.Count(l, s)
				}
			}
		}
		return n
	}
	plain, pc := replay(t, capture, ScriptConfig{Name: "execsnoop", Program: "BEGIN {}"})
	red, rc := replay(t, capture, ScriptConfig{Name: "execsnoop", Program: "BEGIN {}", Redact: RedactArgv})
	leaked, left := count(plain), count(red)
	t.Logf("%d command lines: %d secret occurrences in the records without redaction, %d with redact: argv (%d values counted)", len(argvs), leaked, left, rc.Redacted)
	assert.Positive(t, leaked)
	assert.Zero(t, left)
	assert.Zero(t, pc.Redacted)
	assert.GreaterOrEqual(t, rc.Redacted, uint64(len(argvs)))

	require.Equal(t, len(plain.logs), len(red.logs))
	captured := len(plain.logs) - len(argvs)
	require.Positive(t, captured)
	for i := 0; i < captured; i++ {
		assert.Equal(t, plain.logs[i], red.logs[i], "captured line %d is unchanged", i)
	}
}
