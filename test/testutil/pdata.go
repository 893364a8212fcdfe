// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
)

// LoadConfig reads the section of testdata/config.yaml named by the
// factory's type and name (name "" for the bare type) into a default config.
func LoadConfig(t testing.TB, f receiver.Factory, name string) component.Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(f.Type(), name).String())
	require.NoError(t, err)
	cfg := f.CreateDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

// EachMetric calls fn for every metric of md.
func EachMetric(md pmetric.Metrics, fn func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				fn(ms.At(k))
			}
		}
	}
}

// EachLogRecord calls fn for every log record of ld.
func EachLogRecord(ld plog.Logs, fn func(plog.LogRecord)) {
	EachResourceLogRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) { fn(lr) })
}

// EachResourceLogRecord calls fn for every log record of ld, with its resource.
func EachResourceLogRecord(ld plog.Logs, fn func(pcommon.Resource, plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				fn(rls.At(i).Resource(), lrs.At(k))
			}
		}
	}
}

// EachSpan calls fn for every span of td, with its resource.
func EachSpan(td ptrace.Traces, fn func(pcommon.Resource, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				fn(rss.At(i).Resource(), ss.At(k))
			}
		}
	}
}
