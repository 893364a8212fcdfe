// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package parity

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refText is what ebpf_exporter serves for a counter with a decoded errno
// label, an exp2 histogram and its own series.
func refText(calls, hist int) string {
	return `# HELP ebpf_exporter_ebpfx_syscalls_total exits
# TYPE ebpf_exporter_ebpfx_syscalls_total counter
ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="42",syscall="getppid"} ` + itoa(calls) + `
ebpf_exporter_ebpfx_syscalls_total{errno="ESRCH",pid="42",syscall="getpgid"} 3
# HELP ebpf_exporter_run_queue_latency_seconds latency
# TYPE ebpf_exporter_run_queue_latency_seconds histogram
ebpf_exporter_run_queue_latency_seconds_bucket{le="1e-06"} 1
ebpf_exporter_run_queue_latency_seconds_bucket{le="2e-06"} ` + itoa(hist) + `
ebpf_exporter_run_queue_latency_seconds_bucket{le="+Inf"} ` + itoa(hist) + `
ebpf_exporter_run_queue_latency_seconds_sum 0.5
ebpf_exporter_run_queue_latency_seconds_count ` + itoa(hist) + `
# HELP ebpf_exporter_enabled_configs The set of enabled configs
# TYPE ebpf_exporter_enabled_configs gauge
ebpf_exporter_enabled_configs{name="ebpfx_counters"} 1
# HELP ebpf_exporter_ebpf_program_info Info about ebpf programs
# TYPE ebpf_exporter_ebpf_program_info gauge
ebpf_exporter_ebpf_program_info{config="ebpfx_counters",id="7",program="x",tag="t"} 1
# HELP go_goroutines Number of goroutines
# TYPE go_goroutines gauge
go_goroutines 9
`
}

func itoa(n int) string { return fmtNum(float64(n)) }

func snapText(t *testing.T, s string) Snapshot {
	t.Helper()
	sn, err := FromText(strings.NewReader(s))
	require.NoError(t, err)
	return sn
}

// oursText is what the collector serves for the same maps: errno is the
// decoded label value, bounds the histogram's upper bounds and counts its
// per-bucket (not cumulative) counts, the last one above the last bound.
func oursText(calls int, errno string, bounds []float64, counts []uint64) string {
	var cum uint64
	var hist strings.Builder
	for i, c := range counts {
		cum += c
		le := "+Inf"
		if i < len(bounds) {
			le = fmtNum(bounds[i])
		}
		hist.WriteString(`ebpf_exporter_run_queue_latency_seconds_bucket{le="` + le + `"} ` + itoa(int(cum)) + "\n")
	}
	return `# TYPE ebpf_exporter_ebpfx_syscalls_total counter
ebpf_exporter_ebpfx_syscalls_total{errno="` + errno + `",pid="42",syscall="getppid"} ` + itoa(calls) + ` 1700000000123
ebpf_exporter_ebpfx_syscalls_total{errno="ESRCH",pid="42",syscall="getpgid"} 3 1700000000123
# TYPE ebpf_exporter_run_queue_latency_seconds histogram
` + hist.String() + `ebpf_exporter_run_queue_latency_seconds_sum 0.5
ebpf_exporter_run_queue_latency_seconds_count ` + itoa(int(cum)) + `
# TYPE ebpf_exporter_enabled_configs gauge
ebpf_exporter_enabled_configs{name="ebpfx_counters"} 1
`
}

func ours(t *testing.T, calls int, errno string, bounds []float64, counts []uint64) Snapshot {
	t.Helper()
	return snapText(t, oursText(calls, errno, bounds, counts))
}

var opts = Options{
	Exact:   func(s *Series) bool { return s.Labels["pid"] == "42" },
	RefOnly: []string{"ebpf_exporter_ebpf_program_info"},
	Ignore:  func(f string) bool { return strings.HasPrefix(f, "go_") },
	Configs: map[string]string{
		"ebpf_exporter_ebpfx_syscalls_total":      "ebpfx_counters",
		"ebpf_exporter_run_queue_latency_seconds": "runqlat",
	},
}

