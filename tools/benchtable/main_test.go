// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/otelcol-seq/otelcol-seq/internal/ring
BenchmarkReadOneSlot-2   	59798908	        20.00 ns/op	4608.36 MB/s	  50000000 records/s	       0 B/op	       0 allocs/op
BenchmarkReadOneSlot-2   	59798908	        25.00 ns/op	4608.36 MB/s	  40000000 records/s	       0 B/op	       0 allocs/op
BenchmarkReadOneSlot-2   	59798908	        19.00 ns/op	4608.36 MB/s	  52000000 records/s	       0 B/op	       0 allocs/op
PASS
BenchmarkRingToLogs-2   	 1174653	      1000 ns/op	    1000000 events/s	     859 B/op	      17 allocs/op
BenchmarkConfigMetrics/counters-2         	    1045	   1126781 ns/op	        11.05 allocs/series	      1100 ns/series	    908783 series/s	  653831 B/op	   11318 allocs/op
`

func TestTable(t *testing.T) {
	rows, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	write(&out, rows)
	got := out.String()
	for _, want := range []string{
		"| ReadOneSlot | 20.0 | 50.00 M records/s | 0.00 | 0.00 | 1.0 | 3 |",
		"| RingToLogs | 1000 | 1.00 M events/s | 17.0 | 859 | 50.0 | 1 |",
		"| ConfigMetrics/counters | 1126781 | 908.8 k series/s | 11318 | 653831 | 55.0 | 1 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
