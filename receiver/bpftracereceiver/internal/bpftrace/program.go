// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// text returns the script's program text: the file at path, read now, or
// the inline program.
func (s *scriptSpec) text() (string, error) {
	if s.path == "" {
		return s.program, nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// compose returns the program bpftrace runs: the script's text, followed,
// when maps are pulled, by one probe that prints them every pull interval.
// bpftrace accepts any number of probes (but one BEGIN and one END) in one
// program, so the script itself is left as it is.
func (s *scriptSpec) compose(text string) string {
	probe := s.pullProbe()
	if probe == "" {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("\n// appended by the OpenTelemetry Collector: pull the exported maps\n")
	b.WriteString(probe)
	b.WriteByte('\n')
	return b.String()
}

// pullProbe is the appended probe, or "" when nothing is pulled:
// `interval:s:N { print(@a); print(@b); }`, or interval:ms:N for an interval
// that is not a whole number of seconds.
func (s *scriptSpec) pullProbe() string {
	if s.pull <= 0 || len(s.order) == 0 {
		return ""
	}
	var b strings.Builder
	if s.pull%time.Second == 0 {
		fmt.Fprintf(&b, "interval:s:%d {", s.pull/time.Second)
	} else {
		ms := s.pull.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		fmt.Fprintf(&b, "interval:ms:%d {", ms)
	}
	for _, m := range s.order {
		fmt.Fprintf(&b, " print(%s);", m)
	}
	b.WriteString(" }")
	return b.String()
}

// checkMapsUsed reports the maps (names with their @) that the program text
// does not use outside comments and string literals.
func checkMapsUsed(text string, mapNames []string) error {
	code := stripCommentsAndStrings(text)
	var missing []string
	for _, m := range mapNames {
		if !mapUsed(code, m) {
			missing = append(missing, m)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("map %s is not used by the script (bpftrace would reject print(%s) with \"Undefined map\"); remove it or correct its name", missing[0], missing[0])
	default:
		return fmt.Errorf("maps %s are not used by the script (bpftrace would reject printing them with \"Undefined map\"); remove them or correct their names", strings.Join(missing, ", "))
	}
}

func mapUsed(code, mapName string) bool {
	// "@x" must not be followed by an identifier character (that would be
	// another map, e.g. "@xy"), nor preceded by one.
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_@])` + regexp.QuoteMeta(mapName) + `($|[^A-Za-z0-9_])`)
	return re.MatchString(code)
}

// stripCommentsAndStrings blanks out //- and /* */-comments and the contents
// of string literals, keeping everything else (and the line structure).
func stripCommentsAndStrings(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	const (
		code = iota
		lineComment
		blockComment
		str
	)
	state := code
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch state {
		case code:
			switch {
			case c == '/' && i+1 < len(text) && text[i+1] == '/':
				state = lineComment
				b.WriteByte(' ')
			case c == '/' && i+1 < len(text) && text[i+1] == '*':
				state = blockComment
				b.WriteByte(' ')
				i++
			case c == '"':
				state = str
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		case lineComment:
			if c == '\n' {
				state = code
				b.WriteByte(c)
			}
		case blockComment:
			if c == '*' && i+1 < len(text) && text[i+1] == '/' {
				state = code
				i++
				b.WriteByte(' ')
			} else if c == '\n' {
				b.WriteByte(c)
			}
		case str:
			switch c {
			case '\\':
				i++
			case '"':
				state = code
				b.WriteByte(c)
			case '\n':
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}
