// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package configdoc

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Shed  []string `mapstructure:"shed"`
	Above float64  `mapstructure:"above"`
	_     struct{}
}

type element struct {
	Path string                 `mapstructure:"path"`
	Maps map[string]mapSettings `mapstructure:"maps"`
}

type mapSettings struct {
	Monotonic *bool `mapstructure:"monotonic"`
}

type Embedded struct {
	Interval time.Duration `mapstructure:"interval"`
}

type sample struct {
	Embedded  `mapstructure:",squash"`
	Transport string            `mapstructure:"transport"`
	Names     []string          `mapstructure:"names"`
	Ports     []uint16          `mapstructure:"ports"`
	Env       map[string]string `mapstructure:"env"`
	Pressure  inner             `mapstructure:"pressure"`
	Scripts   []element         `mapstructure:"scripts"`
	Optional  *inner            `mapstructure:"optional"`
	Skipped   int               `mapstructure:"-"`
	Enabled   bool              `mapstructure:"enabled,omitempty"`
}

func TestFields(t *testing.T) {
	got, err := Fields(&sample{
		Embedded:  Embedded{Interval: 5 * time.Minute},
		Transport: "auto",
		Names:     []string{"systemd", "tmux: server", "8"},
		Env:       map[string]string{"B": "2", "A": "x"},
		Pressure:  inner{Above: 0.75},
	})
	require.NoError(t, err)
	assert.Equal(t, []Field{
		{"interval", "5m"},
		{"transport", "auto"},
		{"names", `[systemd, "tmux: server", "8"]`},
		{"ports", "[]"},
		{"env", `{A: x, B: "2"}`},
		{"pressure::shed", "[]"},
		{"pressure::above", "0.75"},
		{"scripts", "[]"},
		{"scripts[]::path", `""`},
		{"scripts[]::maps", "{}"},
		{"scripts[]::maps::<name>::monotonic", "null"},
		{"optional::shed", "[]"},
		{"optional::above", "0"},
		{"enabled", "false"},
	}, got)
}

func TestFieldsUntagged(t *testing.T) {
	_, err := Fields(struct{ Name string }{})
	require.ErrorContains(t, err, "Name has no mapstructure tag")
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Second: "10s", 5 * time.Minute: "5m", 2 * time.Hour: "2h",
		90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 100 * time.Millisecond: "100ms",
	} {
		assert.Equal(t, want, duration(d))
	}
}

const readme = "# r\n\ntext\n\n" + StartMarker + "\n" + header +
	"| `transport` | `auto` | how records travel |\n" +
	"| `pressure::above` | `0.5` | the threshold |\n" +
	"| `pressure::shed` | `[]` | classes shed |\n" +
	"| `gone` | `1` | a setting removed |\n" +
	"| `names` | `[]` |  |\n" +
	EndMarker + "\n\nmore text\n"

func TestCompare(t *testing.T) {
	want := []Field{{"transport", "auto"}, {"names", "[]"}, {"pressure::shed", "[]"}, {"pressure::above", "0.75"}, {"ports", "[]"}}
	problems, err := Compare(readme, want)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"line 12: names has no meaning; say what it does, its range and unit",
		"line 9: pressure::above's default is `0.75`, not `0.5`",
		"ports (default `[]`) is not in the table; add its row",
		"line 10: pressure::shed is out of order; keep the rows in the order of the Config's fields",
		"line 11: gone is not a setting of the Config; remove the row or fix its name",
		"line 12: names is out of order; keep the rows in the order of the Config's fields",
	}, problems)

	rewritten, err := Rewrite(readme, want)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rewritten, "# r\n\ntext\n\n"+StartMarker+"\n"+header+
		"| `transport` | `auto` | how records travel |\n"+
		"| `names` | `[]` |  |\n"+
		"| `pressure::shed` | `[]` | classes shed |\n"+
		"| `pressure::above` | `0.75` | the threshold |\n"+
		"| `ports` | `[]` |  |\n"+
		EndMarker+"\n\nmore text\n"), rewritten)
	problems, err = Compare(rewritten, want)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"line 9: names has no meaning; say what it does, its range and unit",
		"line 12: ports has no meaning; say what it does, its range and unit",
	}, problems)
}

func TestCompareMalformed(t *testing.T) {
	_, err := Compare("no table here", nil)
	require.ErrorContains(t, err, "no configuration table")
	_, err = Compare(StartMarker+"\n"+header+"| transport | auto | x |\n"+EndMarker, nil)
	require.ErrorContains(t, err, "is not a row")
}

func TestYAMLBlocks(t *testing.T) {
	blocks := yamlBlocks("a\n```yaml\nreceivers:\n  seq: {}\n```\n```sh\nls\n```\n")
	assert.Equal(t, map[int]string{2: "receivers:\n  seq: {}"}, blocks)
}
