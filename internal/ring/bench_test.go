// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"testing"
)

// benchRead pre-fills the ring with a Producer (timer stopped), reads it back
// (timer running), and so on until b.N records are read: ns/op is per record.
func benchRead(b *testing.B, size int) {
	const slots = 1 << 16
	_, _, p, r := newRing(b, slots)
	rec := make([]byte, size)
	for i := range rec {
		rec[i] = byte(i)
	}
	perFill := slots / SlotsFor(size)
	var sink int
	fn := func(it *Item) { sink += len(it.Data) }
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(perFill, b.N-done)
		b.StopTimer()
		for range n {
			p.Write(rec)
		}
		b.StartTimer()
		if got, st := r.Read(n, fn); got != n || st != Full {
			b.Fatalf("read %d of %d, %v", got, n, st)
		}
		done += n
	}
	b.StopTimer()
	if s := r.Stats(); s.Lost != 0 || sink != b.N*size {
		b.Fatalf("stats %+v", s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReadOneSlot: 88-byte records (the fixed struct seq_event), one slot each.
func BenchmarkReadOneSlot(b *testing.B) { benchRead(b, 88) }

// BenchmarkReadMaxRecord: 4440-byte records (event, 256-byte filename,
// 4096 bytes of args), 40 slots each.
func BenchmarkReadMaxRecord(b *testing.B) { benchRead(b, 88+256+4096) }

// BenchmarkProducerWrite: one goroutine writing 88-byte records (no reader:
// the ring laps itself).
func BenchmarkProducerWrite(b *testing.B) {
	_, _, p, _ := newRing(b, 1<<16)
	rec := make([]byte, 88)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		p.Write(rec)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkProducerWriteParallel: GOMAXPROCS goroutines contending on head.
func BenchmarkProducerWriteParallel(b *testing.B) {
	_, _, p, _ := newRing(b, 1<<16)
	b.SetBytes(88)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := make([]byte, 88)
		for pb.Next() {
			p.Write(rec)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
