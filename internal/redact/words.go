// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package redact

import "strings"

// word is one word of a shell command string: its bytes in the string
// (raw, quotes included) and its text as the shell passes it on (quotes
// removed, escapes resolved).
type word struct {
	lo, hi int
	text   string
	quoted bool // raw differs from text: it had quotes or backslashes
}

// isSep: unquoted bytes that end a word (blanks and the shell's operators).
func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

// splitWords splits a shell command string into words as a POSIX shell
// reads them: blanks and operators separate words, '...' is literal, "..."
// resolves \" \\ \$ \` and a backslash quotes the next byte. Expansions
// ($x, $(...)) are left as they are written. An unclosed quote runs to the
// end. It is a reader for redaction, not a shell: it never fails.
func splitWords(s string) []word {
	var out []word
	var b strings.Builder
	for i := 0; i < len(s); {
		for i < len(s) && isSep(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		lo := i
		quoted := false
		b.Reset()
		for i < len(s) && !isSep(s[i]) {
			switch c := s[i]; c {
			case '\'':
				quoted = true
				j := strings.IndexByte(s[i+1:], '\'')
				if j < 0 {
					b.WriteString(s[i+1:])
					i = len(s)
				} else {
					b.WriteString(s[i+1 : i+1+j])
					i += j + 2
				}
			case '"':
				quoted = true
				i++
				for i < len(s) && s[i] != '"' {
					if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
						i++
					}
					b.WriteByte(s[i])
					i++
				}
				i++ // the closing quote
			case '\\':
				quoted = true
				if i+1 < len(s) {
					b.WriteByte(s[i+1])
				}
				i += 2
			default:
				b.WriteByte(c)
				i++
			}
		}
		i = min(i, len(s))
		text := s[lo:i]
		if quoted {
			text = b.String()
		}
		out = append(out, word{lo: lo, hi: i, text: text, quoted: quoted})
	}
	return out
}

// quote writes text as one shell word for a string whose word was raw:
// in raw's quote character where raw is one quoted string and text allows
// it, else in single quotes (a quote inside closed, escaped, reopened).
func quote(raw, text string) string {
	if len(raw) >= 2 && raw[0] == raw[len(raw)-1] {
		switch raw[0] {
		case '\'':
			if !strings.Contains(text, "'") {
				return "'" + text + "'"
			}
		case '"':
			if !strings.ContainsAny(text, "\"\\$`") {
				return `"` + text + `"`
			}
		}
	}
	if !strings.ContainsAny(text, " \t\n\r;&|<>()'\"\\$`*?[]{}~#") && text != "" {
		return text
	}
	return "'" + strings.ReplaceAll(text, "'", `'\''`) + "'"
}

// Words splits a shell command string into the words a POSIX shell passes
// on (quotes removed, escapes resolved; expansions left as written).
func Words(s string) []string {
	ws := splitWords(s)
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}
