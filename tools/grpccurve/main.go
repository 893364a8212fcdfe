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
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// goalNS is OBI's published BPF time per request, per end: the goal of the
// BPF time per end at every rate.
const goalNS = 500

// figures are the columns every curve has, taken as medians.
var figures = []string{"rps", "p99_ms", "cpu_us_per_call", "bpf_ns_per_rpc"}

// spansColumns are bench-grpc's columns beyond figures; a curve has all of
// them or none.
var spansColumns = []string{"calls_ok", "calls_failed", "spans_expected", "spans_accepted", "spans_sent", "spans_gateway", "lost", "error"}

// point is the median over the rounds of one (rate, row), and with the
// spans columns their totals over the rounds and the runs that failed.
type point struct {
	rate, row string
	rounds    int
	rps       float64
	p99       float64
	cpuUS     float64 // per call; NaN for the baseline
	bpfNS     float64 // per call, both ends; NaN for the baseline
	// The spans columns' (zero without them).
	cpuSpanUS float64 // collector CPU per span delivered
	bpfEndNS  float64 // BPF time per span expected: per end of a call
	spans     spanCounts
	failed    []string // why, one a failed run
}

// spanCounts of one run, or summed over a point's runs. Gateway is -1 for
// a row that exports to none.
type spanCounts struct {
	callsOK, callsFailed, expected, accepted, sent, gateway, lost int
}

// delivered is what reached the end of the pipeline: the gateway's where
// there is one, else what the exporter sent.
func (s spanCounts) delivered() int {
	if s.gateway >= 0 {
		return s.gateway
	}
	return s.sent
}

// check says why a run fails ("" when it does not): the error the script
// recorded, calls that failed, a gateway that got other than what was sent,
// or spans delivered that differ from those expected beyond the counted
// losses. A baseline run has its calls checked only.
func (s spanCounts) check(baseline bool, errText string) string {
	var why []string
	if errText != "-" && errText != "" {
		why = append(why, errText)
	}
	if s.callsFailed > 0 {
		why = append(why, fmt.Sprintf("%d calls failed", s.callsFailed))
	}
	if !baseline {
		d := s.delivered()
		if s.gateway >= 0 && s.gateway != s.sent {
			why = append(why, fmt.Sprintf("sent %d spans, the gateway received %d", s.sent, s.gateway))
		}
		switch {
		case d > s.expected:
			why = append(why, fmt.Sprintf("%d spans delivered, %d expected", d, s.expected))
		case s.expected-d > s.lost:
			why = append(why, fmt.Sprintf("%d spans missing, %d counted lost", s.expected-d, s.lost))
		}
	}
	return strings.Join(why, "; ")
}

