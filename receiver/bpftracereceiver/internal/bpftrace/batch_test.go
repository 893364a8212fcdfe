// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestBatcher(t *testing.T) {
	out := &sink{}
	b := newBatcher(out, time.Hour, 0) // no timed flush in this test
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
	b = newBatcher(out, 20*time.Millisecond, 0)
	b.start()
	addLogs(1)
	eventually(t, 2*time.Second, func() bool { return len(out.records()) == 1 }, "flushed on the interval")
	b.shutdown()
}

// stalledOutput blocks every call until release is closed: an exporter that
// is down behind a blocking queue.
type stalledOutput struct {
	release chan struct{}
	mu      sync.Mutex
	records int
}

func (o *stalledOutput) ConsumeLogs(l plog.Logs) {
	<-o.release
	o.mu.Lock()
	o.records += l.LogRecordCount()
	o.mu.Unlock()
}

func (o *stalledOutput) ConsumeMetrics(pmetric.Metrics) { <-o.release }

// The budget: producers wait while what is batched and in flight spends
// it, and the bytes come back once the Output has taken the batch.
func TestBatcherBudget(t *testing.T) {
	out := &stalledOutput{release: make(chan struct{})}
	b := newBatcher(out, time.Hour, 4096)
	body := strings.Repeat("x", 2000)
	add := func() {
		b.addLogs(func(lrs plog.LogRecordSlice) int {
			lrs.AppendEmpty().Body().SetStr(body)
			return 1
		})
	}
	add()
	add()
	used, _ := b.bytes()
	assert.Equal(t, int64(2*(2000+recordOverhead)), used)
	assert.False(t, b.tryCharge(1), "a reader gets nothing while it is spent")

	third := make(chan struct{})
	go func() {
		add()
		close(third)
	}()
	b.start()
	b.kickFlush() // the batch goes to the stalled Output: still charged
	select {
	case <-third:
		t.Fatal("a producer went past the spent budget")
	case <-time.After(200 * time.Millisecond):
	}
	used, _ = b.bytes()
	assert.Equal(t, int64(2*(2000+recordOverhead)), used, "in flight is charged")
	close(out.release)
	select {
	case <-third:
	case <-time.After(5 * time.Second):
		t.Fatal("the producer never got room")
	}
	b.shutdown()
	used, peak := b.bytes()
	assert.Zero(t, used, "everything given back")
	assert.Equal(t, int64(2*(2000+recordOverhead)), peak)
	assert.Equal(t, 3, out.records)
}
