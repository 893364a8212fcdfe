// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseCapture parses the captured output of real bpftrace runs
// (testdata/capture/*.jsonl: printf, join and time lines, maps, histograms,
// lost events, errors), line by line, as the runner does: per line. "text"
// is the printf, join, time... lines alone, "maps" the map and histogram
// lines alone.
func BenchmarkParseCapture(b *testing.B) {
	paths, err := filepath.Glob(filepath.Join("testdata", "capture", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		b.Fatal("no captures", err)
	}
	var lines [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				lines = append(lines, l)
			}
		}
	}
	var text, maps [][]byte
	for _, l := range lines {
		rec, err := parseRecord(l)
		if err != nil {
			b.Fatalf("%s: %v", l, err)
		}
		switch rec.kind {
		case kindText:
			text = append(text, l)
		case kindMap:
			maps = append(maps, l)
		}
	}
	b.Run("all", func(b *testing.B) { benchParse(b, lines) })
	b.Run("text", func(b *testing.B) { benchParse(b, text) })
	b.Run("maps", func(b *testing.B) { benchParse(b, maps) })
}

func benchParse(b *testing.B, lines [][]byte) {
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = parseRecord(lines[i])
		if i++; i == len(lines) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
