// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestBatcher(t *testing.T) {
	out := &sink{}
	b := newBatcher(out, time.Hour) // no timed flush in this test
	b.start()
	addLogs := func(n int) {
		b.addLogs(func(lrs plog.LogRecordSlice) int {
			for i := 0; i < n; i++ {
				lrs.AppendEmpty().Body().SetStr("x")
			}
			return n
		})
	}
	addLogs(5)
	b.addMetrics(func(ms pmetric.MetricSlice) int {
		ms.AppendEmpty().SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
		return 1
	})
	time.Sleep(50 * time.Millisecond)
	assert.Empty(t, out.records(), "below the size limit: waits for the interval")

	addLogs(flushRecords - 5)
	eventually(t, 2*time.Second, func() bool { return len(out.records()) == flushRecords }, "flushed at the size limit")
	addLogs(3)
	b.shutdown()
	assert.Len(t, out.records(), flushRecords+3, "shutdown flushes the rest")
	assert.Equal(t, 2, out.logCalls)
	assert.Equal(t, 1, out.metricCalls)

	out = &sink{}
	b = newBatcher(out, 20*time.Millisecond)
	b.start()
	addLogs(1)
	eventually(t, 2*time.Second, func() bool { return len(out.records()) == 1 }, "flushed on the interval")
	b.shutdown()
}
