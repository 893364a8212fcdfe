// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporterreceiver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/ebpfexporter"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/metadatatest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// blockedTraces is a traces pipeline that takes nothing until released.
type blockedTraces struct {
	consumertest.TracesSink
	release chan struct{}
}

func (b *blockedTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.TracesSink.ConsumeTraces(ctx, td)
}

func (*blockedTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// A traced process makes thousands of syscall spans while the traces
// pipeline takes nothing: the ring buffer keeps being read, at most
// max_queued_spans spans wait, the Go heap does not grow with the
// records, and every record read is either handed over or counted as
// dropped (queue_full) once the pipeline takes spans again.
func TestSpanQueueBoundedWhilePipelineBlocks(t *testing.T) {
	testutil.RequireRoot(t)
	const maxQueued, sleeps = 100, 5000
	cfg := createDefaultConfig()
	cfg.ConfigDir = testutil.ArchDir("../../testdata/ebpf_exporter")
	cfg.Names = []string{"ebpfx_spans"}
	cfg.MaxQueuedSpans = maxQueued
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	next := &blockedTraces{release: make(chan struct{})}
	tr, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(tel), cfg, next)
	require.NoError(t, err)
	require.NoError(t, tr.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	shared, err := sharedReceiver(metadatatest.NewSettings(tel), cfg)
	require.NoError(t, err)
	ee := shared.C.ee

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapAlloc

	self, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "ebpfx_spanwork")
	require.NoError(t, os.Symlink(self, link))
	cmd := exec.Command(link, "-test.run=^TestSpanWorkloadHelper$")
	cmd.Env = append(os.Environ(), spanWorkEnv+"="+strings.Repeat("1ns,", sleeps-1)+"1ns")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var st ebpfexporter.Stats
	require.Eventually(t, func() bool {
		st = ee.Stats()
		require.LessOrEqual(t, st.QueuedSpans, int64(maxQueued))
		return st.Spans["ebpfx_spans"].Records >= sleeps
	}, 20*time.Second, 10*time.Millisecond, "the ring buffer is read while the pipeline blocks")
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("records %d, queued %d, heap %+d bytes", st.Spans["ebpfx_spans"].Records, st.QueuedSpans, int64(ms.HeapAlloc)-int64(heapBefore))
	assert.Less(t, int64(ms.HeapAlloc)-int64(heapBefore), int64(8<<20), "the heap does not hold the records")

	close(next.release)
	require.Eventually(t, func() bool { return ee.Stats().QueuedSpans == 0 }, 10*time.Second, 10*time.Millisecond)
	st = ee.Stats()
	sp := st.Spans["ebpfx_spans"]
	full := st.Dropped[budget.DropKey{Config: "ebpfx_spans", Reason: budget.DropQueueFull}]
	t.Logf("records %d = spans %d + dropped %d (queue_full %d) + decode errors %d", sp.Records, sp.Spans, sp.Dropped, full, sp.DecodeErrors)
	assert.Positive(t, full, "spans_dropped{reason=queue_full}")
	assert.LessOrEqual(t, sp.Spans, uint64(maxQueued)+2, "only what was queued reached the pipeline")
	assert.Equal(t, sp.Records, sp.Spans+sp.Dropped+sp.DecodeErrors, "every record read is accounted for")
	assert.Equal(t, int(sp.Spans), next.SpanCount())
}