func TestFromText(t *testing.T) {
	sn := snapText(t, refText(5, 4))
	s := sn[`ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="42",syscall="getppid"}`]
	require.NotNil(t, s)
	assert.Equal(t, "counter", s.Type)
	assert.Equal(t, 5.0, s.Value)
	h := sn[`ebpf_exporter_run_queue_latency_seconds{}`]
	require.NotNil(t, h)
	assert.Equal(t, []Bucket{{1e-6, 1}, {2e-6, 4}, {math.Inf(1), 4}}, h.Bucket)
	assert.Equal(t, uint64(4), h.Count)
	assert.Equal(t, 0.5, h.Sum)
	assert.Equal(t, []string{"ebpf_exporter_ebpf_program_info", "ebpf_exporter_ebpfx_syscalls_total",
		"ebpf_exporter_enabled_configs", "ebpf_exporter_run_queue_latency_seconds", "go_goroutines"}, sn.Families())
}

// A timestamp (the collector's send_timestamps) is read, and is not part of the series.
func TestFromTextTimestamp(t *testing.T) {
	sn := ours(t, 5, "ok", []float64{1e-6, 2e-6}, []uint64{1, 3, 0})
	s := sn[`ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="42",syscall="getppid"}`]
	require.NotNil(t, s)
	assert.Equal(t, time.UnixMilli(1700000000123), s.Time)
	assert.Equal(t, 5.0, s.Value)
	assert.True(t, sn[`ebpf_exporter_enabled_configs{name="ebpfx_counters"}`].Time.IsZero())
	assert.Equal(t, []Bucket{{1e-6, 1}, {2e-6, 4}, {math.Inf(1), 4}}, sn[`ebpf_exporter_run_queue_latency_seconds{}`].Bucket)
}

func TestCompareParity(t *testing.T) {
	// The histogram moves between A and B (background activity); ours lies between.
	a, b := snapText(t, refText(5, 3)), snapText(t, refText(5, 6))
	r := Compare(Round{}, Round{a, ours(t, 5, "ok", []float64{1e-6, 2e-6}, []uint64{1, 3, 0}), b}, opts)
	assert.Empty(t, r.Diffs)
	require.Len(t, r.Rows, 4)
	for _, rw := range r.Rows {
		assert.True(t, rw.OK, rw.Family)
	}
	require.Len(t, r.Exact, 2)
	assert.Equal(t, ExactRow{Config: "ebpfx_counters", Family: "ebpf_exporter_ebpfx_syscalls_total",
		Labels: `errno="ok",pid="42",syscall="getppid"`, Ref: 5, Ours: 5, OK: true}, r.Exact[1])
	md := r.Markdown()
	assert.Contains(t, md, "| `ebpf_exporter_run_queue_latency_seconds` | 3 | 1e-06, 2e-06, +Inf | yes |")
	assert.Contains(t, md, "| runqlat | `ebpf_exporter_run_queue_latency_seconds` | histogram | 1 / 1 | 3 … 6 | 4 | yes |")
	assert.Contains(t, md, "| ebpfx_counters | `ebpf_exporter_ebpfx_syscalls_total` | `errno=\"ok\",pid=\"42\",syscall=\"getppid\"` | 5 | 5 | yes |")
}

