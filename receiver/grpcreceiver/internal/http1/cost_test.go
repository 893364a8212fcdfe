// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// costCase makes calls of about n bytes of one kind of input, fed to a
// server's tracker (ingress: requests, egress: responses).
type costCase struct {
	name string
	gen  func(n int) []step
}

func split(b string, k int) []step {
	var out []step
	for len(b) > 0 {
		m := min(k, len(b))
		out = append(out, cl(b[:m]))
		b = b[m:]
	}
	return out
}

var costCases = []costCase{
	{"slowloris_head", func(n int) []step { // one head, a byte a call
		return split("GET / HTTP/1.1\r\nX-A: "+strings.Repeat("a", n)+"\r\n\r\n", 1)
	}},
	{"long_line", func(n int) []step { // one field line over many calls
		return split("GET / HTTP/1.1\r\nX-A: "+strings.Repeat("a", n)+"\r\n\r\n", 7)
	}},
	{"header_lines", func(n int) []step {
		var b strings.Builder
		b.WriteString("GET / HTTP/1.1\r\n")
		for i := 0; b.Len() < n; i++ {
			b.WriteString("X-" + strconv.Itoa(i) + ": v\r\n")
		}
		return split(b.String()+"\r\n", 64)
	}},
	{"tiny_chunks", func(n int) []step {
		out := []step{cl("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")}
		for got := 0; got < n; got += 6 {
			out = append(out, cl("1\r\nz\r\n"))
		}
		return append(out, cl("0\r\n\r\n"))
	}},
	{"pipelined_unanswered", func(n int) []step {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString("GET /p HTTP/1.1\r\nHost: h\r\n\r\n")
		}
		return split(b.String(), 1024)
	}},
	{"keepalive_pairs", func(n int) []step {
		var out []step
		for got := 0; got < n; got += 70 {
			out = append(out, cl("GET /k HTTP/1.1\r\nHost: h\r\n\r\n"), sv("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
		return out
	}},
}

// TestCostLinear: the work per byte of every kind of input does not grow
// with its length (no rescans of a head, a line or a queue): 8 times the
// bytes cost at most about 8 times the time (a rescan would cost 64
// times). Each the fastest of rounds, the least disturbed by the machine's
// other work.
func TestCostLinear(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	const (
		small    = 8 << 10
		rounds   = 15
		maxRatio = 3.0
	)
	cfg := Config{MaxHeaderBytes: 1 << 20, MemoryBudget: 64 << 20}
	var lines []string
	for _, cs := range costCases {
		per := map[int][]float64{}
		for r := range rounds {
			for _, n := range []int{small, 8 * small} {
				steps := cs.gen(n)
				var now uint64
				tr := NewTracker(cfg, func(*h2.Call) {}, nil)
				cp := newCapture(t, tr, h2.ConnID(1+r), &now, h2.RoleServer)
				bytes := 0
				for _, s := range steps {
					bytes += len(s.b)
				}
				ch := h2.Chunk{Conn: cp.id, CallStart: true}
				runtime.GC()
				start := time.Now()
				for _, s := range steps {
					ch.Dir = h2.Ingress
					if !s.client {
						ch.Dir = h2.Egress
					}
					now += 10
					ch.Offset, ch.Data, ch.TimeNs = cp.off[ch.Dir], s.b, now
					cp.off[ch.Dir] += uint64(len(s.b))
					tr.Chunk(&ch)
				}
				per[n] = append(per[n], float64(time.Since(start).Nanoseconds())/float64(bytes))
				if st := tr.Stats(); st.SyncLostTotal() != 0 || st.BytesParsed != uint64(bytes) {
					t.Fatalf("%s: %+v", cs.name, st)
				}
			}
		}
		for _, v := range per {
			sort.Float64s(v)
		}
		lo, hi := per[small][0], per[8*small][0]
		lines = append(lines, fmt.Sprintf("%-22s %7.2f ns/byte at %d bytes, %7.2f at %d", cs.name, lo, small, hi, 8*small))
		if hi > maxRatio*lo {
			t.Errorf("%s: %.2f ns/byte at %d bytes, %.2f at %d: not linear", cs.name, lo, small, hi, 8*small)
		}
	}
	t.Logf("per byte (fastest of %d rounds):\n%s", rounds, strings.Join(lines, "\n"))
}
