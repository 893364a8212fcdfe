// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"strings"
	"time"
	"unicode/utf8"
)

// maxLineBytes bounds a printed line being assembled when the assembler
// is given no bound (Config.MaxLineBytes sets it).
const maxLineBytes = DefaultMaxLineBytes

// printedLine is one reassembled printed line: the body of one log record.
type printedLine struct {
	text string
	at   time.Time // when its first part arrived
}

// lineAssembler reassembles the text records of bpftrace's JSON output into
// printed lines. bpftrace emits one record per printf/time/join/cat/system
// call, so one printed line may span records: execsnoop prints
// `printf("%-10u %-5d ", ...)` then `join(args->argv)`, killsnoop
// `time("%H:%M:%S  ")` then `printf(...\n)`. Text accumulates until it ends
// with a newline, or until a join or print() (which end the line in
// bpftrace's text output) arrives. The line is emitted without its leading
// and trailing newlines, so one printf of "\nTop 10:\n" is "Top 10:", and a
// printf of several lines (a stack) stays one record; blank lines are
// dropped.
//
// A line is at most max bytes (maxLineBytes when 0): what a record brings
// beyond them is cut (add returns how many bytes), and the line emitted
// at once; the rest of the printed line, in later records, starts a new
// one.
type lineAssembler struct {
	buf   strings.Builder
	since time.Time
	max   int
}

// add appends a text record and returns the line it completes, if any,
// and how many bytes of text it cut.
func (a *lineAssembler) add(text string, endsLine bool, now time.Time) (pl printedLine, ok bool, cut int) {
	limit := a.max
	if limit <= 0 {
		limit = maxLineBytes
	}
	if a.buf.Len() == 0 {
		a.since = now
	}
	if room := limit - a.buf.Len(); len(text) > room {
		kept := cutUTF8(text, room)
		cut = len(text) - len(kept)
		text = kept
	}
	a.buf.WriteString(text)
	if endsLine || cut > 0 || strings.HasSuffix(text, "\n") || a.buf.Len() >= limit {
		pl, ok = a.flush()
		return pl, ok, cut
	}
	return printedLine{}, false, 0
}

// len is how many bytes wait in the partial line.
func (a *lineAssembler) len() int { return a.buf.Len() }

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = n // not UTF-8 anyway
	}
	return s[:i]
}

// flush returns the pending partial line, if any.
func (a *lineAssembler) flush() (printedLine, bool) {
	s := a.buf.String()
	a.buf.Reset()
	s = strings.TrimLeft(s, "\r\n")
	s = strings.TrimRight(s, "\r\n")
	if strings.TrimSpace(s) == "" {
		return printedLine{}, false
	}
	return printedLine{text: s, at: a.since}, true
}

// pending reports whether a partial line waits, and since when.
func (a *lineAssembler) pending() (time.Time, bool) {
	return a.since, a.buf.Len() > 0
}
