// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"image/png"
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
