// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// memSource is a ring in memory, read as the sequencer's source is.
type memSource struct{ *ring.Reader }

func (memSource) Wait(time.Duration) (bool, error) { return false, nil }
func (memSource) Interrupt()                       {}

// BenchmarkRingToLogs is the receiver's userspace path, no kernel: records
// written into a ring by the Go model of the producers (not timed), then read
// in ticket order, decoded, applied to the process model and mapped to one
// plog.Logs per batch handed to a consumer — a fork, an exec with three
// arguments and an exit per process.
func BenchmarkRingToLogs(b *testing.B) {
	ctl, slots := ring.NewMemory(1 << 16)
	p, err := ring.NewProducer(ctl, slots)
	if err != nil {
		b.Fatal(err)
	}
	rd, err := ring.NewReader(ctl, slots, ring.StartAt(0))
	if err != nil {
		b.Fatal(err)
	}
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), createDefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	r.logs = consumertest.NewNop()
	r.rd = memSource{rd}
	r.model = process.New(process.Config{BootID: "bench", MaxProcesses: 65536})
	if r.tb, err = metadata.NewTelemetryBuilder(componenttest.NewNopTelemetrySettings()); err != nil {
		b.Fatal(err)
	}
	const batch = 1023 // a multiple of 3: whole processes per batch
	var recs [][]byte
	for i := range uint32(batch / 3) {
		pid := 1000 + i
		base := event.Event{PID: pid, TID: pid, PPID: 1, StartNs: uint64(pid) * 1000, ParentStartNs: 1, Comm: "sh", UID: 1000, GID: 1000}
		fork, exec, exit := base, base, base
		fork.Type, fork.KTime = event.Fork, uint64(pid)*1000
		exec.Type, exec.KTime, exec.Comm, exec.Filename, exec.Args = event.Exec, fork.KTime+10, "ls", "/usr/bin/ls", []string{"ls", "-l", "/tmp"}
		exit.Type, exit.KTime, exit.Comm = event.Exit, fork.KTime+20, "ls"
		recs = append(recs, event.Encode(&fork), event.Encode(&exec), event.Encode(&exit))
	}
	r.cfg.MaxBatch = batch
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		b.StopTimer()
		for _, rec := range recs {
			p.Write(rec)
		}
		b.StartTimer()
		n, _ := r.read(false)
		r.flush(ctx)
		if n != batch {
			b.Fatalf("read %d records, want %d", n, batch)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