// Each way ours can differ from ebpf_exporter is reported.
func TestCompareDetectsDifferences(t *testing.T) {
	a, b := snapText(t, refText(5, 3)), snapText(t, refText(5, 6))
	okBounds, okCounts := []float64{1e-6, 2e-6}, []uint64{1, 3, 0}
	for _, c := range []struct {
		name string
		ours Snapshot
		opt  Options
		want []string
	}{
		{"label decoder mismatch", ours(t, 5, "0", okBounds, okCounts), opts, []string{
			`series ebpf_exporter_ebpfx_syscalls_total{errno="0",pid="42",syscall="getppid"}: only in ours`,
			`series ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="42",syscall="getppid"}: in ebpf_exporter before our collection, missing in ours`,
		}},
		{"exact series off by one", ours(t, 6, "ok", okBounds, okCounts), opts, []string{
			`series ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="42",syscall="getppid"}: value 6, ebpf_exporter 5 then 5 (must be equal)`,
		}},
		{"bucket bounds", ours(t, 5, "ok", []float64{1e-6, 2.5e-6}, okCounts), opts, []string{
			`series ebpf_exporter_run_queue_latency_seconds{}: bucket bounds [1e-06 2.5e-06 +Inf], ebpf_exporter [1e-06 2e-06 +Inf]`,
		}},
		{"count outside [A, B]", ours(t, 5, "ok", okBounds, []uint64{1, 6, 0}), opts, []string{
			`series ebpf_exporter_run_queue_latency_seconds{}: count 7 outside ebpf_exporter's [3, 6]`,
		}},
		{"unlisted reference-only family", ours(t, 5, "ok", okBounds, okCounts), Options{Exact: opts.Exact, Ignore: opts.Ignore}, []string{
			`family ebpf_exporter_ebpf_program_info: only in ebpf_exporter`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Compare(Round{}, Round{a, c.ours, b}, c.opt)
			assert.ElementsMatch(t, c.want, r.Diffs)
			assert.Contains(t, r.Markdown(), "**no**")
		})
	}
}

// A series that appears in B only came after our collection: not a difference.
func TestCompareLateSeries(t *testing.T) {
	a := snapText(t, refText(5, 3))
	b := snapText(t, refText(5, 6)+`ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="43",syscall="getppid"} 1
`)
	r := Compare(Round{}, Round{a, ours(t, 5, "ok", []float64{1e-6, 2e-6}, []uint64{1, 3, 0}), b}, opts)
	assert.Empty(t, r.Diffs)
	assert.Equal(t, 1, r.Late)
}

// Each side counts from its own start: background series are compared as
// increases since a baseline round, exact ones as they are.
func TestCompareBaseline(t *testing.T) {
	bounds := []float64{1e-6, 2e-6}
	// ebpf_exporter started earlier: 100 more observations before the baseline.
	base := Round{
		A:    snapText(t, refText(5, 103)),
		Ours: ours(t, 5, "ok", bounds, []uint64{1, 2, 0}),
		B:    snapText(t, refText(5, 104)),
	}
	// Since then, ebpf_exporter saw 10 to 14 more (the spans between the
	// scrapes); ours, read in between, 12 more.
	cur := Round{
		A:    snapText(t, refText(5, 114)),
		Ours: ours(t, 5, "ok", bounds, []uint64{1, 14, 0}),
		B:    snapText(t, refText(5, 117)),
	}
	r := Compare(base, cur, opts)
	assert.Empty(t, r.Diffs)
	assert.Contains(t, r.Markdown(), "| runqlat | `ebpf_exporter_run_queue_latency_seconds` | histogram | 1 / 1 | 10 … 14 | 12 | yes |")
	assert.Contains(t, r.Markdown(), "| — | `ebpf_exporter_enabled_configs` | gauge | 1 / 1 | 1 | 1 | yes |", "gauges as they are")

	// A series ebpf_exporter counted before ours attached, and not since,
	// is not a difference; one that moved after the baseline is.
	early := `ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="7",syscall="getppid"} 2
`
	withEarly := cur
	withEarly.A = snapText(t, refText(5, 114)+early)
	withEarly.B = snapText(t, refText(5, 117)+early)
	base2 := base
	base2.B = snapText(t, refText(5, 104)+early)
	r = Compare(base2, withEarly, opts)
	assert.Empty(t, r.Diffs)
	assert.Equal(t, 1, r.Early)
	base2.B = snapText(t, refText(5, 104)+strings.Replace(early, "} 2", "} 1", 1))
	assert.Equal(t, []string{`series ebpf_exporter_ebpfx_syscalls_total{errno="ok",pid="7",syscall="getppid"}: in ebpf_exporter before our collection, missing in ours`},
		Compare(base2, withEarly, opts).Diffs)

	// Without the baseline the absolute counts would not line up ...
	assert.NotEmpty(t, Compare(Round{}, cur, opts).Diffs)
	// ... and an increase beyond what ebpf_exporter saw is reported.
	cur.Ours = ours(t, 5, "ok", bounds, []uint64{1, 20, 0})
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: count increased by 18, outside ebpf_exporter's [10, 14]"},
		Compare(base, cur, opts).Diffs)
}

