// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// memReceiver returns a receiver reading a ring in memory of slots slots
// (no kernel, not started), its logs going to sink, and the ring's producer.
func memReceiver(t testing.TB, slots int, cfg *Config, sink *consumertest.LogsSink) (*seqReceiver, *ring.Producer) {
	t.Helper()
	ctl, mem := ring.NewMemory(slots)
	p, err := ring.NewProducer(ctl, mem)
	require.NoError(t, err)
	rd, err := ring.NewReader(ctl, mem, ring.StartAt(0))
	require.NoError(t, err)
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	r.logs = sink
	r.rd = memSource{rd}
	r.model = process.New(process.Config{BootID: "test", MaxProcesses: 1 << 16, ThreadEvents: cfg.ThreadEvents})
	r.model.EndSnapshot()
	r.tb, err = metadata.NewTelemetryBuilder(componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	return r, p
}

// mixedEvents is n processes' worth of every kind of record: forks, execs
// of one slot and of several, exits by code and by signal, threads.
func mixedEvents(n int) []event.Event {
	var evs []event.Event
	for i := range uint32(n) {
		pid := 2000 + i
		base := event.Event{PID: pid, TID: pid, PPID: 1 + i%3, StartNs: uint64(pid) * 1000, ParentStartNs: 7, Comm: "sh", UID: i % 2, CPU: i % 4}
		fork, exec, thread, exit := base, base, base, base
		fork.Type, fork.KTime = event.Fork, uint64(pid)*1000
		exec.Type, exec.KTime, exec.Comm, exec.Filename = event.Exec, fork.KTime+10, "cmd"+strconv.Itoa(int(i%5)), "/usr/bin/x"
		exec.Args = []string{"x", strconv.Itoa(int(i))}
		if i%7 == 0 {
			exec.Args = append(exec.Args, string(make([]byte, 300))) // several slots
		}
		thread.Type, thread.KTime, thread.TID, thread.StartNs = event.ThreadStart, fork.KTime+15, pid+1, fork.KTime+15
		exit.Type, exit.KTime, exit.ExitStatus = event.Exit, fork.KTime+20, (i%3)<<8|(i%2)*9
		evs = append(evs, fork, exec, thread, exit)
	}
	return evs
}

// The records built by worker goroutines, chunk by chunk, are the records
// the reader builds alone, in the same (ticket) order: gaps, multi-slot
// records and skipped thread events included.
func TestParallelMappingSameRecords(t *testing.T) {
	evs := mixedEvents(1500) // 6000 records (more slots) into 4096 slots: a gap first
	// The same wall clock for every run: read re-syncs BootOffset when the
	// two clocks drift apart by a millisecond, which a slow run may see.
	off := bootclock.Offset(time.Now())
	wall := func(bootNs uint64) time.Time { return time.Unix(0, int64(bootNs)+off) }
	run := func(workers, maxBatch int, threads bool) []plog.Logs {
		sink := &consumertest.LogsSink{}
		cfg := createDefaultConfig()
		cfg.MaxBatch, cfg.ThreadEvents = maxBatch, threads
		r, p := memReceiver(t, 4096, cfg, sink)
		r.mapper.workers, r.mapper.BootToWall = workers, wall
		for i := range evs {
			p.Write(event.Encode(&evs[i]))
		}
		for {
			n, _ := r.read(false)
			r.flush(context.Background())
			if n == 0 {
				break
			}
		}
		all := sink.AllLogs()
		for _, ld := range all { // observed at read time: not comparable
			recs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := range recs.Len() {
				recs.At(i).SetObservedTimestamp(0)
			}
		}
		return all
	}
	for _, threads := range []bool{false, true} {
		want := run(0, 4096, threads)
		require.NotEmpty(t, want)
		assert.Equal(t, "seq.lost", want[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).EventName())
		for _, workers := range []int{1, 3} {
			for _, maxBatch := range []int{4096, 1000, 100} {
				got := run(workers, maxBatch, threads)
				require.Equal(t, records(t, want), records(t, got), "workers %d, max_batch %d, threads %v", workers, maxBatch, threads)
			}
		}
	}
}

// records is every log record of all, in order, as JSON.
func records(t *testing.T, all []plog.Logs) []string {
	var out []string
	m := &plog.JSONMarshaler{}
	for _, ld := range all {
		recs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range recs.Len() {
			one := plog.NewLogs()
			recs.At(i).CopyTo(one.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
			b, err := m.MarshalLogs(one)
			require.NoError(t, err)
			out = append(out, string(b))
		}
	}
	return out
}
