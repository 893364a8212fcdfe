// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package parity

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// stdoutSpans is what ebpf_exporter prints for a process span and its
// child with OTEL_TRACES_EXPORTER=console (fields it has that we do not
// read left out).
const stdoutSpans = `{
	"Name": "ebpfx_spanwork",
	"SpanContext": {"TraceID": "2a000000000000000100000000000000", "SpanID": "0100000000000000", "TraceFlags": "01"},
	"Parent": {"TraceID": "00000000000000000000000000000000", "SpanID": "0000000000000000"},
	"SpanKind": 1,
	"StartTime": "2026-01-01T00:00:00Z",
	"EndTime": "2026-01-01T00:00:00.030Z",
	"Attributes": [{"Key": "pid", "Value": {"Type": "STRING", "Value": "42"}},
		{"Key": "ebpf_exporter.config", "Value": {"Type": "STRING", "Value": "ebpfx_spans"}}],
	"Resource": [{"Key": "service.name", "Value": {"Type": "STRING", "Value": "ebpfx-spans"}}],
	"InstrumentationScope": {"Name": "github.com/cloudflare/ebpf_exporter/v2/tracing"}
}
{
	"Name": "syscall",
	"SpanContext": {"TraceID": "2a000000000000000100000000000000", "SpanID": "0200000000000000"},
	"Parent": {"TraceID": "2a000000000000000100000000000000", "SpanID": "0100000000000000"},
	"StartTime": "2026-01-01T00:00:00.005Z",
	"EndTime": "2026-01-01T00:00:00.025Z",
	"Attributes": [{"Key": "syscall", "Value": {"Type": "STRING", "Value": "clock_nanosleep"}},
		{"Key": "pid", "Value": {"Type": "STRING", "Value": "42"}},
		{"Key": "ebpf_exporter.config", "Value": {"Type": "STRING", "Value": "ebpfx_spans"}}],
	"Resource": [{"Key": "service.name", "Value": {"Type": "STRING", "Value": "ebpf_exporter"}}],
	"InstrumentationScope": {"Name": "github.com/cloudflare/ebpf_exporter/v2/tracing"}
}
`

// ourSpans is the receiver's export of the same two spans, whose ids come
// from its own program's clock; childService and traceHi vary them.
func ourSpans(childService string, traceHi byte, childDur time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	start := time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC)
	add := func(service, name string, span, parent byte, from, dur time.Duration, attrs map[string]string) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("github.com/cloudflare/ebpf_exporter/v2/tracing")
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID(pcommon.TraceID{traceHi, 0, 0, 0, 0, 0, 0, 0, 9})
		s.SetSpanID(pcommon.SpanID{span, 9})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent, 9})
		}
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(from)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(from + dur)))
		for k, v := range attrs {
			s.Attributes().PutStr(k, v)
		}
	}
	add("ebpfx-spans", "ebpfx_spanwork", 1, 0, 0, 30*time.Millisecond, map[string]string{"pid": "42", "ebpf_exporter.config": "ebpfx_spans"})
	add(childService, "syscall", 2, 1, 5*time.Millisecond, childDur,
		map[string]string{"syscall": "clock_nanosleep", "pid": "42", "ebpf_exporter.config": "ebpfx_spans"})
	return td
}

func TestCompareSpans(t *testing.T) {
	ref, err := FromStdoutTrace(strings.NewReader(stdoutSpans))
	require.NoError(t, err)
	require.Len(t, ref, 2)
	assert.Equal(t, "", ref[0].ParentID, "all-zero parent: a root")
	assert.Equal(t, 20*time.Millisecond, ref[1].Duration)

	diffs, rows := CompareSpans(ref, FromOTLPTraces(ourSpans("ebpf_exporter", 0x2a, 20*time.Millisecond)), time.Millisecond)
	assert.Empty(t, diffs)
	require.Len(t, rows, 2)
	assert.Equal(t, `ebpfx_spanwork{ebpf_exporter.config="ebpfx_spans",pid="42"}`, rows[1].Parent)
	assert.Contains(t, SpansMarkdown(rows), "| `syscall{ebpf_exporter.config=\"ebpfx_spans\",pid=\"42\",syscall=\"clock_nanosleep\"}` | ebpf_exporter | `ebpfx_spanwork")

	for _, c := range []struct {
		name string
		td   ptrace.Traces
		want string
	}{
		{"service", ourSpans("ebpfx-spans", 0x2a, 20*time.Millisecond), `service "ebpfx-spans", ebpf_exporter "ebpf_exporter"`},
		{"hex decoder", ourSpans("ebpf_exporter", 0x2b, 20*time.Millisecond), "first halves differ"},
		{"duration", ourSpans("ebpf_exporter", 0x2a, 25*time.Millisecond), "duration 25ms, ebpf_exporter 20ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			diffs, _ := CompareSpans(ref, FromOTLPTraces(c.td), time.Millisecond)
			require.NotEmpty(t, diffs)
			assert.Contains(t, strings.Join(diffs, "\n"), c.want)
		})
	}

	// A child missing on our side, and so without its parent's structure.
	ours := FromOTLPTraces(ourSpans("ebpf_exporter", 0x2a, 20*time.Millisecond))[:1]
	diffs, _ = CompareSpans(ref, ours, time.Millisecond)
	assert.Equal(t, []string{`span syscall{ebpf_exporter.config="ebpfx_spans",pid="42",syscall="clock_nanosleep"}: 1 in ebpf_exporter, 0 in ours`}, diffs)
}
