// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A script prints what traced processes choose (execsnoop prints their
// argv): here 30 lines of 1 MiB (or 3000 of 6000 bytes), then 5000 short
// ones, while the next consumer blocks. What the receiver holds must stay
// within its budget (on main, without one, the heap grew by 103 MiB with
// 100 such lines, and 10000 lines of 16 MiB could be held), lines are cut
// at max_line_bytes and counted, and once the pipeline takes again every
// line arrives.
func TestStalledPipelineBounded(t *testing.T) {
	t.Run("huge lines", func(t *testing.T) { testStalled(t, 1<<20, 30) })
	// Lines within max_line_bytes, more of them than the budget holds:
	// the budget binds, not the count of records.
	t.Run("long lines", func(t *testing.T) { testStalled(t, 6000, 3000) })
}

func testStalled(t *testing.T, lineBytes, lines int) {
	t.Setenv("FAKE_HUGE_BYTES", strconv.Itoa(lineBytes))
	t.Setenv("FAKE_HUGE_LINES", strconv.Itoa(lines))
	const short = 5000
	t.Setenv("FAKE_MANY_LINES", strconv.Itoa(short))
	e := newFakeEnv(t)
	out := &stalledOutput{release: make(chan struct{})}
	const budget, line = 4 << 20, 8 << 10
	cfg := Config{Binary: e.bin, Scripts: []ScriptConfig{{Name: "huge", Program: "// fake: huge\n"}},
		MaxBufferedBytes: budget, MaxLineBytes: line}
	before := heapInUse()
	r, err := New(cfg, zap.NewNop(), out)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	released := false
	release := func() {
		if !released {
			released = true
			close(out.release)
		}
	}
	t.Cleanup(func() {
		release()
		_ = r.Shutdown(context.Background())
	})

	// The fake writes all of it unless the readers push back; either way,
	// give it time to fill whatever the receiver buffers.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(e.dir, "huge.done")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap grown by %.1f MiB while the pipeline stalled", float64(grown)/(1<<20))
	assert.Less(t, grown, int64(budget+8<<20), "heap growth while stalled: the budget and the garbage of reading")
	now, peak := r.BufferedBytes()
	t.Logf("budget %d: %d bytes charged, at most %d", budget, now, peak)
	assert.LessOrEqual(t, peak, int64(budget+2*(line+recordOverhead)), "what is charged stays within the budget and one line")
	assert.Positive(t, now)
	c := r.Counters()["huge"]
	if lineBytes > line {
		assert.Positive(t, c.Cut[CutLineTooLong], "lines are cut at max_line_bytes")
	} else {
		assert.Greater(t, peak, int64(budget-64<<10-line), "the budget binds (within the room a reader waits for)")
	}

	release()
	assert.Eventually(t, func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.records >= lines+short
	}, 90*time.Second, 50*time.Millisecond, "every line arrives once the pipeline takes again")
	c = r.Counters()["huge"]
	t.Logf("cut: %v, parse errors %d", c.Cut, c.ParseErrors)
	assert.LessOrEqual(t, c.ParseErrors, c.Cut[CutBudget]+c.Cut[CutRecordTooLong], "only a cut record is no record")
	if lineBytes > line {
		assert.Equal(t, uint64(lines), c.Cut[CutLineTooLong]+c.Cut[CutBudget], "each huge line cut, by one reason")
	}
}
