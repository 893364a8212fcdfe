package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// fakeProfile is a CPU profile with one sample per stack (leaf first), each
// of the given nanoseconds.
func fakeProfile(stacks map[string][]string) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	funcs := map[string]*profile.Function{}
	for key, stack := range stacks {
		s := &profile.Sample{Value: []int64{1, int64(len(key)) * 1e7}}
		for _, fn := range stack {
			f := funcs[fn]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: fn}
				funcs[fn] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestSplitAttributesEachSampleOnce(t *testing.T) {
	const pm = "github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap.(*Mapper).AppendEventSlots"
	p := fakeProfile(map[string][]string{
		// 1: an allocation in the mapping that assisted the GC: the GC's.
		"a": {"runtime.scanobject", "runtime.gcAssistAlloc", "runtime.mallocgc", pm},
		// 2: the mapping's own allocation.
		"bb": {"runtime.mallocgc", pm, "github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver.(*seqReceiver).read"},
		// 3: encoding under the exporter: the encoding's.
		"ccc": {"go.opentelemetry.io/collector/pdata/internal.(*KeyValue).MarshalProto", "go.opentelemetry.io/collector/exporter/otlphttpexporter.(*baseExporter).pushLogs"},
		// 4: nothing known.
		"dddd": {"main.main"},
	})
	shares, total, err := split(p)
	if err != nil {
		t.Fatal(err)
	}
	if total != 10e7 {
		t.Fatalf("total %d, want %d", total, int64(10e7))
	}
	got := map[string]int64{}
	for _, s := range shares {
		got[s.name] = s.samples
	}
	want := map[string]int64{"garbage collector": 1e7, "mapping to pdata (log records)": 2e7, "OTLP encoding (exporter)": 3e7, other: 4e7}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	if shares[0].name != other {
		t.Errorf("first %q, want the largest (%s)", shares[0].name, other)
	}
}

func TestRunWritesTableAndPlot(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	f, err := os.Create(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := fakeProfile(map[string][]string{"x": {"runtime.gcBgMarkWorker"}, "yyy": {"main.main"}}).Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out bytes.Buffer
	png := filepath.Join(dir, "p.png")
	if err := run(&out, prof, 4, 2, png); err != nil {
		t.Fatal(err)
	}
	// 1 of 4 parts GC: 1 µs of 4; 3 parts other: 3 µs.
	for _, line := range []string{"| garbage collector | 25.0 % | 1.00 |", "| other | 75.0 % | 3.00 |", "**4.00**"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Errorf("plot: %v, %v", st, err)
	}
	if err := run(&out, prof, 0, 2, ""); err == nil {
		t.Error("no -us-per-event: no error")
	}
}
