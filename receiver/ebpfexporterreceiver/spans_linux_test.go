// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporterreceiver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spans"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// spanWorkEnv makes TestSpanWorkloadHelper the workload of
// TestReceiverSpans: clock_nanosleep for each listed duration, then exit.
const spanWorkEnv = "EBPFX_SPANWORK"

// TestSpanWorkloadHelper is not a test: TestReceiverSpans runs this test
// binary through a symlink named ebpfx_spanwork (the comm the fixture
// traces) with this test selected.
func TestSpanWorkloadHelper(t *testing.T) {
	spec := os.Getenv(spanWorkEnv)
	if spec == "" {
		return // not a test: the workload process of TestReceiverSpans
	}
	for _, s := range strings.Split(spec, ",") {
		d, err := time.ParseDuration(s)
		if err != nil {
			os.Exit(2)
		}
		ts := unix.NsecToTimespec(d.Nanoseconds())
		for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
		}
	}
	os.Exit(0)
}

type spanOf struct {
	span     ptrace.Span
	service  string
	scope    string
	attrsRaw map[string]any
}

func spansOfPid(all []ptrace.Traces, pid int) []spanOf {
	var out []spanOf
	for _, td := range all {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					sp := ss.Spans().At(k)
					if v, ok := sp.Attributes().Get("pid"); ok && v.Str() == strconv.Itoa(pid) {
						out = append(out, spanOf{span: sp, service: svc.Str(), scope: ss.Scope().Name(), attrsRaw: sp.Attributes().AsRaw()})
					}
				}
			}
		}
	}
	return out
}

func dur(sp ptrace.Span) time.Duration {
	return sp.EndTimestamp().AsTime().Sub(sp.StartTimestamp().AsTime())
}

