// Command agentprofile splits the agent's CPU per process event
// (scripts/bench-agent.sh: the agent's CPU over a fork storm divided by the
// log records it sent) by where a CPU profile of the agent taken during the
// storm says it went: each sample goes to the first stage whose functions
// appear in its stack (the garbage collector before the allocation that
// called it, the OTLP encoding before the exporter that called it). Prints a
// Markdown table of the stages' shares and µs per event and, with -png,
// draws it against the goal.
//
//	go -C tools run ./agentprofile -profile bench-results/agent/cpu.pprof -us-per-event 5.3 -png out.png
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"github.com/google/pprof/profile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// stage is a part of the agent's work, named by the functions that do it.
type stage struct {
	name string
	re   *regexp.Regexp
}

// stages, in the order a sample is tested against them.
var stages = []stage{
	{"garbage collector", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcStart|gcMarkDone|gcMarkTermination|sweepone|deductSweepCredit)`)},
	{"OTLP encoding (exporter)", regexp.MustCompile(`(MarshalProto|SizeProto)$`)},
	{"exporter: queue, HTTP, loopback TCP", regexp.MustCompile(`^(go\.opentelemetry\.io/collector/exporter|net/http\.|net\.)`)},
	{"batch processor", regexp.MustCompile(`processor/batchprocessor`)},
	{"mapping to pdata (log records)", regexp.MustCompile(`receiver/seqreceiver/internal/pdatamap\.`)},
	{"process model (and trace ids)", regexp.MustCompile(`receiver/seqreceiver/internal/process\.`)},
	{"ring read and decode", regexp.MustCompile(`otelcol-seq/internal/(ring|event|sequencer)\.`)},
	{"receiver: batching, hand-off, telemetry", regexp.MustCompile(`otelcol-seq/receiver/seqreceiver\.`)},
	{"scheduler, timers, wake-ups", regexp.MustCompile(`^runtime\.(mcall|schedule|findRunnable|park_m|netpoll|sysmon|goschedImpl|gopreempt_m|wakep|timerproc|mstart|notesleep|futex|usleep)`)},
}

const other = "other"

// share is a stage's part of the samples.
type share struct {
	name    string
	samples int64
}

// split attributes each CPU sample of p to a stage (or other) and returns the
// stages by falling share, with the total.
func split(p *profile.Profile) ([]share, int64, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, errors.New("not a CPU profile (no cpu sample type)")
	}
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		by[stageOf(s)] += v
	}
	if total == 0 {
		return nil, 0, errors.New("the profile has no samples")
	}
	out := make([]share, 0, len(by))
	for n, v := range by {
		out = append(out, share{n, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].samples != out[j].samples {
			return out[i].samples > out[j].samples
		}
		return out[i].name < out[j].name
	})
	return out, total, nil
}

func stageOf(s *profile.Sample) string {
	for _, st := range stages {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil && st.re.MatchString(l.Function.Name) {
					return st.name
				}
			}
		}
	}
	return other
}

func main() {
	path := flag.String("profile", "", "the agent's CPU profile (pprof)")
	per := flag.Float64("us-per-event", 0, "the agent's CPU per event over the storm, µs")
	goal := flag.Float64("goal", 2, "the goal, µs per event (drawn on the plot)")
	png := flag.String("png", "", "also draw the split into this PNG")
	flag.Parse()
	if err := run(os.Stdout, *path, *per, *goal, *png); err != nil {
		fmt.Fprintln(os.Stderr, "agentprofile:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, path string, per, goal float64, png string) error {
	if path == "" || per <= 0 {
		return errors.New("-profile and -us-per-event (> 0) are required")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	shares, total, err := split(p)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "| stage | share of the profile's samples | µs per event |\n|---|---:|---:|\n")
	for _, s := range shares {
		f := float64(s.samples) / float64(total)
		fmt.Fprintf(w, "| %s | %.1f %% | %.2f |\n", s.name, 100*f, f*per)
	}
	fmt.Fprintf(w, "| **all** (%.2f s of samples) | 100 %% | **%.2f** |\n", float64(total)/1e9, per)
	if png == "" {
		return nil
	}
	out, err := os.Create(png)
	if err != nil {
		return err
	}
	if err := draw(out, shares, total, per, goal); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// draw puts each stage's µs per event as a horizontal bar, the largest on
// top, with the total and the goal in the title.
func draw(w io.Writer, shares []share, total int64, per, goal float64) error {
	vals := make(plotter.Values, len(shares))
	names := make([]string, len(shares))
	for i, s := range shares {
		j := len(shares) - 1 - i // the plot's y axis counts upwards
		vals[j] = float64(s.samples) / float64(total) * per
		names[j] = s.name
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("The agent's CPU per process event: %.2f µs (goal %.1f µs), by stage", per, goal)
	p.X.Label.Text = "µs of CPU per event"
	p.X.Min = 0
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	p.Add(bars)
	p.NominalY(names...)
	wt, err := p.WriterTo(9*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
