// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package configdoc

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.yaml.in/yaml/v3"
)

// Markers of the table in the README.
const (
	StartMarker = "<!-- config:start -->"
	EndMarker   = "<!-- config:end -->"
	header      = "| field | default | meaning |\n|---|---|---|\n"
)

var update = flag.Bool("update-readme", false, "rewrite the field and default columns of the README's configuration table from the Config")

// row is one row of the table: | `path` | `default` | meaning |.
var row = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]*)` \\| (.*?) ?\\|$")

// CheckREADME checks the configuration table of the README at path against
// Fields(defaults) and fails the test with every difference and its fix.
// With -update-readme it first rewrites the table's path and default
// columns, keeping each row's meaning.
func CheckREADME(t testing.TB, path string, defaults any) {
	t.Helper()
	want, err := Fields(defaults)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if *update {
		if text, err = Rewrite(text, want); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := Compare(text, want)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(problems) > 0 {
		t.Errorf("%s: the configuration table differs from the Config (go test -run '%s' -update-readme rewrites the field and default columns; then write the meanings left empty):\n\t%s",
			path, t.Name(), strings.Join(problems, "\n\t"))
	}
}

// documented is a row as the README has it.
type documented struct {
	Field
	meaning string
	line    int
}

// markers returns the offsets of the table's markers.
func markers(text string) (start, end int, err error) {
	start = strings.Index(text, StartMarker)
	end = strings.Index(text, EndMarker)
	if start < 0 || end < start {
		return 0, 0, fmt.Errorf("no configuration table: put one between %s and %s", StartMarker, EndMarker)
	}
	return start, end, nil
}

// table returns the rows between the markers; err says which lines are
// not rows.
func table(text string) ([]documented, error) {
	start, end, err := markers(text)
	if err != nil {
		return nil, err
	}
	first := strings.Count(text[:start], "\n") + 1
	body := strings.TrimSpace(text[start+len(StartMarker) : end])
	lines := strings.Split(body, "\n")
	if len(lines) < 2 || lines[0]+"\n"+lines[1]+"\n" != header {
		return nil, fmt.Errorf("line %d: the table does not start with %q", first+1, header)
	}
	var rows []documented
	var errs []error
	for i, l := range lines[2:] {
		m := row.FindStringSubmatch(l)
		if m == nil {
			errs = append(errs, fmt.Errorf("line %d: %q is not a row | `field` | `default` | meaning |", first+3+i, l))
			continue
		}
		rows = append(rows, documented{Field: Field{Path: m[1], Default: m[2]}, meaning: strings.TrimSpace(m[3]), line: first + 3 + i})
	}
	return rows, errors.Join(errs...)
}

// Compare returns what differs between the README's table and want: a
// setting not in the table, a row of no setting, a default that differs, a
// row out of order, a meaning left empty.
func Compare(text string, want []Field) ([]string, error) {
	rows, err := table(text)
	if err != nil {
		return nil, err
	}
	var problems []string
	have := map[string]documented{}
	for _, r := range rows {
		if _, dup := have[r.Path]; dup {
			problems = append(problems, fmt.Sprintf("line %d: %s is documented twice; keep one row", r.line, r.Path))
		}
		have[r.Path] = r
	}
	wantIdx := map[string]int{}
	for i, f := range want {
		wantIdx[f.Path] = i
		r, ok := have[f.Path]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (default `%s`) is not in the table; add its row", f.Path, f.Default))
		case r.Default != f.Default:
			problems = append(problems, fmt.Sprintf("line %d: %s's default is `%s`, not `%s`", r.line, f.Path, f.Default, r.Default))
		}
		if ok && r.meaning == "" {
			problems = append(problems, fmt.Sprintf("line %d: %s has no meaning; say what it does, its range and unit", r.line, f.Path))
		}
	}
	last := -1
	for _, r := range rows {
		i, ok := wantIdx[r.Path]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("line %d: %s is not a setting of the Config; remove the row or fix its name", r.line, r.Path))
		case i < last:
			problems = append(problems, fmt.Sprintf("line %d: %s is out of order; keep the rows in the order of the Config's fields", r.line, r.Path))
		default:
			last = i
		}
	}
	return problems, nil
}

// Rewrite returns text with the table made of want's rows, in want's order,
// each with the meaning of the row of the same path (empty for a new one).
func Rewrite(text string, want []Field) (string, error) {
	start, end, err := markers(text)
	if err != nil {
		return "", err
	}
	rows, _ := table(text) // a row that does not parse loses its meaning
	meaning := map[string]string{}
	for _, r := range rows {
		meaning[r.Path] = r.meaning
	}
	var b strings.Builder
	b.WriteString(text[:start] + StartMarker + "\n" + header)
	for _, f := range want {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", f.Path, f.Default, meaning[f.Path])
	}
	b.WriteString(text[end:])
	return b.String(), nil
}

// CheckExamples unmarshals every ```yaml block of the README at path that
// configures a receiver of type typ (receivers: typ: or typ/name:) into a
// config from newConfig and validates it, as the collector would, and fails
// the test on every block that names a setting that does not exist, gives
// one a value of the wrong type or one its Validate refuses. An example
// need not be complete: settings the receiver requires (Validate) must be
// in it all the same.
func CheckExamples(t testing.TB, path, typ string, newConfig func() any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line, block := range yamlBlocks(string(raw)) {
		var doc struct {
			Receivers map[string]map[string]any `yaml:"receivers"`
		}
		if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
			t.Errorf("%s:%d: the example is not YAML: %v", path, line, err)
			continue
		}
		for id, settings := range doc.Receivers {
			if id != typ && !strings.HasPrefix(id, typ+"/") {
				continue
			}
			n++
			cfg := newConfig()
			if err := confmap.NewFromStringMap(settings).Unmarshal(cfg); err != nil {
				t.Errorf("%s:%d: the example's receivers::%s does not load: %v", path, line, id, err)
			} else if err := confmap.Validate(cfg); err != nil {
				t.Errorf("%s:%d: the example's receivers::%s is not valid: %v", path, line, id, err)
			}
		}
	}
	if n == 0 {
		t.Errorf("%s: no ```yaml example configures receivers::%s", path, typ)
	}
}

// yamlBlocks returns the ```yaml blocks of text by the line they start on.
func yamlBlocks(text string) map[int]string {
	blocks := map[int]string{}
	var cur []string
	start := 0
	in := false
	for i, l := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```yaml":
			in, start, cur = true, i+1, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks[start] = strings.Join(cur, "\n")
		case in:
			cur = append(cur, l)
		}
	}
	return blocks
}
