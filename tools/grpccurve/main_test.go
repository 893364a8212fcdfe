// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"image/png"
	"io"
	"strings"
	"testing"
)

// Two rounds of two rates: medians per point, rates ascending with max
// (0) last, and a PNG of the three panels.
const tsv = "round\trate\trow\trps\tp50_ms\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n" +
	"1\t0\tbaseline\t13000\t3\t7.0\t-\t-\n" +
	"1\t0\treceiver\t12000\t3\t8.0\t8.0\t1000\n" +
	"1\t2000\tbaseline\t1999\t1\t1.5\t-\t-\n" +
	"1\t2000\treceiver\t1998\t1\t1.9\t20.0\t7000\n" +
	"2\t0\tbaseline\t14000\t3\t7.4\t-\t-\n" +
	"2\t0\treceiver\t13000\t3\t7.6\t9.0\t1200\n" +
	"2\t2000\tbaseline\t2000\t1\t1.7\t-\t-\n" +
	"2\t2000\treceiver\t2000\t1\t1.7\t22.0\t6000\n"

func TestCurve(t *testing.T) {
	c, err := read(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	want := "| 2000 | 2 | 2000 | 1999 | -0.0 % | 1.60 | 1.80 | 21.0 | 6500 |\n" +
		"| max | 2 | 13500 | 12500 | -7.4 % | 7.20 | 7.80 | 8.5 | 1100 |\n"
	if md := c.markdown(); !strings.HasSuffix(md, want) {
		t.Errorf("markdown:\n%s\nwant its rows:\n%s", md, want)
	}
	var b bytes.Buffer
	if err := c.plot(&b, "RPS asked (ghz -r)"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() < 1000 || r.Dy() < 300 {
		t.Errorf("image %v", r)
	}
}

func TestCurveRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no rows":     "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n",
		"no column":   "rate\trow\trps\n0\tbaseline\t1\n",
		"unknown row": "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n0\thaproxy\t1\t1\t-\t-\n",
		"no receiver": "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n0\tbaseline\t1\t1\t-\t-\n",
		"bad number":  "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\n0\tbaseline\tx\t1\t-\t-\n",
		"bad rate":    "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\nfast\tbaseline\t1\t1\t-\t-\n",
	} {
		if _, err := read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// bench-grpc's curve: baseline, debug and otlp rows with the spans
// columns; two rounds at one rate and one flat out.
const spansHeader = "round\trate\trow\trps\tp50_ms\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\tcalls_ok\tcalls_failed\tspans_expected\tspans_accepted\tspans_sent\tspans_gateway\tlost\terror\n"

const spansTSV = spansHeader +
	"1\t2000\tbaseline\t2000\t0.3\t2.0\t-\t-\t20000\t0\t-\t-\t-\t-\t-\t-\n" +
	"1\t2000\tdebug\t2000\t0.3\t2.2\t16.0\t3000\t20000\t0\t40000\t40000\t40000\t-\t0\t-\n" +
	"1\t2000\totlp\t2000\t0.3\t2.4\t24.0\t3200\t20000\t0\t40000\t40000\t40000\t40000\t0\t-\n" +
	"1\t0\tbaseline\t10000\t3\t7.0\t-\t-\t50000\t0\t-\t-\t-\t-\t-\t-\n" +
	"1\t0\tdebug\t9000\t3\t8.0\t8.0\t900\t50000\t0\t100000\t100000\t100000\t-\t0\t-\n" +
	// Ten spans short, twelve counted lost: within the losses.
	"1\t0\totlp\t8000\t3\t9.0\t10.0\t1000\t50000\t0\t100000\t99990\t99990\t99990\t12\t-\n" +
	"2\t2000\tbaseline\t2000\t0.3\t2.2\t-\t-\t20000\t0\t-\t-\t-\t-\t-\t-\n" +
	"2\t2000\tdebug\t2000\t0.3\t2.4\t18.0\t3400\t20000\t0\t40000\t40000\t40000\t-\t0\t-\n" +
	"2\t2000\totlp\t2000\t0.3\t2.6\t28.0\t3600\t20000\t0\t40000\t40000\t40000\t40000\t0\t-\n" +
	"2\t0\tbaseline\t12000\t3\t7.2\t-\t-\t50000\t0\t-\t-\t-\t-\t-\t-\n" +
	"2\t0\tdebug\t10000\t3\t8.2\t9.0\t1100\t50000\t0\t100000\t100000\t100000\t-\t0\t-\n" +
	"2\t0\totlp\t9000\t3\t9.2\t12.0\t1200\t50000\t0\t100000\t100000\t100000\t100000\t0\t-\n"

// Per span delivered is per call times calls over spans delivered; per end
// is per RPC times calls over spans expected (one a call's end); spans are
// totals over the rounds; none of the runs fails.
func TestCurveSpans(t *testing.T) {
	c, err := read(strings.NewReader(spansTSV))
	if err != nil {
		t.Fatal(err)
	}
	want := "| 2000 | baseline | 2 | 2000 |  | 2.10 |  |  |  |  |  |  |  |  |  |  | 0 |\n" +
		"| 2000 | debug | 2 | 2000 | +0.0 % | 2.30 | 17.0 | 8.5 | 1600 | no | 80000 | 80000 | 80000 | - | 1 | 0 | 0 |\n" +
		"| 2000 | otlp | 2 | 2000 | +0.0 % | 2.50 | 26.0 | 13.0 | 1700 | no | 80000 | 80000 | 80000 | 80000 | 1 | 0 | 0 |\n" +
		"| max | baseline | 2 | 11000 |  | 7.10 |  |  |  |  |  |  |  |  |  |  | 0 |\n" +
		"| max | debug | 2 | 9500 | -13.6 % | 8.10 | 8.5 | 4.2 | 500 | yes | 200000 | 200000 | 200000 | - | 1 | 0 | 0 |\n" +
		"| max | otlp | 2 | 8500 | -22.7 % | 9.10 | 11.0 | 5.5 | 550 | no | 200000 | 199990 | 199990 | 199990 | 0.999950 | 12 | 0 |\n"
	if md := c.markdown(); !strings.HasSuffix(md, want) {
		t.Errorf("markdown:\n%s\nwant its rows:\n%s", md, want)
	}
	if f := c.failures(); len(f) != 0 {
		t.Errorf("failures: %q", f)
	}
	var b bytes.Buffer
	if err := c.plot(&b, "RPS asked (ghz -r)"); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Fatal(err)
	}
}

// A run fails when its row erred, its calls failed, the gateway got other
// than what was sent, or the spans delivered differ from those expected
// beyond the counted losses; the table counts the failed runs.
func TestCurveSpansChecks(t *testing.T) {
	base := "1\t0\tbaseline\t10000\t3\t7.0\t-\t-\t50000\t0\t-\t-\t-\t-\t-\t-\n"
	for name, tc := range map[string]struct{ row, want string }{
		"erred":         {"1\t0\totlp\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100000\t100000\t100000\t0\tnot-drained\n", "round 1, rate max, otlp: not-drained"},
		"calls failed":  {"1\t0\totlp\t8000\t3\t9\t10\t1000\t49990\t10\t99980\t99980\t99980\t99980\t0\t-\n", "round 1, rate max, otlp: 10 calls failed"},
		"gateway short": {"1\t0\totlp\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100000\t100000\t99000\t1000\t-\n", "round 1, rate max, otlp: sent 100000 spans, the gateway received 99000"},
		"missing":       {"1\t0\totlp\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t99000\t99000\t99000\t10\t-\n", "round 1, rate max, otlp: 1000 spans missing, 10 counted lost"},
		"debug missing": {"1\t0\tdebug\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100000\t99999\t-\t0\t-\n", "round 1, rate max, debug: 1 spans missing, 0 counted lost"},
		"none":          {"1\t0\totlp\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100000\t0\t0\t0\tgateway-down\n", "round 1, rate max, otlp: gateway-down; 100000 spans missing, 0 counted lost"},
		"too many":      {"1\t0\totlp\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100002\t100002\t100002\t0\t-\n", "round 1, rate max, otlp: 100002 spans delivered, 100000 expected"},
	} {
		c, err := read(strings.NewReader(spansHeader + base + tc.row))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f := c.failures(); len(f) != 1 || f[0] != tc.want {
			t.Errorf("%s: failures %q, want [%q]", name, f, tc.want)
		}
		if md := c.markdown(); !strings.HasSuffix(md, " | 1 |\n") {
			t.Errorf("%s: the table does not count the failed run:\n%s", name, md)
		}
		if err := c.plot(io.Discard, "x"); err != nil { // with nothing delivered: no CPU per span to draw
			t.Errorf("%s: plot: %v", name, err)
		}
	}
	baseFailed := "1\t0\tbaseline\t10000\t3\t7.0\t-\t-\t49000\t1000\t-\t-\t-\t-\t-\t-\n" +
		"1\t0\tdebug\t8000\t3\t9\t10\t1000\t50000\t0\t100000\t100000\t100000\t-\t0\t-\n"
	c, err := read(strings.NewReader(spansHeader + baseFailed))
	if err != nil {
		t.Fatal(err)
	}
	if f := c.failures(); len(f) != 1 || f[0] != "round 1, rate max, baseline: 1000 calls failed" {
		t.Errorf("baseline: failures %q", f)
	}
}

func TestCurveSpansRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"some spans columns": "rate\trow\trps\tp99_ms\tcpu_us_per_call\tbpf_ns_per_rpc\tcalls_ok\n0\tbaseline\t1\t1\t-\t-\t1\n",
		"bad count":          spansHeader + "1\t0\tbaseline\t1\t1\t1\t-\t-\tmany\t0\t-\t-\t-\t-\t-\t-\n",
		"baseline only":      spansHeader + "1\t0\tbaseline\t1\t1\t1\t-\t-\t1\t0\t-\t-\t-\t-\t-\t-\n",
		"no baseline":        spansHeader + "1\t0\tdebug\t1\t1\t1\t1\t1\t1\t0\t2\t2\t2\t-\t0\t-\n",
	} {
		if _, err := read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
