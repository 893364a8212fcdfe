// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real bpftrace takes a script's args as its positional parameters: $1 as
// an integer (the pid filter) and str($1) / str($2) as strings, an argument
// starting with '-' included; $# is their count.
func TestIntegrationPositionalArgs(t *testing.T) {
	const n = 321
	pid := strconv.Itoa(os.Getpid())
	run := startReal(t, ScriptConfig{
		Name: "args",
		Program: `BEGIN { printf("pid %s (%d) tag %s, %d args\n", str($1), $1, str($2), $#); }
tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @calls[str($2)] = count(); }`,
		Args:         []string{pid, "-tag x"},
		PullInterval: 500 * time.Millisecond,
		Maps:         map[string]MapConfig{"@calls": {Type: MapTypeSum, Attributes: []string{"tag"}}},
	})
	want := fmt.Sprintf("pid %s (%s) tag -tag x, 2 args", pid, pid)
	eventually(t, waitLong, func() bool {
		_, ok := run.out.findRecord(func(l logRec) bool { return l.body == want })
		return ok
	}, "the BEGIN line %q", want)

	getppid(n)
	var last int64
	eventually(t, 10*time.Second, func() bool {
		ms := run.out.metricsNamed("bpftrace.args.calls")
		if len(ms) == 0 {
			return false
		}
		dps := ms[len(ms)-1].Sum().DataPoints()
		if dps.Len() != 1 {
			return false
		}
		tag, _ := dps.At(0).Attributes().Get("tag")
		last = dps.At(0).IntValue()
		return tag.Str() == "-tag x" && last == n
	}, "%d getppid calls of this process, tagged by str($2)", n)
	require.Equal(t, int64(n), last)
	assert.Zero(t, run.r.Counters()["args"].StartFailures)
}
