// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spans

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// Sink receives the spans read from the configs' span ring buffers,
// one batch at a time. An error counts the batch's spans as dropped.
type Sink func(context.Context, ptrace.Traces) error

// TracingScope is the instrumentation scope of every span, the one
// ebpf_exporter's tracer has (its tracing package's import path).
const TracingScope = "github.com/cloudflare/ebpf_exporter/v2/tracing"

// DefaultService is the service.name of spans whose config names no
// service and when OTEL_SERVICE_NAME is unset, as ebpf_exporter's main sets it.
const DefaultService = "ebpf_exporter"

// The label names ebpf_exporter reads span fields from; every other label
// becomes a string attribute.
const (
	labelTraceID      = "trace_id"
	labelParentSpanID = "parent_span_id"
	labelSpanID       = "span_id"
	labelStartNS      = "span_monotonic_timestamp_ns"
	labelDurationNS   = "span_duration_ns"
	labelSpanName     = "span_name"
)

// nilSpanID is the decoded span_id / parent_span_id ebpf_exporter treats
// as absent (it then generates the span id, or makes a root span).
const nilSpanID = "0000000000000000"

// ServiceName is the service.name of a span ring buffer's spans: the
// config's service, else $OTEL_SERVICE_NAME, else "ebpf_exporter".
func ServiceName(s spec.Span) string {
	if s.Service != "" {
		return s.Service
	}
	if v := os.Getenv("OTEL_SERVICE_NAME"); v != "" {
		return v
	}
	return DefaultService
}

// spanClock converts the BPF side's bpf_ktime_get_ns() (CLOCK_MONOTONIC)
// to wall-clock time the way ebpf_exporter does: now + (ts - monotonic now).
type spanClock func() (wall time.Time, mono uint64)

// spanDecoder turns one ring buffer record into a span with ebpf_exporter's
// rules (tracing/extract.go in v2.5.1):
//
//   - The record's first label-sizes-plus-paddings bytes are cut into the
//     labels and decoded (a longer record is truncated, a shorter one is a
//     decode error); a regexp decoder without a match drops the record.
//   - trace_id (32 hex digits), parent_span_id and span_id (16 hex digits)
//     are parsed from the decoded strings; "0000000000000000" leaves a span
//     id unset; an all-zero or malformed id is an error.
//   - span_monotonic_timestamp_ns (decimal, CLOCK_MONOTONIC) is the start
//     (default: now), span_duration_ns (decimal) the duration (default 0),
//     span_name the name (default: the config's name, else the ring buffer's).
//   - Every other label becomes a string attribute, in label order, then
//     ebpf_exporter.config = <config>.
//   - IDs as the OpenTelemetry SDK with ebpf_exporter's ID generator makes
//     them: with a valid trace id the span keeps it and takes span_id (or a
//     random one); without one both trace and span id are random. The
//     parent span id is kept as given (none: a root span).
type spanDecoder struct {
	config string
	span   spec.Span
	dec    *decoder.Set
	clock  spanClock
	size   uint
	rng    *rand.Rand
}

func newSpanDecoder(config string, s spec.Span, dec *decoder.Set, clock spanClock) *spanDecoder {
	size := uint(0)
	for _, l := range s.Labels {
		size += l.Size + l.Padding
	}
	var seed [32]byte
	now := uint64(time.Now().UnixNano())
	for i := range 8 {
		seed[i] = byte(now >> (8 * i))
	}
	return &spanDecoder{config: config, span: s, dec: dec, clock: clock, size: size,
		rng: rand.New(rand.NewChaCha8(seed))}
}

