// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readRecords parses every non-blank line of a captured file.
func readRecords(t *testing.T, path string) []record {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxRecordBytes)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rec, err := parseRecord(line)
		require.NoError(t, err, "%s:%d: %s", path, n, line)
		out = append(out, rec)
	}
	return out
}

// assemble runs the text records through a lineAssembler.
func assemble(recs []record) []string {
	var a lineAssembler
	var lines []string
	now := time.Unix(0, 0)
	for _, r := range recs {
		if r.kind != kindText {
			continue
		}
		if pl, ok, _ := a.add(r.text, r.endsLine, now); ok {
			lines = append(lines, pl.text)
		}
	}
	if pl, ok := a.flush(); ok {
		lines = append(lines, pl.text)
	}
	return lines
}

func mapsOf(recs []record) map[string][]mapData {
	out := map[string][]mapData{}
	for _, r := range recs {
		for _, m := range r.maps {
			out[m.name] = append(out[m.name], m)
		}
	}
	return out
}

func TestParseAllCaptured(t *testing.T) {
	files, err := filepath.Glob("testdata/capture/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "testdata/newer_format.jsonl")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, r := range readRecords(t, f) {
				if strings.Contains(f, "capture/") {
					assert.NotEqual(t, kindUnknown, r.kind, "bpftrace 0.17 prints no type this package ignores: %s", r.typ)
				}
			}
		})
	}
}

func TestParseExecsnoop(t *testing.T) {
	recs := readRecords(t, "testdata/capture/execsnoop.jsonl")
	require.Equal(t, kindAttachedProbes, recs[0].kind)
	assert.EqualValues(t, 3, recs[0].count)
	// printf("%-10u %-5d ", ...) then join(args->argv): one line each.
	lines := assemble(recs)
	assert.Equal(t, "TIME(ms)   PID   ARGS", lines[0])
	var marker string
	for _, l := range lines[1:] {
		assert.Regexp(t, `^\d+ +\d+ +/`, l)
		if strings.Contains(l, "capture-marker") {
			marker = l
		}
	}
	assert.Regexp(t, `^\d+ +\d+ +/bin/echo capture-marker two words x$`, marker)
}

func TestParseKillsnoop(t *testing.T) {
	// time("%H:%M:%S  ") then printf(...\n): one line.
	lines := assemble(readRecords(t, "testdata/capture/killsnoop.jsonl"))
	require.Len(t, lines, 4)
	assert.Equal(t, "Tracing kill() signals... Hit Ctrl-C to end.", lines[0])
	assert.Regexp(t, `^TIME +PID +COMM +SIG +TPID +RESULT$`, lines[1])
	assert.Regexp(t, `^\d\d:\d\d:\d\d  \d+ +capture.sh +0 +\d+ +0$`, lines[2])
	assert.Regexp(t, `^\d\d:\d\d:\d\d  \d+ +capture.sh +0 +1 +0$`, lines[3])
}

func TestParseSyscount(t *testing.T) {
	recs := readRecords(t, "testdata/capture/syscount.jsonl")
	maps := mapsOf(recs)
	// Four pulls and the END block's top 10 (plus nothing at exit: END
	// clears both maps).
	require.Len(t, maps["@syscall"], 5)
	require.Len(t, maps["@process"], 5)
	for _, md := range append(maps["@syscall"], maps["@process"]...) {
		assert.True(t, md.keyed)
		require.NotEmpty(t, md.entries)
		for _, e := range md.entries {
			assert.Equal(t, valueNumber, e.kind)
			assert.True(t, e.number.isInt)
			assert.Positive(t, e.number.i)
		}
	}
	for _, e := range maps["@syscall"][0].entries {
		assert.Regexp(t, `^\d+$`, e.key)
	}
	assert.Len(t, maps["@syscall"][4].entries, 10, "print(@syscall, 10)")
	lines := assemble(recs)
	assert.Equal(t, []string{"Counting syscalls... Hit Ctrl-C to end.", "Top 10 syscalls IDs:", "Top 10 processes:"}, lines)
}

func TestParseRunqlat(t *testing.T) {
	recs := readRecords(t, "testdata/capture/runqlat.jsonl")
	hists := mapsOf(recs)["@usecs"]
	require.NotEmpty(t, hists)
	for _, md := range hists {
		assert.False(t, md.keyed)
		require.Len(t, md.entries, 1)
		e := md.entries[0]
		require.Equal(t, valueHist, e.kind)
		require.NotEmpty(t, e.buckets)
		for i, b := range e.buckets {
			require.True(t, b.hasMin && b.hasMax, "power-of-2 buckets of non-negative values")
			if i > 0 {
				assert.Equal(t, e.buckets[i-1].max+1, b.min)
			}
		}
	}
}