// One receiver in a metrics and a traces pipeline loads its configs once:
// ebpfx_spans' ring buffers become a span per ebpfx_spanwork process with a
// child span per clock_nanosleep (names, services, attributes, ids and
// durations checked against the workload), while the metrics pipeline
// pulls ebpfx_partial, whose kprobe could not attach and is reported in
// the programs telemetry.
func TestReceiverSpans(t *testing.T) {
	testutil.RequireRoot(t)
	t.Setenv("OTEL_SERVICE_NAME", "")
	cfg := createDefaultConfig()
	cfg.ConfigDir = testutil.ArchDir("../../testdata/ebpf_exporter")
	cfg.Names = []string{"ebpfx_spans", "ebpfx_partial"}
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.InitialDelay = 0
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	msink, tsink := new(consumertest.MetricsSink), new(consumertest.TracesSink)
	f := NewFactory()
	mr, err := f.CreateMetrics(context.Background(), metadatatest.NewSettings(tel), cfg, msink)
	require.NoError(t, err)
	tr, err := f.CreateTraces(context.Background(), metadatatest.NewSettings(tel), cfg, tsink)
	require.NoError(t, err)
	shared := tr.(*sharedcomponent.Component[*ebpfReceiver])
	host := componenttest.NewNopHost()
	require.NoError(t, tr.Start(context.Background(), host))
	require.NoError(t, mr.Start(context.Background(), host))
	stopped := false
	defer func() {
		if !stopped {
			_ = mr.Shutdown(context.Background())
			_ = tr.Shutdown(context.Background())
		}
	}()
	require.Empty(t, shared.C.ee.Failures())

	self, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "ebpfx_spanwork")
	require.NoError(t, os.Symlink(self, link))
	sleeps := []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond}
	cmd := exec.Command(link, "-test.run=^TestSpanWorkloadHelper$")
	cmd.Env = append(os.Environ(), spanWorkEnv+"=30ms,60ms,90ms")
	before := time.Now()
	out, err := cmd.CombinedOutput()
	after := time.Now()
	require.NoError(t, err, "%s", out)
	pid := cmd.Process.Pid

	var got []spanOf
	require.Eventually(t, func() bool {
		got = spansOfPid(tsink.AllTraces(), pid)
		return len(got) >= 1+len(sleeps)
	}, 10*time.Second, 20*time.Millisecond, "a process span and %d clock_nanosleep spans", len(sleeps))
	require.Len(t, got, 1+len(sleeps))

	var proc spanOf
	var children []spanOf
	for _, s := range got {
		if s.span.Name() == "ebpfx_spanwork" {
			proc = s
		} else {
			children = append(children, s)
		}
	}
	// The process span: span_name (the comm) names it, the config's service.
	require.Equal(t, "ebpfx_spanwork", proc.span.Name())
	assert.Equal(t, "ebpfx-spans", proc.service)
	assert.Equal(t, spans.TracingScope, proc.scope)
	assert.Equal(t, map[string]any{"pid": strconv.Itoa(pid), "ebpf_exporter.config": "ebpfx_spans"}, proc.attrsRaw)
	assert.True(t, proc.span.ParentSpanID().IsEmpty(), "a root span")
	assert.Equal(t, ptrace.SpanKindInternal, proc.span.Kind())
	// Monotonic clock converted to wall time: within the run (1 ms slack for the conversion).
	slack := time.Millisecond
	assert.False(t, proc.span.StartTimestamp().AsTime().Before(before.Add(-slack)), "starts after exec")
	assert.False(t, proc.span.EndTimestamp().AsTime().After(after.Add(slack)), "ends before wait returned")
	var total time.Duration
	for _, d := range sleeps {
		total += d
	}
	assert.GreaterOrEqual(t, dur(proc.span), total)

	// The child spans: the config's name, the default service, the syscall
	// decoded, the process span as parent in its trace, one per sleep.
	slices.SortFunc(children, func(a, b spanOf) int {
		return a.span.StartTimestamp().AsTime().Compare(b.span.StartTimestamp().AsTime())
	})
	require.Len(t, children, len(sleeps))
	for i, c := range children {
		assert.Equal(t, "syscall", c.span.Name())
		assert.Equal(t, "ebpf_exporter", c.service, "no service in the config, OTEL_SERVICE_NAME unset")
		assert.Equal(t, "clock_nanosleep_time64", c.attrsRaw["syscall"], "ebpf_exporter's name for clock_nanosleep (x86_64 230, arm64 115)")
		assert.Equal(t, "ebpfx_spans", c.attrsRaw["ebpf_exporter.config"])
		assert.Contains(t, c.attrsRaw, "tid")
		assert.Len(t, c.attrsRaw, 4)
		assert.Equal(t, proc.span.TraceID(), c.span.TraceID())
		assert.Equal(t, proc.span.SpanID(), c.span.ParentSpanID())
		assert.NotEqual(t, proc.span.SpanID(), c.span.SpanID())
		assert.GreaterOrEqual(t, dur(c.span), sleeps[i], "sleep %d", i)
		assert.Less(t, dur(c.span), sleeps[i]+200*time.Millisecond, "sleep %d", i)
		assert.False(t, c.span.StartTimestamp().AsTime().Before(proc.span.StartTimestamp().AsTime()))
		assert.False(t, c.span.EndTimestamp().AsTime().After(proc.span.EndTimestamp().AsTime()))
	}

	// The metrics pipeline runs from the same load: ebpfx_partial's tracepoint counts.
	require.Eventually(t, func() bool {
		syscall.Getppid()
		all := msink.AllMetrics()
		return len(all) > 0 && sumOf(all[len(all)-1], "ebpfx_partial_getppid_total") >= 1
	}, 10*time.Second, 20*time.Millisecond, "the metrics pipeline pulls ebpfx_partial")

	cfgAttr := func(c string) attribute.KeyValue { return attribute.String("config", c) }
	prog := func(c, p, state string) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(cfgAttr(c), attribute.String("program", p), attribute.String("state", state)), Value: 1}
	}
	kprobeState := "failed"
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe/type"); err == nil {
		kprobeState = "attached"
	}
	metadatatest.AssertEqualReceiverEbpfExporterPrograms(t, tel, []metricdata.DataPoint[int64]{
		prog("ebpfx_spans", "ebpfx_span_exec", "attached"),
		prog("ebpfx_spans", "ebpfx_span_exit", "attached"),
		prog("ebpfx_spans", "ebpfx_span_sys_enter", "attached"),
		prog("ebpfx_spans", "ebpfx_span_sys_exit", "attached"),
		prog("ebpfx_partial", "ebpfx_partial_getppid", "attached"),
		prog("ebpfx_partial", "ebpfx_partial_kprobe", kprobeState),
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverEbpfExporterConfigs(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("state", "loaded")), Value: 2},
		{Attributes: attribute.NewSet(attribute.String("state", "failed")), Value: 0},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverEbpfExporterSpanDecodeErrors(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(cfgAttr("ebpfx_spans")), Value: 0},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverEbpfExporterSpansDropped(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(cfgAttr("ebpfx_spans"), attribute.String("reason", "queue_full")), Value: 0},
		{Attributes: attribute.NewSet(cfgAttr("ebpfx_spans"), attribute.String("reason", "refused")), Value: 0},
	}, metricdatatest.IgnoreTimestamp())

	require.NoError(t, mr.Shutdown(context.Background()))
	require.NoError(t, tr.Shutdown(context.Background()))
	stopped = true
}
