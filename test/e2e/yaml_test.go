// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// decodeYAMLDocs decodes a multi-document YAML stream into JSON-typed values
// (numbers float64, as the API server's JSON reads back).
func decodeYAMLDocs(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(s))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if doc == nil {
			continue
		}
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		var j map[string]any
		require.NoError(t, json.Unmarshal(b, &j))
		out = append(out, j)
	}
}