// curve is the points in the order of the rates (ascending, max last) and
// the rows: baseline, then the others as they first appear.
type curve struct {
	rates  []string
	rows   []string
	spans  bool // the curve has the spans columns
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
	failed := c.failures()
	for _, f := range failed {
		fmt.Fprintln(os.Stderr, "grpccurve: failed:", f)
	}
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
	if len(failed) > 0 {
		os.Exit(1)
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
	for _, need := range append([]string{"rate", "row"}, figures...) {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no column %q", need)
		}
	}
	c := &curve{rows: []string{"baseline"}, points: map[[2]string]point{}}
	have := 0
	for _, name := range spansColumns {
		if _, ok := col[name]; ok {
			have++
		}
	}
	switch have {
	case 0:
	case len(spansColumns):
		c.spans = true
	default:
		return nil, fmt.Errorf("the spans columns come all or none: %s", strings.Join(spansColumns, ", "))
	}
	vals := map[[2]string]map[string][]float64{}
	for _, rec := range recs[1:] {
		k := [2]string{rec[col["rate"]], rec[col["row"]]}
		if !c.spans && k[1] != "baseline" && k[1] != "receiver" {
			return nil, fmt.Errorf("row %q: want baseline or receiver", k[1])
		}
		if _, err := strconv.Atoi(k[0]); err != nil {
			return nil, fmt.Errorf("rate %q: %w", k[0], err)
		}
		if !slices.Contains(c.rates, k[0]) {
			c.rates = append(c.rates, k[0])
		}
		if !slices.Contains(c.rows, k[1]) {
			c.rows = append(c.rows, k[1])
		}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		v := map[string]float64{}
		for _, name := range figures {
			s := rec[col[name]]
			if s == "-" || s == "" {
				continue
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", name, s, err)
			}
			v[name] = f
			vals[k][name] = append(vals[k][name], f)
		}
		p := c.points[k]
		if c.spans {
			n, err := spansOf(rec, col)
			if err != nil {
				return nil, fmt.Errorf("round %s, rate %s, %s: %w", rec[col["round"]], k[0], k[1], err)
			}
			if why := n.check(k[1] == "baseline", rec[col["error"]]); why != "" {
				p.failed = append(p.failed, fmt.Sprintf("round %s, rate %s, %s: %s", rec[col["round"]], label(k[0]), k[1], why))
			}
			if cpu, ok := v["cpu_us_per_call"]; ok && n.delivered() > 0 {
				vals[k]["cpu_span"] = append(vals[k]["cpu_span"], cpu*float64(n.callsOK)/float64(n.delivered()))
			}
			if bpf, ok := v["bpf_ns_per_rpc"]; ok && n.expected > 0 {
				vals[k]["bpf_end"] = append(vals[k]["bpf_end"], bpf*float64(n.callsOK)/float64(n.expected))
			}
			p.spans = p.spans.add(n)
		}
		c.points[k] = p
	}
	// Ascending, with 0 (as fast as it goes) last.
	sort.Slice(c.rates, func(i, j int) bool {
		a, _ := strconv.Atoi(c.rates[i])
		b, _ := strconv.Atoi(c.rates[j])
		if a == 0 || b == 0 {
			return b == 0 && a != 0
		}
		return a < b
	})
	for k, v := range vals {
		p := c.points[k]
		p.rate, p.row, p.rounds = k[0], k[1], len(v["rps"])
		p.rps, p.p99, p.cpuUS, p.bpfNS = median(v["rps"]), median(v["p99_ms"]), median(v["cpu_us_per_call"]), median(v["bpf_ns_per_rpc"])
		p.cpuSpanUS, p.bpfEndNS = median(v["cpu_span"]), median(v["bpf_end"])
		c.points[k] = p
	}
	if len(c.rows) < 2 {
		return nil, errors.New("no row but the baseline")
	}
	for _, rate := range c.rates {
		for _, row := range c.rows {
			if _, ok := c.points[[2]string{rate, row}]; !ok {
				return nil, fmt.Errorf("rate %s has no %s row", rate, row)
			}
		}
	}
	return c, nil
}

// spansOf reads a record's spans columns; "-" is -1 (a baseline's, or
// spans_gateway where there is no gateway).
func spansOf(rec []string, col map[string]int) (spanCounts, error) {
	var n spanCounts
	for name, dst := range map[string]*int{"calls_ok": &n.callsOK, "calls_failed": &n.callsFailed, "spans_expected": &n.expected,
		"spans_accepted": &n.accepted, "spans_sent": &n.sent, "spans_gateway": &n.gateway, "lost": &n.lost} {
		s := rec[col[name]]
		if s == "-" {
			*dst = -1
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return n, fmt.Errorf("%s %q: %w", name, s, err)
		}
		*dst = v
	}
	return n, nil
}

// add sums two runs' counts (a -1, not counted, stays so).
func (s spanCounts) add(o spanCounts) spanCounts {
	sum := func(a, b int) int {
		if b < 0 {
			return a
		}
		return max(a, 0) + b
	}
	if s == (spanCounts{}) {
		return o
	}
	return spanCounts{sum(s.callsOK, o.callsOK), sum(s.callsFailed, o.callsFailed), sum(s.expected, o.expected),
		sum(s.accepted, o.accepted), sum(s.sent, o.sent), sum(s.gateway, o.gateway), sum(s.lost, o.lost)}
}

// failures lists the runs that failed their checks, rates ascending, rows
// in order.
func (c *curve) failures() []string {
	var out []string
	for _, rate := range c.rates {
		for _, row := range c.rows {
			out = append(out, c.points[[2]string{rate, row}].failed...)
		}
	}
	return out
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
	if c.spans {
		return c.spansMarkdown()
	}
	s := "| rate (RPS asked) | rounds | baseline RPS | receiver RPS | RPS change | baseline p99 ms | receiver p99 ms | collector µs CPU / call | BPF ns / RPC (both ends) |\n"
	s += "|---|---|---|---|---|---|---|---|---|\n"
	for _, rate := range c.rates {
		b, r := c.points[[2]string{rate, "baseline"}], c.points[[2]string{rate, "receiver"}]
		s += fmt.Sprintf("| %s | %d | %.0f | %.0f | %+.1f %% | %.2f | %.2f | %.1f | %.0f |\n",
			label(rate), min(b.rounds, r.rounds), b.rps, r.rps, (r.rps/b.rps-1)*100, b.p99, r.p99, r.cpuUS, r.bpfNS)
	}
	return s
}

