// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"strings"
	"time"
)

// maxLineBytes bounds a printed line being assembled; a longer one is
// emitted as it is.
const maxLineBytes = 64 << 10

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
type lineAssembler struct {
	buf   strings.Builder
	since time.Time
}

// add appends a text record and returns the line it completes, if any.
func (a *lineAssembler) add(text string, endsLine bool, now time.Time) (printedLine, bool) {
	if a.buf.Len() == 0 {
		a.since = now
	}
	a.buf.WriteString(text)
	if endsLine || strings.HasSuffix(text, "\n") || a.buf.Len() >= maxLineBytes {
		return a.flush()
	}
	return printedLine{}, false
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