// timedHist is a latency histogram with bounds 1, 2, 4 and 8 µs, its
// cumulative counts and its sum.
func timedHist(t *testing.T, cum []uint64, sum string) Snapshot {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("# TYPE ebpf_exporter_run_queue_latency_seconds histogram\n")
	for i, le := range []string{"1e-06", "2e-06", "4e-06", "8e-06", "+Inf"} {
		sb.WriteString(`ebpf_exporter_run_queue_latency_seconds_bucket{le="` + le + `"} ` + itoa(int(cum[i])) + "\n")
	}
	sb.WriteString("ebpf_exporter_run_queue_latency_seconds_sum " + sum + "\n")
	sb.WriteString("ebpf_exporter_run_queue_latency_seconds_count " + itoa(int(cum[4])) + "\n")
	return snapText(t, sb.String())
}

// A timed histogram's observations may land a bucket apart, its buckets and
// sum be a little off beyond; its count may not.
func TestCompareTimed(t *testing.T) {
	ref := timedHist(t, []uint64{10, 50, 90, 100, 100}, "0.0003")
	cur := Round{A: ref, B: ref, Ours: timedHist(t, []uint64{5, 20, 60, 95, 100}, "0.0003")}
	require.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=1e-06 5 outside ebpf_exporter's [10, 10]"},
		Compare(Round{}, cur, opts).Diffs)
	timed := opts
	timed.Timed = func(s *Series) bool { return s.Family == "ebpf_exporter_run_queue_latency_seconds" }
	timed.Tolerance = 0.01
	assert.Empty(t, Compare(Round{}, cur, timed).Diffs, "each a bucket above ebpf_exporter's")
	cur.Ours = timedHist(t, []uint64{0, 5, 50, 100, 100}, "0.0003")
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=2e-06 5 outside ebpf_exporter's [9, 91]"},
		Compare(Round{}, cur, timed).Diffs, "two buckets above, beyond 1 % of the count")
	cur.Ours = timedHist(t, []uint64{10, 50, 90, 99, 99}, "0.0003")
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: count 99 outside ebpf_exporter's [100, 100]"},
		Compare(Round{}, cur, timed).Diffs)
}

// A timed histogram of few observations may have TimedSlack of them further
// off, where its Tolerance alone allows none.
func TestCompareTimedSlack(t *testing.T) {
	ref := timedHist(t, []uint64{1, 1, 4, 5, 5}, "0.00002")
	cur := Round{A: ref, B: ref, Ours: timedHist(t, []uint64{0, 0, 3, 5, 5}, "0.00002")}
	timed := opts
	timed.Timed = func(s *Series) bool { return s.Family == "ebpf_exporter_run_queue_latency_seconds" }
	timed.Tolerance = 0.02
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=2e-06 0 outside ebpf_exporter's [0.9, 4.1]"},
		Compare(Round{}, cur, timed).Diffs)
	timed.TimedSlack = 1
	assert.Empty(t, Compare(Round{}, cur, timed).Diffs)
	cur.Ours = timedHist(t, []uint64{0, 0, 0, 2, 5}, "0.00002")
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=8e-06 2 outside ebpf_exporter's [3, 6]"},
		Compare(Round{}, cur, timed).Diffs)

	// The sum: TimedSlack observations as large as any (8 µs, the lowest
	// bound holding all 5), where the Tolerance alone is less.
	timed.Tolerance = 1e-7
	cur.Ours = timedHist(t, []uint64{1, 1, 4, 5, 5}, "0.000027")
	assert.Empty(t, Compare(Round{}, cur, timed).Diffs)
	cur.Ours = timedHist(t, []uint64{1, 1, 4, 5, 5}, "0.000029")
	d := Compare(Round{}, cur, timed).Diffs
	require.Len(t, d, 1)
	assert.Contains(t, d[0], "series ebpf_exporter_run_queue_latency_seconds{}: sum 2.9e-05 outside ebpf_exporter's")
}

