// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{ConfigDir: "/etc/ebpf_exporter", Names: []string{"biolatency", "timers"}}
	require.NoError(t, ok.Validate())

	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"config_dir: empty; set it", "names: empty; list one or more config names"}},
		{"empty name", Config{ConfigDir: "/d", Names: []string{""}}, []string{"names[0]: empty; give a config name"}},
		{"path", Config{ConfigDir: "/d", Names: []string{"a/b"}}, []string{`names[0]: "a/b" is a path`}},
		{"suffix", Config{ConfigDir: "/d", Names: []string{"bio.yaml"}}, []string{`names[0]: "bio.yaml" has a file suffix; give the config name without`}},
		{"duplicate", Config{ConfigDir: "/d", Names: []string{"a", "b", "a"}}, []string{`names[2]: "a" is already listed at names[0]; list it once`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