// spansMarkdown is bench-grpc's table: a line per rate and row, the
// baseline's RPS and p99 only; spans are totals over the rounds.
func (c *curve) spansMarkdown() string {
	s := "| rate (RPS asked) | row | rounds | RPS | RPS change | p99 ms | collector µs CPU / call | collector µs CPU / span delivered | BPF ns / RPC per end | ≤ 500 ns per end | spans expected (2 a call ghz says succeeded) | accepted | sent | gateway received | delivered / expected | counted losses | runs failed |\n"
	s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
	count := func(n int) string {
		if n < 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	for _, rate := range c.rates {
		b := c.points[[2]string{rate, "baseline"}]
		for _, row := range c.rows {
			p := c.points[[2]string{rate, row}]
			line := fmt.Sprintf("| %s | %s | %d | %.0f | ", label(rate), row, p.rounds, p.rps)
			if row == "baseline" {
				s += line + fmt.Sprintf(" | %.2f |  |  |  |  |  |  |  |  |  |  | %d |\n", p.p99, len(p.failed))
				continue
			}
			goal := "no"
			if p.bpfEndNS <= goalNS {
				goal = "yes"
			}
			n := p.spans
			ratio := "-" // exactly 1 only where they are equal: a miss never rounds to it
			switch {
			case n.delivered() == n.expected:
				ratio = "1"
			case n.expected > 0:
				ratio = fmt.Sprintf("%.6f", float64(n.delivered())/float64(n.expected))
			}
			s += line + fmt.Sprintf("%+.1f %% | %.2f | %.1f | %.1f | %.0f | %s | %d | %d | %d | %s | %s | %d | %d |\n",
				(p.rps/b.rps-1)*100, p.p99, p.cpuUS, p.cpuSpanUS, p.bpfEndNS, goal,
				n.expected, n.accepted, n.sent, count(n.gateway), ratio, n.lost, len(p.failed))
		}
	}
	return s
}

// plot draws three panels side by side against the rate asked (nominal:
// 2000, 5000, ..., max): RPS and p99 with a line per row, and the costs:
// the receiver's collector µs per call and BPF µs per RPC (both ends), or
// with the spans columns each row's collector µs per span delivered and BPF
// µs per end beside OBI's 0.5; xlabel names the x axis.
func (c *curve) plot(w io.Writer, xlabel string) error {
	names := make([]string, len(c.rates))
	for i, r := range c.rates {
		names[i] = label(r)
	}
	// A point without the figure (NaN: no span delivered) is left out.
	series := func(row string, f func(point) float64) plotter.XYs {
		var xy plotter.XYs
		for i, rate := range c.rates {
			if y := f(c.points[[2]string{rate, row}]); !math.IsNaN(y) {
				xy = append(xy, plotter.XY{X: float64(i), Y: y})
			}
		}
		return xy
	}
	perRow := func(rows []string, f func(point) float64) []any {
		var lines []any
		for _, row := range rows {
			lines = append(lines, row, series(row, f))
		}
		return lines
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
	rps, err := panel("RPS achieved", "RPS", perRow(c.rows, func(p point) float64 { return p.rps })...)
	if err != nil {
		return err
	}
	p99, err := panel("p99 latency", "ms", perRow(c.rows, func(p point) float64 { return p.p99 })...)
	if err != nil {
		return err
	}
	costs := []any{
		"collector CPU per call", series("receiver", func(p point) float64 { return p.cpuUS }),
		"BPF per RPC (both ends)", series("receiver", func(p point) float64 { return p.bpfNS / 1000 }),
	}
	if c.spans {
		costs = nil
		for _, row := range c.rows[1:] {
			costs = append(costs, row+": collector CPU per span", series(row, func(p point) float64 { return p.cpuSpanUS }),
				row+": BPF per RPC per end", series(row, func(p point) float64 { return p.bpfEndNS / 1000 }))
		}
		costs = append(costs, "goal: BPF 0.5 per end", series("baseline", func(point) float64 { return goalNS / 1000. }))
	}
	cost, err := panel("The receiver's cost", "µs", costs...)
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
