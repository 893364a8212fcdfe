// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

// TestStderrCaptured runs captured bpftrace stderr through the stderr
// reader: every line is a WARN record, the failure summary leaves out the
// RLIMIT_MEMLOCK line, and the program's path reads as the script's.
func TestStderrCaptured(t *testing.T) {
	out := &sink{}
	r, err := New(Config{Scripts: []ScriptConfig{{Name: "undefined", Program: "BEGIN {}"}}}, nil, out)
	require.NoError(t, err)
	r.batch.start()
	f, err := os.Open("testdata/capture/undefined_map.stderr")
	require.NoError(t, err)
	defer f.Close()
	// The capture ran `bpftrace -e`: bpftrace names the program "stdin".
	h := &runHandler{s: r.scripts[0], tmpPath: "stdin", display: "undefined"}
	h.readStderr(f)
	r.batch.shutdown()

	recs := out.records()
	require.Len(t, recs, 4)
	for _, l := range recs {
		assert.Equal(t, plog.SeverityNumberWarn, l.severity)
		assert.Equal(t, map[string]any{AttrScript: "undefined", AttrStream: "stderr"}, l.attrs)
	}
	assert.Contains(t, recs[0].body, "couldn't set RLIMIT_MEMLOCK")
	assert.Equal(t, "undefined:1:43-54: ERROR: Undefined map: @nope", recs[1].body)

	summary := h.stderrSummary()
	assert.True(t, strings.HasPrefix(summary, "undefined:1:43-54: ERROR: Undefined map: @nope\n"), summary)
	assert.NotContains(t, summary, "RLIMIT_MEMLOCK")

	empty := &runHandler{}
	assert.Equal(t, "bpftrace printed no error message", empty.stderrSummary())
}
