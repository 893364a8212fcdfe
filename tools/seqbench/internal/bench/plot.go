//go:build linux

package bench

import (
	"fmt"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot draws two bar charts as a PNG, events/s (log scale) and capture %,
// one group of bars per workload × CPU count and one bar per transport,
// each bar with its value written upwards above it.
func Plot(w io.Writer, results []Result) error {
	groups, transports, val := tabulate(results)
	rate, err := barPanel("Events/s delivered (log scale)", groups, transports, val, true,
		func(r Result) float64 { return r.EventsPerSec }, rateLabel)
	if err != nil {
		return err
	}
	capture, err := barPanel("Capture % (delivered / issued)", groups, transports, val, false,
		func(r Result) float64 { return r.CapturePct }, pct)
	if err != nil {
		return err
	}
	img := vgimg.New(12*vg.Inch, 9*vg.Inch)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter, PadBottom: vg.Millimeter,
		PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter, PadY: 6 * vg.Millimeter}
	panels := [][]*plot.Plot{{rate}, {capture}}
	for i, row := range plot.Align(panels, tiles, draw.New(img)) {
		panels[i][0].Draw(row[0])
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// tabulate lists the groups (workload × CPUs) and transports in the order
// first seen, leaving out those that emit nothing (no rate, no capture).
func tabulate(results []Result) (groups []string, transports []string, val map[[2]string]Result) {
	seen := map[string]bool{}
	val = map[[2]string]Result{}
	for _, r := range results {
		if !Transport(r.Transport).emits() || r.Error != "" && r.Issued == 0 {
			continue
		}
		g := fmt.Sprintf("%s, %d CPU", r.Workload, r.CPUs)
		if !seen["g"+g] {
			seen["g"+g] = true
			groups = append(groups, g)
		}
		if !seen["t"+r.Transport] {
			seen["t"+r.Transport] = true
			transports = append(transports, r.Transport)
		}
		val[[2]string{g, r.Transport}] = r
	}
	return groups, transports, val
}

// barPanel is one grouped bar chart. With logScale the bars are log10 of
// the values (a bar chart cannot start at 0 on a log axis), a tick per decade.
func barPanel(title string, groups, transports []string, val map[[2]string]Result, logScale bool,
	get func(Result) float64, label func(float64) string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	if len(groups) == 0 {
		return p, nil
	}
	p.NominalX(groups...)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	p.Add(plotter.NewGrid()) // first: under the bars
	width := vg.Points(math.Min(26, 560/float64(len(groups)*len(transports))))
	height := func(v float64) float64 {
		if logScale {
			return math.Log10(math.Max(v, 1))
		}
		return v
	}
	top := 0.0
	for ti, t := range transports {
		heights := make(plotter.Values, len(groups))
		var xys plotter.XYs
		var labels []string
		for gi, g := range groups {
			r, ok := val[[2]string{g, t}]
			if !ok {
				continue
			}
			v := get(r)
			heights[gi] = height(v)
			top = math.Max(top, heights[gi])
			xys = append(xys, plotter.XY{X: float64(gi), Y: heights[gi]})
			labels = append(labels, label(v))
		}
		bars, err := plotter.NewBarChart(heights, width)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(ti)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(ti)-float64(len(transports)-1)/2) * width
		p.Add(bars)
		p.Legend.Add(t, bars)
		if len(xys) == 0 {
			continue
		}
		// Upwards from the top of each bar, so that neighbours never overlap.
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Rotation = math.Pi / 2
			lab.TextStyle[i].XAlign = text.XLeft
			lab.TextStyle[i].YAlign = text.YCenter
			lab.TextStyle[i].Font.Size = vg.Points(9)
		}
		lab.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
		p.Add(lab)
	}
	if logScale {
		decades := math.Max(1, math.Ceil(top))
		var ticks []plot.Tick
		for k := 0.0; k <= decades; k++ {
			ticks = append(ticks, plot.Tick{Value: k, Label: rateLabel(math.Pow(10, k))})
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Max = decades * 1.35 // room for the labels and the legend
	} else {
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"},
			{Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
		p.Y.Max = 140
	}
	return p, nil
}

func rateLabel(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", v/1e6), ".00") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return fmt.Sprintf("%.0f", v)
}
