//go:build linux

package bench

import (
	"bytes"
	"image/png"
	"os"
	"testing"
)

// Every transport on every workload renders, and the PNG decodes.
func TestPlot(t *testing.T) {
	var results []Result
	rate := 3000.0
	for _, w := range Workloads {
		for _, n := range []int{1, 2} {
			for i, tr := range Transports {
				results = append(results, Result{Transport: string(tr), Workload: string(w), CPUs: n,
					Issued: 1000, EventsPerSec: rate / float64(i+1), CapturePct: 100 - float64(i)*0.0007})
			}
			rate *= 7
		}
	}
	results = append(results, Result{Transport: string(PerfBuf), Workload: "exec", CPUs: 3, Error: "no such CPU"})
	var b bytes.Buffer
	if err := Plot(&b, results); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() < 800 {
		t.Errorf("%v: too small", img.Bounds())
	}
	if out := os.Getenv("SEQBENCH_PLOT"); out != "" {
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
