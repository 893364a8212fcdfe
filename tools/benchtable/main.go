// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Command benchtable reads `go test -bench` output on stdin and prints one
// Markdown table: per benchmark, the median over its -count runs of ns/op,
// of its rate (the first metric in .../s other than MB/s: events/s,
// records/s, series/s, lines/s), allocs/op and B/op, and the ratio of the
// ring's read rate (BenchmarkReadOneSlot, same input) to that rate: how many
// ring slots are read in the time one unit is processed. The goal
// for BenchmarkRingToLogs is a ratio of 15 or less.
//
//	go test -run '^$' -bench . -benchmem -count 5 ./... | go run ./tools/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ringBench is the benchmark the ratio column divides by.
const ringBench = "BenchmarkReadOneSlot"

type result struct {
	name            string
	unit            string // of rates
	ns, rate, a, by []float64
}

func main() {
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark results on stdin")
		os.Exit(1)
	}
	write(os.Stdout, rows)
}

// parse reads benchmark result lines, e.g.
//
//	BenchmarkRingToLogs-2   1000000   1061 ns/op   942858 events/s   859 B/op   17 allocs/op
func parse(r io.Reader) ([]*result, error) {
	var order []*result
	byName := map[string]*result{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line (e.g. a log line starting with the name)
		}
		name := trimProcs(f[0])
		res := byName[name]
		if res == nil {
			res = &result{name: name}
			byName[name] = res
			order = append(order, res)
		}
		rateSeen := false
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", name, f[i])
			}
			switch unit := f[i+1]; {
			case unit == "ns/op":
				res.ns = append(res.ns, v)
			case unit == "allocs/op":
				res.a = append(res.a, v)
			case unit == "B/op":
				res.by = append(res.by, v)
			case strings.HasSuffix(unit, "/s") && unit != "MB/s" && !rateSeen:
				rateSeen = true
				res.unit = unit
				res.rate = append(res.rate, v)
			}
		}
	}
	return order, sc.Err()
}

// trimProcs drops the -GOMAXPROCS suffix: BenchmarkX/sub-2 is BenchmarkX/sub.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

func write(w io.Writer, rows []*result) {
	var ringRate float64
	for _, r := range rows {
		if r.name == ringBench {
			ringRate, _ = median(r.rate)
		}
	}
	fmt.Fprintln(w, "| benchmark | ns/op | rate | allocs/op | B/op | ring read ÷ rate | runs |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		cell := func(v []float64, format func(float64) string) string {
			m, ok := median(v)
			if !ok {
				return "—"
			}
			return format(m)
		}
		rate := cell(r.rate, func(m float64) string { return si(m) + " " + r.unit })
		ratio := "—"
		if m, ok := median(r.rate); ok && ringRate > 0 && m > 0 {
			ratio = fmt.Sprintf("%.1f", ringRate/m)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d |\n", strings.TrimPrefix(r.name, "Benchmark"),
			cell(r.ns, num), rate, cell(r.a, num), cell(r.by, num), ratio, len(r.ns))
	}
}

// num prints v with three significant digits at most after the point.
func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// si prints a rate with a k, M or G multiplier.
func si(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + " G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
