// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Command grpccurve reads the grpc receiver's fixed-rate curve that
// scripts/bench-grpc.sh writes (curve.tsv, and scripts/bench-http1.sh its
// curve-SIZE.tsv in the same columns: round, rate, row, rps, p50_ms,
// p99_ms, cpu_us_per_call, bpf_ns_per_rpc; rate 0 is "as fast as ghz
// goes"), prints its Markdown table, the median of each point over the
// rounds, and draws it as a PNG with gonum/plot (the plotting library of
// make bench): RPS, p99 latency, and the receiver's collector CPU per call
// and BPF time per RPC, each against the rate asked, baseline beside
// receiver.
//
//	go run ./tools/grpccurve -in bench-results/grpc/curve.tsv -png docs/bench-grpc.png
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// point is the median over the rounds of one (rate, row).
type point struct {
	rate, row string
	rounds    int
	rps       float64
	p99       float64
	cpuUS     float64 // NaN for the baseline
	bpfNS     float64 // NaN for the baseline
}

// curve is the points in the order of the rates (ascending, max last) and
// the rows baseline then receiver.
type curve struct {
	rates  []string
	points map[[2]string]point
}

func main() {
	in := flag.String("in", "bench-results/grpc/curve.tsv", "the curve's TSV (scripts/bench-grpc.sh)")
	png := flag.String("png", "", "write the plot here (empty: none)")
	xlabel := flag.String("xlabel", "RPS asked (ghz -r)", "the plot's x axis (scripts/bench-http1.sh: hey's rate)")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fail(err)
	}
	c, err := read(f)
	_ = f.Close()
	if err != nil {
		fail(fmt.Errorf("%s: %w", *in, err))
	}
	fmt.Print(c.markdown())
	if *png != "" {
		out, err := os.Create(*png)
		if err != nil {
			fail(err)
		}
		if err := c.plot(out, *xlabel); err != nil {
			fail(err)
		}
		if err := out.Close(); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "grpccurve:", err)
	os.Exit(1)
}

// read parses the TSV (a header line naming the columns) into medians.
func read(r io.Reader) (*curve, error) {
	cr := csv.NewReader(r)
	cr.Comma = '\t'
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 2 {
		return nil, errors.New("no rows")
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for _, need := range []string{"rate", "row", "rps", "p99_ms", "cpu_us_per_call", "bpf_ns_per_rpc"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no column %q", need)
		}
	}
	vals := map[[2]string]map[string][]float64{}
	var rates []string
	for _, rec := range recs[1:] {
		k := [2]string{rec[col["rate"]], rec[col["row"]]}
		if k[1] != "baseline" && k[1] != "receiver" {
			return nil, fmt.Errorf("row %q: want baseline or receiver", k[1])
		}
		if _, err := strconv.Atoi(k[0]); err != nil {
			return nil, fmt.Errorf("rate %q: %w", k[0], err)
		}
		if !slices.Contains(rates, k[0]) {
			rates = append(rates, k[0])
		}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		for _, name := range []string{"rps", "p99_ms", "cpu_us_per_call", "bpf_ns_per_rpc"} {
			s := rec[col[name]]
			if s == "-" || s == "" {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", name, s, err)
			}
			vals[k][name] = append(vals[k][name], v)
		}
	}
	// Ascending, with 0 (as fast as it goes) last.
	sort.Slice(rates, func(i, j int) bool {
		a, _ := strconv.Atoi(rates[i])
		b, _ := strconv.Atoi(rates[j])
		if a == 0 || b == 0 {
			return b == 0 && a != 0
		}
		return a < b
	})
	c := &curve{rates: rates, points: map[[2]string]point{}}
	for k, v := range vals {
		c.points[k] = point{rate: k[0], row: k[1], rounds: len(v["rps"]), rps: median(v["rps"]), p99: median(v["p99_ms"]),
			cpuUS: median(v["cpu_us_per_call"]), bpfNS: median(v["bpf_ns_per_rpc"])}
	}
	for _, rate := range rates {
		for _, row := range []string{"baseline", "receiver"} {
			if _, ok := c.points[[2]string{rate, row}]; !ok {
				return nil, fmt.Errorf("rate %s has no %s row", rate, row)
			}
		}
	}
	return c, nil
}