// decode appends the record's span to spans. It returns ErrSkipLabelSet
// (not an error: the record is dropped) when a regexp decoder matched
// nothing, and a decode error otherwise; spans is then unchanged.
func (d *spanDecoder) decode(raw []byte, spans ptrace.SpanSlice) error {
	if uint(len(raw)) > d.size {
		raw = raw[:d.size]
	}
	values, err := d.dec.DecodeLabels(raw, d.span.Labels)
	if err != nil {
		if errors.Is(err, decoder.ErrSkipLabelSet) {
			return err
		}
		return fmt.Errorf("failed to decode labels: %w", err)
	}

	name := d.span.Name
	if name == "" {
		name = d.span.RingBuf
	}
	var (
		traceID           pcommon.TraceID
		spanID, parentID  pcommon.SpanID
		start             time.Time
		haveStart         bool
		duration          time.Duration
		attrNames, attrVs []string
	)
	for i, v := range values {
		switch d.span.Labels[i].Name {
		case labelSpanID:
			if v == nilSpanID {
				continue
			}
			if spanID, err = parseSpanID(v); err != nil {
				return fmt.Errorf("error parsing span_id %q: %w", v, err)
			}
		case labelTraceID:
			if traceID, err = parseTraceID(v); err != nil {
				return fmt.Errorf("error parsing trace_id %q: %w", v, err)
			}
		case labelParentSpanID:
			if v == nilSpanID {
				continue
			}
			if parentID, err = parseSpanID(v); err != nil {
				return fmt.Errorf("error parsing parent_span_id %q: %w", v, err)
			}
		case labelStartNS:
			ns, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("error decoding integer for span_monotonic_timestamp_ns from %q: %w", v, err)
			}
			wall, mono := d.clock()
			start, haveStart = wall.Add(time.Duration(ns-mono)), true
		case labelDurationNS:
			ns, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("error decoding integer for span_duration_ns from %q: %w", v, err)
			}
			duration = time.Duration(ns)
		case labelSpanName:
			name = v
		default:
			attrNames = append(attrNames, d.span.Labels[i].Name)
			attrVs = append(attrVs, v)
		}
	}
	if !haveStart {
		start, _ = d.clock()
	}
	if traceID.IsEmpty() {
		traceID, spanID = d.randomTraceID(), d.randomSpanID()
	} else if spanID.IsEmpty() {
		spanID = d.randomSpanID()
	}

	sp := spans.AppendEmpty()
	sp.SetTraceID(traceID)
	sp.SetSpanID(spanID)
	sp.SetParentSpanID(parentID)
	sp.SetName(name)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(duration)))
	attrs := sp.Attributes()
	attrs.EnsureCapacity(len(attrNames) + 1)
	for i, n := range attrNames {
		attrs.PutStr(n, attrVs[i])
	}
	attrs.PutStr("ebpf_exporter.config", d.config)
	return nil
}

func (d *spanDecoder) randomTraceID() pcommon.TraceID {
	var id pcommon.TraceID
	for id.IsEmpty() {
		a, b := d.rng.Uint64(), d.rng.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
		}
	}
	return id
}

func (d *spanDecoder) randomSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		a := d.rng.Uint64()
		for i := range 8 {
			id[i] = byte(a >> (8 * i))
		}
	}
	return id
}

var (
	errIDLength = errors.New("hex encoded id has the wrong length")
	errNilID    = errors.New("id can't be all zero")
)

func parseTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	err := parseHexID(id[:], s)
	return id, err
}

func parseSpanID(s string) (pcommon.SpanID, error) {
	var id pcommon.SpanID
	err := parseHexID(id[:], s)
	return id, err
}

// parseHexID parses exactly 2*len(dst) hex digits into a non-zero id, as
// the OpenTelemetry API's TraceIDFromHex / SpanIDFromHex do.
func parseHexID(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return errIDLength
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return err
	}
	for _, b := range dst {
		if b != 0 {
			return nil
		}
	}
	return errNilID
}

// newSpanBatch starts a Traces with one resource (service.name) and one
// scope (TracingScope) and returns the span slice to fill.
func newSpanBatch(service string) (ptrace.Traces, ptrace.SpanSlice) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(TracingScope)
	return td, ss.Spans()
}

// Counts are one span ring buffer's counters.
type Counts struct {
	Records      uint64 // records read
	Spans        uint64 // spans the sink accepted
	DecodeErrors uint64 // records that did not decode to a span
	Dropped      uint64 // spans the sink refused or the queue had no room for
}