func TestParseTypes(t *testing.T) {
	recs := readRecords(t, "testdata/capture/types.jsonl")
	lines := assemble(recs)
	require.GreaterOrEqual(t, len(lines), 9)
	assert.Regexp(t, `^\d\d:\d\d:\d\d no newline rest$`, lines[0], "time + printf + printf")
	assert.Equal(t, "two\nlines", lines[1], "one printf of two lines is one record")
	assert.Equal(t, "x\x01y|-5|\t\"q\"\\", lines[2])
	assert.Equal(t, []string{"Linux", "sys", "123", "astr", `[1,"tupl"]`, "tail without newline"}, lines[3:9])

	maps := mapsOf(recs)
	one := func(name string) mapData {
		t.Helper()
		require.NotEmpty(t, maps[name], name)
		return maps[name][0]
	}
	val := one("@val")
	assert.False(t, val.keyed)
	assert.Equal(t, mapEntry{kind: valueNumber, number: number{isInt: true, i: 42, f: 42}}, val.entries[0])
	assert.Equal(t, int64(-7), one("@neg").entries[0].number.i)
	assert.Equal(t, int64(15), one("@avg").entries[0].number.i, `avg(): {"type": "stats", "data": {"@avg": 15}}`)
	assert.Equal(t, valueStats, one("@s").entries[0].kind)
	assert.Equal(t, stats{count: number{true, 2, 2}, average: number{true, 15, 15}, total: number{true, 30, 30}}, one("@s").entries[0].stats)
	sk := one("@sk")
	assert.True(t, sk.keyed)
	require.Len(t, sk.entries, 2)
	assert.Equal(t, "a", sk.entries[0].key)
	assert.Equal(t, valueStats, sk.entries[0].kind)
	avgk := one("@avgk")
	assert.True(t, avgk.keyed)
	assert.Equal(t, mapEntry{key: "a", kind: valueNumber, number: number{true, 4, 4}}, avgk.entries[0])

	h := one("@h").entries[0]
	require.Equal(t, valueHist, h.kind)
	assert.Equal(t, bucket{max: -1, hasMax: true, count: 1}, h.buckets[0], "(..., 0)")
	assert.Equal(t, bucket{min: 0, max: 0, hasMin: true, hasMax: true, count: 1}, h.buckets[1])
	assert.Equal(t, bucket{min: 512, max: 1023, hasMin: true, hasMax: true, count: 1}, h.buckets[len(h.buckets)-1])
	lh := one("@lh").entries[0]
	assert.Equal(t, bucket{min: 100, hasMin: true, count: 1}, lh.buckets[len(lh.buckets)-1], "[100, ...)")
	hk := one("@hk")
	assert.True(t, hk.keyed)
	assert.Equal(t, "1,a", hk.entries[0].key, "multi-key keys are joined with commas")
	assert.Equal(t, []bucket{{min: 4, max: 7, hasMin: true, hasMax: true, count: 1}}, hk.entries[0].buckets)

	mk := one("@mk")
	assert.ElementsMatch(t, []string{"1,2,3", "4,5,6"}, []string{mk.entries[0].key, mk.entries[1].key})
	assert.Equal(t, valueOther, one("@str").entries[0].kind)
	assert.Equal(t, valueOther, one("@tup").entries[0].kind)
	assert.False(t, one("@tup").keyed)
	assert.Equal(t, "x,y", one("@sum").entries[0].key)
}

func TestParseLostEvents(t *testing.T) {
	var total uint64
	for _, r := range readRecords(t, "testdata/capture/lost_events.jsonl") {
		if r.kind == kindLostEvents {
			total += r.count
		}
	}
	assert.Positive(t, total)

	recs := readRecords(t, "testdata/capture/helper_error.jsonl")
	require.Equal(t, kindError, recs[1].kind)
	assert.Equal(t, "map_update_elem failed: argument list too long (-7) at 1:26", recs[1].text)
}

