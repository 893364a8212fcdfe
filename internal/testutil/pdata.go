// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
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
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				fn(lrs.At(k))
			}
		}
	}
}