// A family ours lacks whose series appear in B only (sparse events after
// our collection, kfree_skb) is late, or that have not moved since the
// baseline early, as a series is; one that moved is a difference.
func TestCompareLateFamily(t *testing.T) {
	sparse := `# TYPE ebpf_exporter_kfree_skb_total counter
ebpf_exporter_kfree_skb_total{kstack="x"} 1
`
	a, b := snapText(t, refText(5, 3)), snapText(t, refText(5, 6)+sparse)
	o := ours(t, 5, "ok", []float64{1e-6, 2e-6}, []uint64{1, 3, 0})
	r := Compare(Round{}, Round{a, o, b}, opts)
	assert.Empty(t, r.Diffs)
	assert.Equal(t, 1, r.Late)

	a = snapText(t, refText(5, 3)+sparse)
	assert.Equal(t, []string{"family ebpf_exporter_kfree_skb_total: only in ebpf_exporter"},
		Compare(Round{}, Round{a, o, b}, opts).Diffs)
	base := Round{A: a, Ours: o, B: b}
	r = Compare(base, Round{a, o, b}, opts)
	assert.Empty(t, r.Diffs)
	assert.Equal(t, 1, r.Early)
}

// Where buckets are narrower than the other side's program's run time, a
// timed histogram's observations may be TimedShift apart: softirq-latency's
// count up to 2 µs came out 4 in ours where ebpf_exporter's up to 1 µs was 6.
func TestCompareTimedShift(t *testing.T) {
	ref := timedHist(t, []uint64{6, 8, 9, 10, 10}, "0.00002")
	cur := Round{A: ref, B: ref, Ours: timedHist(t, []uint64{0, 4, 8, 10, 10}, "0.00002")}
	timed := opts
	timed.Timed = func(s *Series) bool { return s.Family == "ebpf_exporter_run_queue_latency_seconds" }
	timed.Tolerance = 0.02
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=2e-06 4 outside ebpf_exporter's [5.8, 9.2]"},
		Compare(Round{}, cur, timed).Diffs, "a bucket apart is not enough")
	timed.TimedShift = 2e-6
	assert.Empty(t, Compare(Round{}, cur, timed).Diffs, "2 µs later: up to 2 µs in ours is up to 0 in ebpf_exporter's")
	// The shift is time, not buckets: it does not widen the wide buckets.
	cur.Ours = timedHist(t, []uint64{6, 8, 8, 8, 10}, "0.00002")
	assert.Equal(t, []string{"series ebpf_exporter_run_queue_latency_seconds{}: bucket le=8e-06 8 outside ebpf_exporter's [8.8, 10.2]"},
		Compare(Round{}, cur, timed).Diffs)
}

func TestShifted(t *testing.T) {
	bs := []Bucket{{LE: 1e-6}, {LE: 2e-6}, {LE: 4e-6}, {LE: 8e-6}, {LE: 16e-6}, {LE: math.Inf(1)}}
	for _, c := range []struct {
		i            int
		shift        float64
		below, above int
	}{
		{0, 0, -1, 1}, {2, 0, 1, 3}, {5, 0, 4, 6},
		{1, 2e-6, -1, 2}, {2, 2e-6, 1, 3}, {2, 2.5e-6, 0, 3}, {4, 4e-6, 3, 5}, {5, 1, 4, 6},
	} {
		below, above := shifted(bs, c.i, c.shift)
		assert.Equal(t, []int{c.below, c.above}, []int{below, above}, "bucket %d shifted by %g", c.i, c.shift)
	}
}