// median of vs; NaN for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return nan()
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func nan() float64 { return math.NaN() }

// label is a rate as the table and the plot name it.
func label(rate string) string {
	if rate == "0" {
		return "max"
	}
	return rate
}

func (c *curve) markdown() string {
	s := "| rate (RPS asked) | rounds | baseline RPS | receiver RPS | RPS change | baseline p99 ms | receiver p99 ms | collector µs CPU / call | BPF ns / RPC (both ends) |\n"
	s += "|---|---|---|---|---|---|---|---|---|\n"
	for _, rate := range c.rates {
		b, r := c.points[[2]string{rate, "baseline"}], c.points[[2]string{rate, "receiver"}]
		s += fmt.Sprintf("| %s | %d | %.0f | %.0f | %+.1f %% | %.2f | %.2f | %.1f | %.0f |\n",
			label(rate), min(b.rounds, r.rounds), b.rps, r.rps, (r.rps/b.rps-1)*100, b.p99, r.p99, r.cpuUS, r.bpfNS)
	}
	return s
}

// plot draws three panels side by side against the rate asked (nominal:
// 2000, 5000, ..., max): RPS and p99 with a line per row, and the
// receiver's costs (collector µs per call, BPF µs per RPC); xlabel names
// the x axis.
func (c *curve) plot(w io.Writer, xlabel string) error {
	names := make([]string, len(c.rates))
	for i, r := range c.rates {
		names[i] = label(r)
	}
	series := func(row string, f func(point) float64) plotter.XYs {
		xy := make(plotter.XYs, len(c.rates))
		for i, rate := range c.rates {
			xy[i] = plotter.XY{X: float64(i), Y: f(c.points[[2]string{rate, row}])}
		}
		return xy
	}
	panel := func(title, y string, lines ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xlabel
		p.Y.Label.Text = y
		p.Y.Min = 0
		p.NominalX(names...)
		p.Legend.Top = true
		p.Legend.Left = true
		if err := addLinePoints(p, lines...); err != nil {
			return nil, err
		}
		return p, nil
	}
	rps, err := panel("RPS achieved", "RPS",
		"baseline", series("baseline", func(p point) float64 { return p.rps }),
		"receiver", series("receiver", func(p point) float64 { return p.rps }))
	if err != nil {
		return err
	}
	p99, err := panel("p99 latency", "ms",
		"baseline", series("baseline", func(p point) float64 { return p.p99 }),
		"receiver", series("receiver", func(p point) float64 { return p.p99 }))
	if err != nil {
		return err
	}
	cost, err := panel("The receiver's cost", "µs",
		"collector CPU per call", series("receiver", func(p point) float64 { return p.cpuUS }),
		"BPF per RPC (both ends)", series("receiver", func(p point) float64 { return p.bpfNS / 1000 }))
	if err != nil {
		return err
	}
	cost.Legend.Left = false // the costs fall with the rate: the top right is free
	img := vgimg.New(15*vg.Inch, 5*vg.Inch)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadTop: vg.Millimeter, PadBottom: vg.Millimeter,
		PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter, PadX: 8 * vg.Millimeter}
	panels := [][]*plot.Plot{{rps, p99, cost}}
	for j, cell := range plot.Align(panels, tiles, draw.New(img))[0] {
		panels[0][j].Draw(cell)
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// addLinePoints adds named line-and-point series (name, plotter.XYs, ...)
// in the plot's default colours, dashes and glyphs.
func addLinePoints(p *plot.Plot, vs ...any) error {
	for i := 0; i+1 < len(vs); i += 2 {
		name, _ := vs[i].(string)
		xy, ok := vs[i+1].(plotter.XYs)
		if !ok {
			return fmt.Errorf("series %q: not plotter.XYs", name)
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("series %q: %w", name, err)
		}
		l.Color = plotutil.Color(i / 2)
		pts.Color = l.Color
		pts.Shape = plotutil.Shape(i / 2)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	return nil
}
