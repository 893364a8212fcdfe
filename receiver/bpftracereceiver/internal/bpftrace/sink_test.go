// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"sync"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// sink is an Output that keeps everything.
type sink struct {
	mu          sync.Mutex
	logs        []plog.Logs
	metrics     []pmetric.Metrics
	logCalls    int
	metricCalls int
}

func (s *sink) ConsumeLogs(l plog.Logs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, l)
	s.logCalls++
}

func (s *sink) ConsumeMetrics(m pmetric.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metrics = append(s.metrics, m)
	s.metricCalls++
}

type logRec struct {
	body      string
	severity  plog.SeverityNumber
	event     string
	attrs     map[string]any
	timestamp pcommon.Timestamp
}

// records returns every log record received, in order.
func (s *sink) records() []logRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRec
	for _, l := range s.logs {
		for i := 0; i < l.ResourceLogs().Len(); i++ {
			sls := l.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					out = append(out, logRec{
						body:      lr.Body().AsString(),
						severity:  lr.SeverityNumber(),
						event:     lr.EventName(),
						attrs:     lr.Attributes().AsRaw(),
						timestamp: lr.Timestamp(),
					})
				}
			}
		}
	}
	return out
}

// findRecord returns the first record for which match is true.
func (s *sink) findRecord(match func(logRec) bool) (logRec, bool) {
	for _, r := range s.records() {
		if match(r) {
			return r, true
		}
	}
	return logRec{}, false
}

// metricsNamed returns every metric received with that name, in order.
func (s *sink) metricsNamed(name string) []pmetric.Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pmetric.Metric
	for _, md := range s.metrics {
		rms := md.ResourceMetrics()
		for i := 0; i < rms.Len(); i++ {
			sms := rms.At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					if ms.At(k).Name() == name {
						out = append(out, ms.At(k))
					}
				}
			}
		}
	}
	return out
}

// eventually waits for cond, failing the test after timeout (multiplied by
// $OTELCOL_SEQ_TEST_TIME_SCALE, which test/kernels sets in its slow guests).
func eventually(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, testutil.Scaled(timeout), 20*time.Millisecond, append([]any{msg}, args...)...)
}
