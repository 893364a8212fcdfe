// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package rpcgraphconnector

import (
	"testing"

	"github.com/otelcol-seq/otelcol-seq/test/configdoc"
)

// TestREADMEConfig: README.md's configuration table names every setting of
// the Config with its default and nothing else (go test -run TestREADMEConfig
// -update-readme rewrites its field and default columns).
func TestREADMEConfig(t *testing.T) {
	configdoc.CheckREADME(t, "README.md", createDefaultConfig())
}