// Cgroups ebpf_exporter could not name (made after its start on a hybrid
// cgroup host) are compared in aggregate; the ones it named as they are.
func TestFoldUnknownCgroups(t *testing.T) {
	text := func(lines ...string) Snapshot {
		return snapText(t, "# TYPE ebpf_exporter_cgroup_sched_migrations_total counter\n"+strings.Join(lines, "\n")+"\n")
	}
	const fam = "ebpf_exporter_cgroup_sched_migrations_total"
	known := func(n int) string { return fam + `{cgroup="/sys/fs/cgroup/unified/system.slice"} ` + itoa(n) }
	ref := text(known(5), fam+`{cgroup="unknown_cgroup_id:4242"} 3`, fam+`{cgroup="unknown_cgroup_id:4243"} 1`)
	oursSn := text(known(5), fam+`{cgroup="/sys/fs/cgroup/unified/machine.slice/libpod-1.scope"} 3`,
		fam+`{cgroup="/sys/fs/cgroup/unified/machine.slice/libpod-2.scope"} 1`)
	cur := Round{A: ref, Ours: oursSn, B: ref}
	require.Len(t, Compare(Round{}, cur, opts).Diffs, 4, "unfolded, two series on each side differ")
	FoldUnknownCgroups(&cur)
	assert.Empty(t, Compare(Round{}, cur, opts).Diffs)
	assert.Equal(t, 4.0, cur.Ours[fam+`{cgroup="unknown_cgroup_id:*"}`].Value, "ours' two summed")
	assert.Equal(t, 4.0, cur.B[fam+`{cgroup="unknown_cgroup_id:*"}`].Value, "ebpf_exporter's two summed")

	// The events of the unnamed cgroups must still add up, and a cgroup
	// ebpf_exporter named is not folded.
	cur = Round{A: ref, Ours: text(known(4), fam+`{cgroup="/sys/fs/cgroup/unified/new.scope"} 5`), B: ref}
	FoldUnknownCgroups(&cur)
	assert.ElementsMatch(t, []string{
		`series ebpf_exporter_cgroup_sched_migrations_total{cgroup="/sys/fs/cgroup/unified/system.slice"}: value 4 outside ebpf_exporter's [5, 5]`,
		`series ebpf_exporter_cgroup_sched_migrations_total{cgroup="unknown_cgroup_id:*"}: value 5 outside ebpf_exporter's [4, 4]`,
	}, Compare(Round{}, cur, opts).Diffs)

	// Without unknown ids nothing is folded.
	cur = Round{A: text(known(5)), Ours: text(known(5), fam+`{cgroup="/x"} 1`), B: text(known(5))}
	FoldUnknownCgroups(&cur)
	assert.Equal(t, []string{`series ebpf_exporter_cgroup_sched_migrations_total{cgroup="/x"}: only in ours`}, Compare(Round{}, cur, opts).Diffs)
}

// A timed histogram's sum may be TimedShift per observation apart: ours'
// BLOCK_SOFTIRQ sum came out 14 µs above ebpf_exporter's.
func TestCompareTimedShiftSum(t *testing.T) {
	ref := timedHist(t, []uint64{6, 8, 9, 10, 10}, "0.00002")
	cur := Round{A: ref, B: ref, Ours: timedHist(t, []uint64{6, 8, 9, 10, 10}, "0.000055")}
	timed := opts
	timed.Timed = func(s *Series) bool { return s.Family == "ebpf_exporter_run_queue_latency_seconds" }
	timed.Tolerance = 0.02
	timed.TimedSlack = 1
	d := Compare(Round{}, cur, timed).Diffs
	require.Len(t, d, 1, "8 µs of slack is not 35 µs")
	assert.Contains(t, d[0], "sum 5.5e-05 outside ebpf_exporter's")
	timed.TimedShift = 4e-6
	assert.Empty(t, Compare(Round{}, cur, timed).Diffs, "10 observations 4 µs apart: 40 µs more")
}
