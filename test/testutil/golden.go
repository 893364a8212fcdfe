// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update is the one flag that rewrites every golden file, in any package
// whose tests use Golden: go test ./<pkg> -run <Test> -update.
var update = flag.Bool("update", false, "rewrite the golden files under testdata with what the tests produce")

// Golden compares got with the golden file at path (relative to the
// package's directory) and returns the file's content. With -update it
// first writes got there, creating the directories.
func Golden(t testing.TB, path string, got []byte) []byte {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run '%s' -update to create it", t.Name())
	assert.Equal(t, string(want), string(got), "run go test -run '%s' -update if the change is intended", t.Name())
	return want
}

// GoldenJSON is Golden for JSON (pdata's JSON marshalers' output): the file
// holds it indented by two spaces, with a newline at the end.
func GoldenJSON(t testing.TB, path string, raw []byte) []byte {
	t.Helper()
	var got bytes.Buffer
	require.NoError(t, json.Indent(&got, raw, "", "  "))
	got.WriteByte('\n')
	return Golden(t, path, got.Bytes())
}
