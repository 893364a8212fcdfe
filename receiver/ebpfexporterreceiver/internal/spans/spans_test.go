// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spans

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// execSpan is the layout of ebpf_exporter's examples/exec-trace.yaml.
var execSpan = spec.Span{
	Name:    "exec",
	RingBuf: "exec_spans",
	Service: "exec-trace",
	Labels: []spec.Label{
		{Name: "trace_id", Size: 16, Decoders: []spec.Decoder{{Name: "hex"}}},
		{Name: "parent_span_id", Size: 8, Decoders: []spec.Decoder{{Name: "hex"}}},
		{Name: "span_id", Size: 8, Decoders: []spec.Decoder{{Name: "hex"}}},
		{Name: "span_monotonic_timestamp_ns", Size: 8, Decoders: []spec.Decoder{{Name: "uint"}}},
		{Name: "span_duration_ns", Size: 8, Decoders: []spec.Decoder{{Name: "uint"}}},
		{Name: "span_name", Size: 16, Decoders: []spec.Decoder{{Name: "string"}}},
		{Name: "pid", Size: 4, Padding: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
	},
}

type rec struct {
	traceHi, traceLo, parent, span, start, dur uint64
	name                                       string
	pid                                        uint32
}

func (r rec) bytes() []byte {
	b := make([]byte, 0, 72)
	for _, v := range []uint64{r.traceHi, r.traceLo, r.parent, r.span, r.start, r.dur} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	name := make([]byte, 16)
	copy(name, r.name)
	b = append(b, name...)
	b = binary.LittleEndian.AppendUint32(b, r.pid)
	return append(b, 0, 0, 0, 0)
}

// The wall clock reads 1000 s after the epoch when CLOCK_MONOTONIC reads 500 s.
var (
	wallNow = time.Unix(1000, 0)
	fixed   = func() (time.Time, uint64) { return wallNow, 500e9 }
)

func decodeOne(t *testing.T, s spec.Span, raw []byte) (ptrace.Span, error) {
	t.Helper()
	d := newSpanDecoder("cfg", s, decoder.NewSet(decoder.Env{}), fixed)
	spans := ptrace.NewSpanSlice()
	err := d.decode(raw, spans)
	if err != nil {
		require.Equal(t, 0, spans.Len())
		return ptrace.Span{}, err
	}
	require.Equal(t, 1, spans.Len())
	return spans.At(0), nil
}

func TestSpanRecord(t *testing.T) {
	sp, err := decodeOne(t, execSpan, rec{traceHi: 0x0102, traceLo: 0x0a0b, parent: 0x11, span: 0x22,
		start: 499e9, dur: 250e6, name: "bash", pid: 42}.bytes())
	require.NoError(t, err)
	// hex of the record's bytes, as ebpf_exporter's hex decoder gives them (little endian u64s).
	assert.Equal(t, "02010000000000000b0a000000000000", sp.TraceID().String())
	assert.Equal(t, "1100000000000000", sp.ParentSpanID().String())
	assert.Equal(t, "2200000000000000", sp.SpanID().String())
	assert.Equal(t, "bash", sp.Name(), "span_name overrides the config's name")
	assert.Equal(t, ptrace.SpanKindInternal, sp.Kind())
	assert.Equal(t, time.Unix(999, 0).UTC(), sp.StartTimestamp().AsTime(), "monotonic 499 s is 1 s before now")
	assert.Equal(t, 250*time.Millisecond, sp.EndTimestamp().AsTime().Sub(sp.StartTimestamp().AsTime()))
	assert.Equal(t, map[string]any{"pid": "42", "ebpf_exporter.config": "cfg"}, sp.Attributes().AsRaw())
	var keys []string
	sp.Attributes().Range(func(k string, _ pcommon.Value) bool { keys = append(keys, k); return true })
	assert.Equal(t, []string{"pid", "ebpf_exporter.config"}, keys, "labels first, in order, then the config")
}

func TestSpanRecordDefaults(t *testing.T) {
	// A zero parent is a root span; a zero span id is generated.
	sp, err := decodeOne(t, execSpan, rec{traceLo: 7, start: 500e9}.bytes())
	require.NoError(t, err)
	assert.True(t, sp.ParentSpanID().IsEmpty())
	assert.False(t, sp.SpanID().IsEmpty())
	assert.Equal(t, "00000000000000000700000000000000", sp.TraceID().String(), "hi (zero) then lo")
	assert.Empty(t, sp.Name(), "an empty span_name still replaces the name, as in ebpf_exporter")

	// No span_name, no timestamp, no ids: the ring buffer's name, now, random ids.
	bare := spec.Span{RingBuf: "rb", Labels: []spec.Label{{Name: "comm", Size: 4, Decoders: []spec.Decoder{{Name: "string"}}}}}
	sp, err = decodeOne(t, bare, []byte("abc\x00"))
	require.NoError(t, err)
	assert.Equal(t, "rb", sp.Name())
	assert.False(t, sp.TraceID().IsEmpty())
	assert.False(t, sp.SpanID().IsEmpty())
	assert.Equal(t, wallNow.UTC(), sp.StartTimestamp().AsTime())
	assert.Equal(t, sp.StartTimestamp(), sp.EndTimestamp())
	assert.Equal(t, map[string]any{"comm": "abc", "ebpf_exporter.config": "cfg"}, sp.Attributes().AsRaw())

	// A longer record is cut to the labels (ring buffer records are 8-byte aligned).
	sp, err = decodeOne(t, bare, []byte("xyz\x00\x01\x02\x03\x04"))
	require.NoError(t, err)
	assert.Equal(t, "xyz", sp.Attributes().AsRaw()["comm"])
}

func TestSpanRecordErrors(t *testing.T) {
	_, err := decodeOne(t, execSpan, rec{span: 1, start: 1}.bytes())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `error parsing trace_id "00000000000000000000000000000000"`)

	_, err = decodeOne(t, execSpan, rec{traceLo: 1, start: 1}.bytes()[:40])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed to decode labels")

	wide := execSpan
	wide.Labels = append([]spec.Label{}, execSpan.Labels...)
	wide.Labels[2] = spec.Label{Name: "span_id", Size: 8, Decoders: []spec.Decoder{{Name: "uint"}}}
	_, err = decodeOne(t, wide, rec{traceLo: 1, span: 5}.bytes())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `error parsing span_id "5"`)

	skip := spec.Span{RingBuf: "rb", Labels: []spec.Label{{Name: "comm", Size: 4, Decoders: []spec.Decoder{{Name: "string"}, {Name: "regexp", Regexps: []string{"^nginx$"}}}}}}
	_, err = decodeOne(t, skip, []byte("abc\x00"))
	assert.ErrorIs(t, err, decoder.ErrSkipLabelSet, "a record a regexp drops is skipped, not an error")
}

func TestServiceName(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	assert.Equal(t, "ebpf_exporter", ServiceName(spec.Span{}))
	assert.Equal(t, "svc", ServiceName(spec.Span{Service: "svc"}))
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	assert.Equal(t, "from-env", ServiceName(spec.Span{}))
	assert.Equal(t, "svc", ServiceName(spec.Span{Service: "svc"}))
}

func TestSpanBatch(t *testing.T) {
	td, spans := newSpanBatch("svc")
	spans.AppendEmpty()
	rs := td.ResourceSpans().At(0)
	assert.Equal(t, map[string]any{"service.name": "svc"}, rs.Resource().Attributes().AsRaw())
	assert.Equal(t, TracingScope, rs.ScopeSpans().At(0).Scope().Name())
	assert.Equal(t, 1, td.SpanCount())
}
