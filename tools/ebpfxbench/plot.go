package main

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// cpuPoint is both processes' CPU seconds since the window began, at t
// seconds into it.
type cpuPoint struct{ t, ours, ref float64 }

// writePlot draws both processes' CPU seconds against the window's time, one
// line each, as a PNG: the slopes are each one's CPU per second of
// collecting, and the title carries the ratio of the table.
func writePlot(w io.Writer, pts []cpuPoint, ratio float64) error {
	if len(pts) < 2 {
		return fmt.Errorf("plot: %d samples, need 2 or more", len(pts))
	}
	ours, ref := make(plotter.XYs, len(pts)), make(plotter.XYs, len(pts))
	for i, p := range pts {
		ours[i] = plotter.XY{X: p.t, Y: p.ours}
		ref[i] = plotter.XY{X: p.t, Y: p.ref}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("ebpfx_bench, one collection a second: CPU used (otelcol-seq / ebpf_exporter = %.2f)", ratio)
	p.X.Label.Text = "seconds into the window"
	p.Y.Label.Text = "CPU seconds (user + system) since the window began"
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	if err := plotutil.AddLinePoints(p,
		"ebpf_exporter v2.5.1 (scraped over HTTP)", ref,
		"otelcol-seq ebpf_exporter receiver (OTLP/HTTP)", ours); err != nil {
		return err
	}
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