func TestParseNewerFormat(t *testing.T) {
	recs := readRecords(t, "testdata/newer_format.jsonl")
	get := func(i int, kind recordKind) record {
		t.Helper()
		require.Equal(t, kind, recs[i].kind, "record %d", i)
		return recs[i]
	}
	assert.EqualValues(t, 3, get(0, kindAttachedProbes).count)
	assert.EqualValues(t, 12, get(1, kindLostEvents).count)
	assert.Equal(t, "hello\n", get(2, kindText).text)
	big := get(3, kindMap).maps[0].entries[0]
	assert.Equal(t, valueNumber, big.kind, "integers a double cannot hold arrive as strings")
	assert.False(t, big.number.isInt)
	assert.InEpsilon(t, 1.8446744073709552e19, big.number.f, 1e-9)
	assert.Equal(t, "2,b", get(4, kindMap).maps[0].entries[1].key)
	assert.Len(t, get(5, kindMap).maps[0].entries[0].buckets, 4)
	assert.Equal(t, bucket{min: 10, hasMin: true, count: 4}, get(6, kindMap).maps[0].entries[0].buckets[1])
	assert.Equal(t, valueStats, get(7, kindMap).maps[0].entries[0].kind)
	assert.Equal(t, valueStats, get(8, kindMap).maps[0].entries[0].kind)
	ts := get(9, kindMap).maps[0]
	assert.Equal(t, "tseries", recs[9].typ)
	assert.Equal(t, int64(7), ts.entries[0].number.i, "the latest interval's value")
	assert.Equal(t, "divide by zero at x.bt:3:5", get(10, kindError).text)
	assert.Equal(t, "map_lookup_elem: No such file or directory at x.bt:4:7", get(11, kindError).text)
	assert.Equal(t, "print_error", get(12, kindError).typ)
	assert.True(t, recs[10].isError, "runtime_error is an error")
	assert.False(t, recs[11].isError, "helper_error is a warning")
	assert.Equal(t, "null", get(13, kindText).text, "a value bpftrace cannot print reads null, not nothing")
	assert.Equal(t, kindUnknown, recs[14].kind)
	assert.Equal(t, valueOther, get(15, kindMap).maps[0].entries[0].kind)
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		``, `not json`, `[]`, `{}`, `{"type": ""}`, `{"data": "x"}`,
		`{"type": "map", "data": 5}`, `{"type": "map", "data": {}}`,
		`{"type": "hist", "data": {"@h": 5}}`, `{"type": "hist", "data": {"@h": [{"min": 1}]}}`,
		`{"type": "hist", "data": {"@h": [{"min": "x", "count": 1}]}}`,
		`{"type": "hist", "data": {"@h": {"k": 3}}}`,
		`{"type": "lost_events"}`, `{"type": "lost_events", "data": {"events": "many"}}`,
		`{"type": "printf", "data": {"a": }}`,
		`{"type": "map", "data": {"@a": {"k": 1}, }}`,
	} {
		_, err := parseRecord([]byte(in))
		assert.Error(t, err, in)
	}
}

func TestLineAssembler(t *testing.T) {
	var a lineAssembler
	t0 := time.Unix(100, 0)
	add := func(text string, endsLine bool, now time.Time) (printedLine, bool) {
		pl, ok, cut := a.add(text, endsLine, now)
		assert.Zero(t, cut)
		return pl, ok
	}
	_, ok := add("abc ", false, t0)
	assert.False(t, ok)
	since, pending := a.pending()
	assert.True(t, pending)
	assert.Equal(t, t0, since)
	_, ok = add("def", false, t0.Add(time.Second))
	assert.False(t, ok)
	pl, ok := add(" ghi\r\n", false, t0.Add(2*time.Second))
	require.True(t, ok)
	assert.Equal(t, printedLine{text: "abc def ghi", at: t0}, pl, "the time of the first part")
	_, pending = a.pending()
	assert.False(t, pending)

	pl, ok = add("joined", true, t0)
	require.True(t, ok)
	assert.Equal(t, "joined", pl.text)
	_, ok = add("\n\n", false, t0)
	assert.False(t, ok, "blank lines are dropped")
	_, ok = add("   ", true, t0)
	assert.False(t, ok)
	pl, ok = add("\nTop 10:\n", false, t0)
	require.True(t, ok)
	assert.Equal(t, "Top 10:", pl.text)

	long := strings.Repeat("x", maxLineBytes)
	pl, ok = add(long, false, t0)
	require.True(t, ok, "a partial line of the most bytes is emitted")
	assert.Len(t, pl.text, maxLineBytes)

	// Beyond the bound: cut, counted, and emitted at once; a UTF-8
	// sequence is not split.
	a = lineAssembler{max: 64}
	_, ok = add(strings.Repeat("y", 60), false, t0)
	require.False(t, ok)
	pl, ok, cut := a.add("ééé and more", false, t0)
	require.True(t, ok)
	assert.Equal(t, strings.Repeat("y", 60)+"éé", pl.text)
	assert.Equal(t, len("ééé and more")-4, cut)
	assert.Zero(t, a.len())
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]version{
		"bpftrace v0.17.0\n":          {0, 17, 0},
		"bpftrace v0.20.0-12-gabcdef": {0, 20, 0},
		"bpftrace v0.21.2-1.fc41":     {0, 21, 2},
		"bpftrace 0.9":                {0, 9, 0},
	} {
		v, err := parseVersion(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, v, in)
	}
	_, err := parseVersion("bpftrace (unknown)")
	assert.Error(t, err)
	assert.True(t, version{0, 12, 9}.less(minVersion))
	assert.False(t, version{0, 17, 0}.less(minVersion))
	assert.False(t, version{1, 0, 0}.less(minVersion))
}

var captureVersion = regexp.MustCompile(`^bpftrace v0\.17\.0`)

func TestCapturedVersion(t *testing.T) {
	b, err := os.ReadFile("testdata/capture/version.txt")
	require.NoError(t, err)
	assert.Regexp(t, captureVersion, string(b), "the testdata names the version it was captured with")
}
