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
)

// argv is the fake's argv for a mode, one argument a line.
func (e *fakeEnv) argv(t *testing.T, mode string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, mode+".argv"))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// A script's args are bpftrace's positional parameters: after "--" and the
// program, in order, unchanged (an empty one and one starting with '-'
// included); a script without args is run as before, without "--".
func TestRunnerPositionalArgs(t *testing.T) {
	e := newFakeEnv(t)
	e.runner(t, Config{Scripts: []ScriptConfig{
		{Name: "with-args", Program: "// fake: args\nBEGIN { printf(\"%d %s\\n\", $1, str($2)); }", Args: []string{"42", "-x y", ""}},
		{Name: "without", Program: "// fake: run\nBEGIN { @c = count(); }"},
	}})
	eventually(t, 5*time.Second, func() bool {
		_, a := e.out.findRecord(func(l logRec) bool { return l.body == "args" })
		_, b := e.out.findRecord(func(l logRec) bool { return l.body == "1234       42    /bin/true a b" })
		return a && b
	}, "both scripts running")

	argv := e.argv(t, "args")
	require.Len(t, argv, 7, "%q", argv)
	assert.Equal(t, []string{"-f", "json", "--"}, argv[:3])
	assert.True(t, strings.HasSuffix(argv[3], ".bt"), "the program file: %q", argv[3])
	assert.Equal(t, []string{"42", "-x y", ""}, argv[4:])

	plain := e.argv(t, "run")
	require.Len(t, plain, 3, "%q", plain)
	assert.Equal(t, []string{"-f", "json"}, plain[:2])
}
