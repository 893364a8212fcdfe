// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package parity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Span is one span as either side exports it.
type Span struct {
	Name, Service, Scope      string
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root span
	Start                     time.Time
	Duration                  time.Duration
	Attrs                     map[string]string
}

// key matches a span of one side with the other's: name and attributes.
func (s Span) key() string { return s.Name + "{" + LabelString(s.Attrs) + "}" }

func root(id string) string {
	if strings.Trim(id, "0") == "" {
		return ""
	}
	return id
}

// FromStdoutTrace parses what ebpf_exporter prints with
// OTEL_TRACES_EXPORTER=console: the OTel SDK's stdouttrace JSON, one object
// per span.
func FromStdoutTrace(r io.Reader) ([]Span, error) {
	type kv struct {
		Key   string
		Value struct{ Value any }
	}
	var out []Span
	dec := json.NewDecoder(r)
	for {
		var s struct {
			Name        string
			SpanContext struct{ TraceID, SpanID string }
			Parent      struct{ SpanID string }
			StartTime   time.Time
			EndTime     time.Time
			Attributes  []kv
			Resource    []kv
			Scope       struct{ Name string } `json:"InstrumentationScope"`
		}
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		sp := Span{Name: s.Name, Scope: s.Scope.Name, TraceID: s.SpanContext.TraceID, SpanID: s.SpanContext.SpanID,
			ParentID: root(s.Parent.SpanID), Start: s.StartTime, Duration: s.EndTime.Sub(s.StartTime), Attrs: map[string]string{}}
		for _, a := range s.Attributes {
			sp.Attrs[a.Key] = fmt.Sprint(a.Value.Value)
		}
		for _, a := range s.Resource {
			if a.Key == "service.name" {
				sp.Service = fmt.Sprint(a.Value.Value)
			}
		}
		out = append(out, sp)
	}
}

// FromOTLPTraces flattens the receiver's spans.
func FromOTLPTraces(td ptrace.Traces) []Span {
	var out []Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		svc, _ := rss.At(i).Resource().Attributes().Get("service.name")
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				out = append(out, Span{Name: s.Name(), Service: svc.AsString(), Scope: sss.At(j).Scope().Name(),
					TraceID: s.TraceID().String(), SpanID: s.SpanID().String(), ParentID: root(s.ParentSpanID().String()),
					Start: s.StartTimestamp().AsTime(), Duration: s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime()),
					Attrs: labels(s.Attributes())})
			}
		}
	}
	return out
}

// labels is a span's attributes as strings.
func labels(attrs pcommon.Map) map[string]string {
	out := make(map[string]string, attrs.Len())
	for k, v := range attrs.All() {
		out[k] = v.AsString()
	}
	return out
}

// SpanRow is one matched pair in CompareSpans' table.
type SpanRow struct {
	Key             string
	Service, Parent string // ours
	RefDur, OurDur  time.Duration
	OurGap          time.Duration // our start minus ebpf_exporter's
	OK              bool
}

// CompareSpans matches ebpf_exporter's spans with ours by name and
// attributes (in start order where several share them) and checks each
// pair: the same service and scope; the same structure (a root on both
// sides, or children of matching parents, in their parent's trace); the
// same first half of the trace id (the fixtures put the tgid there, so both
// hex decoders must give the same string); durations within durTol.
// Spans on one side only are differences.
func CompareSpans(ref, ours []Span, durTol time.Duration) ([]string, []SpanRow) {
	var diffs []string
	group := func(spans []Span) (map[string][]Span, map[string]Span) {
		byKey, byID := map[string][]Span{}, map[string]Span{}
		for _, s := range spans {
			byKey[s.key()] = append(byKey[s.key()], s)
			byID[s.SpanID] = s
		}
		for _, g := range byKey {
			slices.SortFunc(g, func(a, b Span) int { return a.Start.Compare(b.Start) })
		}
		return byKey, byID
	}
	refKeys, refIDs := group(ref)
	ourKeys, ourIDs := group(ours)
	parentKey := func(s Span, ids map[string]Span) string {
		if s.ParentID == "" {
			return "(root)"
		}
		p, ok := ids[s.ParentID]
		if !ok {
			return "(missing parent " + s.ParentID + ")"
		}
		if p.TraceID != s.TraceID {
			return "(parent in trace " + p.TraceID + ")"
		}
		return p.key()
	}
	var rows []SpanRow
	keys := slices.Sorted(maps.Keys(refKeys))
	for k := range ourKeys {
		if _, ok := refKeys[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		r, o := refKeys[k], ourKeys[k]
		if len(r) != len(o) {
			diffs = append(diffs, fmt.Sprintf("span %s: %d in ebpf_exporter, %d in ours", k, len(r), len(o)))
		}
		for i := range min(len(r), len(o)) {
			a, b := r[i], o[i]
			row := SpanRow{Key: k, Service: b.Service, Parent: parentKey(b, ourIDs), RefDur: a.Duration, OurDur: b.Duration,
				OurGap: b.Start.Sub(a.Start), OK: true}
			bad := func(format string, args ...any) {
				diffs = append(diffs, fmt.Sprintf("span %s #%d: ", k, i)+fmt.Sprintf(format, args...))
				row.OK = false
			}
			if a.Service != b.Service {
				bad("service %q, ebpf_exporter %q", b.Service, a.Service)
			}
			if a.Scope != b.Scope {
				bad("scope %q, ebpf_exporter %q", b.Scope, a.Scope)
			}
			if pr := parentKey(a, refIDs); pr != row.Parent {
				bad("parent %s, ebpf_exporter %s", row.Parent, pr)
			}
			if len(a.TraceID) != 32 || len(b.TraceID) != 32 || a.TraceID[:16] != b.TraceID[:16] {
				bad("trace id %s, ebpf_exporter %s: first halves differ", b.TraceID, a.TraceID)
			}
			if d := a.Duration - b.Duration; d > durTol || d < -durTol {
				bad("duration %s, ebpf_exporter %s", b.Duration, a.Duration)
			}
			rows = append(rows, row)
		}
	}
	return diffs, rows
}

// SpansMarkdown renders CompareSpans' rows.
func SpansMarkdown(rows []SpanRow) string {
	var sb strings.Builder
	sb.WriteString("| span (name{attributes}) | service | parent | ebpf_exporter duration | ours | start, ours − ebpf_exporter | match |\n")
	sb.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| `%s` | %s | `%s` | %s | %s | %s | %s |\n", r.Key, r.Service, r.Parent,
			r.RefDur.Round(time.Microsecond), r.OurDur.Round(time.Microsecond), r.OurGap.Round(time.Microsecond), yes(r.OK))
	}
	return sb.String()
}
