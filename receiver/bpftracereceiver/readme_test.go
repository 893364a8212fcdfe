// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftracereceiver

import (
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/test/configdoc"
)

// TestREADMEConfig: README.md's configuration table names every setting of
// the Config with its default and nothing else (go test -run TestREADMEConfig
// -update-readme rewrites its field and default columns), and every YAML
// example in it that configures the receiver loads.
func TestREADMEConfig(t *testing.T) {
	configdoc.CheckREADME(t, "README.md", createDefaultConfig())
	configdoc.CheckExamples(t, "README.md", metadata.Type.String(), func() any { return createDefaultConfig() })
}
