// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package parity compares what Cloudflare's ebpf_exporter serves on /metrics
// with what the collector serves on /metrics for the same configs (the
// ebpf_exporter receiver into the Prometheus exporter, config/ebpf_exporter.yaml),
// series by series, for the side-by-side test
// (test/e2e/ebpfexporter_parity_test.go). Both sides are parsed from
// Prometheus text exposition alike: nothing is renamed.
//
// Both sides read their own copy of the same programs' maps, from their own
// start, at different moments. A round takes two reference scrapes, A before
// and B after one collection of ours; two rounds, a baseline once both run
// and one after the workload, bound every cumulative value with no
// tolerance, whatever else runs on the machine: ours' increase between its
// collections lies between ebpf_exporter's increases over the shorter
// and the longer span (Compare). Series named by an Exact filter (the
// test's own workload) must be equal on all three of the last round.
package parity

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Namespace is ebpf_exporter's metric prefix: a config's metric <name> is
// served as ebpf_exporter_<name>.
const Namespace = "ebpf_exporter"

// Bucket is a histogram's cumulative bucket: observations <= LE.
type Bucket struct {
	LE    float64
	Count uint64
}

// Series is one Prometheus series.
type Series struct {
	Family string // Prometheus name, ebpf_exporter_<name>
	Type   string // counter, gauge, histogram
	Labels map[string]string
	Value  float64  // counter, gauge
	Bucket []Bucket // histogram, cumulative, +Inf last
	Count  uint64   // histogram
	Sum    float64  // histogram
	// Time is the sample's timestamp where the exposition carries one
	// (the collector's Prometheus exporter with send_timestamps: the
	// collection's time); zero otherwise. It is not compared.
	Time time.Time
}

// Key names the series: its family and sorted labels.
func (s *Series) Key() string {
	return s.Family + "{" + LabelString(s.Labels) + "}"
}

// LabelString is name="value",... sorted by name.
func LabelString(labels map[string]string) string {
	names := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.Quote(labels[n])
	}
	return strings.Join(parts, ",")
}

// total is a series' headline figure: the value, or a histogram's count.
func (s *Series) total() float64 {
	if s.Type == "histogram" {
		return float64(s.Count)
	}
	return s.Value
}

// Snapshot is a set of series by key.
type Snapshot map[string]*Series

func (sn Snapshot) add(s *Series) { sn[s.Key()] = s }

// Families returns the family names that have at least one series.
func (sn Snapshot) Families() []string {
	set := map[string]bool{}
	for _, s := range sn {
		set[s.Family] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// FromText parses Prometheus text exposition (either side's /metrics).
func FromText(r io.Reader) (Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	sn := Snapshot{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			s := &Series{Family: name, Labels: map[string]string{}}
			if m.TimestampMs != nil {
				s.Time = time.UnixMilli(m.GetTimestampMs())
			}
			for _, lp := range m.GetLabel() {
				s.Labels[lp.GetName()] = lp.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Type, s.Value = "counter", m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Type, s.Value = "gauge", m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				s.Type, s.Value = "gauge", m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				s.Type, s.Count, s.Sum = "histogram", h.GetSampleCount(), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					s.Bucket = append(s.Bucket, Bucket{LE: b.GetUpperBound(), Count: b.GetCumulativeCount()})
				}
				if n := len(s.Bucket); n == 0 || !math.IsInf(s.Bucket[n-1].LE, 1) {
					s.Bucket = append(s.Bucket, Bucket{LE: math.Inf(1), Count: s.Count})
				}
			default:
				continue // summaries: ebpf_exporter has none
			}
			sn.add(s)
		}
	}
	return sn, nil
}

// Options tune Compare.
type Options struct {
	// Exact names the series that only the test's own workload changes:
	// they must be equal in A, ours and B.
	Exact func(*Series) bool
	// RefOnly lists the families only ebpf_exporter has (documented
	// differences); any other family must be on both sides.
	RefOnly []string
	// Ignore says which reference families are not ebpf_exporter's at all
	// (go_*, process_*, promhttp_*).
	Ignore func(family string) bool
	// Configs maps a family to its config, for the report's config column.
	Configs map[string]string
	// Timed names histograms of measured time (runqlat): each side's
	// programs time the same events, but each also runs between the other's
	// two timestamps, so an observation can land a bucket apart: ours'
	// cumulative count up to a bound lies between ebpf_exporter's up to the
	// bounds below and above it. (Attached in another order on two
	// tracepoints, one side's latencies are longer by the other's program's
	// run time: softirq-latency's counts up to 8 µs came out 4 where
	// ebpf_exporter's were 10 to 40.) Their count is compared as any other;
	// their buckets may be further off by Tolerance (a fraction) of the
	// count or by TimedSlack observations, their sum by
	// Tolerance of it or by TimedSlack times the largest observation either
	// side ever made (the lowest finite bound holding every one), whichever
	// is more. TimedSlack is for few observations: 2 % of 5 is no
	// observation at all, yet one of 5 lands a bucket apart as surely as
	// one of 5000, and on a shared VM a vCPU stalled between the two
	// programs' timestamps of one event skews that observation on one side
	// by the stall, as large as an observation gets (a BLOCK_SOFTIRQ entry
	// latency sum of a few observations came out 115 µs, 15 %, above
	// ebpf_exporter's in ours).
	Timed      func(*Series) bool
	Tolerance  float64
	TimedSlack float64
	// TimedShift widens "a bucket apart" where buckets are narrower than
	// the other side's program's run time, which one side's observations
	// may all be longer by: ours' cumulative count up to bound le lies
	// between ebpf_exporter's up to the highest bound at most le -
	// TimedShift and up to the lowest at least le + TimedShift (in the
	// histogram's unit), where that is wider than a bucket. At exp2
	// microsecond buckets a bucket is 1 µs wide: softirq-latency's
	// SCHED_SOFTIRQ count up to 2 µs came out 4 in ours where
	// ebpf_exporter's up to 1 µs was 5.38 and more. The sum may be off by
	// TimedShift per observation besides.
	TimedShift float64
	// Sampled names counters of perf samples (a perf_event program at a
	// fixed frequency): each side opens its own perf events, whose timers
	// tick out of phase, so their counts over one window differ by a few
	// samples per CPU. Their increase may be off by SampleSlack samples.
	Sampled     func(*Series) bool
	SampleSlack float64
}

// Row is one family in the report's table.
type Row struct {
	Config, Family, Type string
	RefSeries, OurSeries int // series in the last round's B and ours
	// Totals over the family's series (values, or histogram counts), as
	// increases since the baseline round: ebpf_exporter's bounds and ours.
	RefLo, RefHi, Ours float64
	OK                 bool
}

// ExactRow is one of the test's own series.
type ExactRow struct {
	Config, Family, Labels string
	Ref, Ours              float64
	OK                     bool
}

// BoundsRow is a histogram family's bucket bounds (of its first series).
type BoundsRow struct {
	Family   string
	Ours     []float64
	Same     bool // ebpf_exporter's are the same, for every series both have
	RefFound bool
}

// Report is Compare's result: Diffs empty means parity.
type Report struct {
	Diffs  []string
	Rows   []Row
	Exact  []ExactRow
	Bounds []BoundsRow
	Late   int // series that appeared in B only, after our collection
	Early  int // ebpf_exporter's series that ours lacks, unchanged since the baseline: from before ours attached
}

// Round is one moment of comparison: ebpf_exporter's scrape A, then one
// collection of ours, then ebpf_exporter's scrape B.
type Round struct{ A, Ours, B Snapshot }

// Compare checks round cur against the baseline round base, taken once
// both sides ran (an empty Round when both started from nothing). Each side
// counts from its own start, so a cumulative value is compared as its
// increase since the baseline: what ours counted between its two
// collections lies between what ebpf_exporter counted between base.B and
// cur.A and what it counted between base.A and cur.B. Exact series are
// compared as they are: cur.A, cur.Ours and cur.B equal.
func Compare(base, cur Round, opt Options) Report {
	var r Report
	ignore := func(f string) bool { return opt.Ignore != nil && opt.Ignore(f) }
	diff := func(format string, args ...any) { r.Diffs = append(r.Diffs, fmt.Sprintf(format, args...)) }
	refOnly := map[string]bool{}
	for _, f := range opt.RefOnly {
		refOnly[f] = true
	}
	bad := map[string]bool{} // families with a difference

	// Families.
	ourFams, refFams := map[string]bool{}, map[string]bool{}
	for _, f := range cur.Ours.Families() {
		ourFams[f] = true
	}
	for _, f := range cur.B.Families() {
		if !ignore(f) {
			refFams[f] = true
		}
	}
	// early: ebpf_exporter's series k has not moved since the baseline, so
	// all it counted may have come before ours attached. late: it appeared
	// in B only, after our collection (sparse events).
	early := func(k string, s *Series) bool { return s.Type != "gauge" && s.total() == base.B.total(k) }
	late := func(k string) bool { _, before := cur.A[k]; return !before }
	// A family ours lacks is a difference unless each of its series is
	// early or late, as a series ours lacks in a family both have.
	type famCount struct {
		early, late int
		moved       bool // a series that is neither
	}
	refOnlyFam := map[string]*famCount{}
	for k, s := range cur.B {
		if !refFams[s.Family] || ourFams[s.Family] || refOnly[s.Family] {
			continue
		}
		n := refOnlyFam[s.Family]
		if n == nil {
			n = &famCount{}
			refOnlyFam[s.Family] = n
		}
		switch {
		case late(k):
			n.late++
		case early(k, s):
			n.early++
		default:
			n.moved = true
		}
	}
	for f, n := range refOnlyFam {
		if n.moved {
			diff("family %s: only in ebpf_exporter", f)
			bad[f] = true
			continue
		}
		r.Early += n.early
		r.Late += n.late
	}
	for f := range ourFams {
		if !refFams[f] {
			diff("family %s: only in ours", f)
			bad[f] = true
		} else if refOnly[f] {
			diff("family %s: listed as ebpf_exporter-only, but ours has it", f)
		}
	}

	// Series.
	exact := func(s *Series) bool { return opt.Exact != nil && opt.Exact(s) }
	timed := func(s *Series) float64 {
		if opt.Timed != nil && opt.Timed(s) {
			return opt.Tolerance
		}
		return 0
	}
	sampled := func(s *Series) float64 {
		if opt.Sampled != nil && opt.Sampled(s) {
			return opt.SampleSlack
		}
		return 0
	}
	for k, s := range cur.Ours {
		if _, ok := cur.B[k]; !ok {
			if refFams[s.Family] {
				diff("series %s: only in ours", k)
				bad[s.Family] = true
			}
			continue
		}
		if msg := check(base, cur, k, exact(s), timed(s), opt.TimedSlack, opt.TimedShift, sampled(s)); msg != "" {
			diff("series %s: %s", k, msg)
			bad[s.Family] = true
		}
	}
	for k, s := range cur.A {
		if _, ok := cur.Ours[k]; !ok && ourFams[s.Family] {
			if early(k, s) {
				r.Early++
				continue
			}
			diff("series %s: in ebpf_exporter before our collection, missing in ours", k)
			bad[s.Family] = true
		}
	}
	for k, s := range cur.B {
		if _, ok := cur.Ours[k]; !ok && ourFams[s.Family] && late(k) {
			r.Late++
		}
	}

	// The table.
	fams := map[string]*Row{}
	row := func(f, typ string) *Row {
		if fams[f] == nil {
			fams[f] = &Row{Family: f, Type: typ, Config: opt.Configs[f]}
		}
		return fams[f]
	}
	for k, s := range cur.Ours {
		rw := row(s.Family, s.Type)
		rw.OurSeries++
		rw.Ours += s.total() - since(base.Ours, s, k)
	}
	for k, s := range cur.B {
		if refFams[s.Family] {
			rw := row(s.Family, s.Type)
			rw.RefSeries++
			rw.RefLo += cur.A.total(k) - since(base.B, s, k)
			rw.RefHi += s.total() - since(base.A, s, k)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(fams)) {
		rw := fams[f]
		rw.OK = !bad[f]
		r.Rows = append(r.Rows, *rw)
	}
	slices.SortStableFunc(r.Rows, func(x, y Row) int { return strings.Compare(x.Config, y.Config) })

	seen := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(cur.Ours)) {
		s := cur.Ours[k]
		if s.Type != "histogram" {
			continue
		}
		i, ok := seen[s.Family]
		if !ok {
			i = len(r.Bounds)
			seen[s.Family] = i
			r.Bounds = append(r.Bounds, BoundsRow{Family: s.Family, Ours: bounds(s.Bucket), Same: true})
		}
		if rb, ok := cur.B[k]; ok {
			r.Bounds[i].RefFound = true
			r.Bounds[i].Same = r.Bounds[i].Same && slices.Equal(bounds(s.Bucket), bounds(rb.Bucket))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cur.Ours)) {
		s := cur.Ours[k]
		if !exact(s) {
			continue
		}
		er := ExactRow{Config: opt.Configs[s.Family], Family: s.Family, Labels: LabelString(s.Labels), Ours: s.total()}
		if _, ok := cur.B[k]; ok {
			er.Ref = cur.B.total(k)
			er.OK = check(base, cur, k, true, 0, 0, 0, 0) == ""
		}
		r.Exact = append(r.Exact, er)
	}
	return r
}

// total is the series' headline figure, 0 where the snapshot lacks it.
func (sn Snapshot) total(k string) float64 {
	if s, ok := sn[k]; ok {
		return s.total()
	}
	return 0
}

// since is what the table subtracts from series s: its baseline value, or
// nothing for a gauge (shown as it is).
func since(base Snapshot, s *Series, k string) float64 {
	if s.Type == "gauge" {
		return 0
	}
	return base.total(k)
}

// check compares series k of ours with ebpf_exporter's (both have it in
// cur): "" or what is wrong. tol and slack are a timed histogram's
// tolerance (a fraction) and absolute slack (observations).
func check(base, cur Round, k string, exact bool, tol, slack, shift, samples float64) string {
	ours, b := cur.Ours[k], cur.B[k]
	if ours.Type != b.Type {
		return fmt.Sprintf("type %s, ebpf_exporter %s", ours.Type, b.Type)
	}
	if ours.Type == "gauge" {
		// Gauges (enabled_configs) do not move: equal to B.
		if ours.Value != b.Value {
			return fmt.Sprintf("value %v, ebpf_exporter %v", ours.Value, b.Value)
		}
		return ""
	}
	if ours.Type == "histogram" {
		if les, refLes := bounds(ours.Bucket), bounds(b.Bucket); !slices.Equal(les, refLes) {
			return fmt.Sprintf("bucket bounds %v, ebpf_exporter %v", les, refLes)
		}
	}
	if exact {
		if _, ok := cur.A[k]; !ok {
			return "not in ebpf_exporter's scrape before our collection"
		}
		base = Round{} // as they are
	}
	// Each figure of the series: value, or count, sum and every bucket.
	fig := func(sn Snapshot, i int) float64 {
		s, ok := sn[k]
		if !ok {
			return 0
		}
		switch {
		case s.Type == "counter":
			return s.Value
		case i == -2:
			return float64(s.Count)
		case i == -1:
			return s.Sum
		case i < len(s.Bucket):
			return float64(s.Bucket[i].Count)
		}
		return 0
	}
	name := func(i int) string {
		switch {
		case ours.Type == "counter":
			return "value"
		case i == -2:
			return "count"
		case i == -1:
			return "sum"
		}
		return fmt.Sprintf("bucket le=%g", ours.Bucket[i].LE)
	}
	last := -2
	if ours.Type == "histogram" {
		last = len(ours.Bucket) - 1
	}
	count := fig(cur.Ours, -2) - fig(base.Ours, -2)
	for i := -2; i <= last; i++ {
		v := fig(cur.Ours, i) - fig(base.Ours, i)
		lo, hi := fig(cur.A, i)-fig(base.B, i), fig(cur.B, i)-fig(base.A, i)
		if tol > 0 && i >= 0 {
			// A bucket apart either way, or shift apart where that is
			// wider: ours' cumulative count up to bound i lies between
			// ebpf_exporter's up to bounds below and above it.
			below, above := shifted(ours.Bucket, i, shift)
			lo = 0
			if below >= 0 {
				lo = fig(cur.A, below) - fig(base.B, below)
			}
			if above <= last {
				hi = fig(cur.B, above) - fig(base.A, above)
			}
		}
		if tol > 0 && i != -2 {
			d := max(tol*count, slack)
			if i == -1 {
				// Every observation may be shift apart, too.
				d = max(tol*max(math.Abs(lo), math.Abs(hi)), slack*max(largest(ours), largest(b))) + count*shift
			}
			lo, hi = lo-d, hi+d
		}
		if samples > 0 && i == -2 {
			lo, hi = lo-samples, hi+samples
		}
		switch {
		case exact && (lo != v || v != hi):
			return fmt.Sprintf("%s %v, ebpf_exporter %v then %v (must be equal)", name(i), v, lo, hi)
		case v < lo || v > hi:
			if base.A == nil {
				return fmt.Sprintf("%s %v outside ebpf_exporter's [%v, %v]", name(i), v, lo, hi)
			}
			return fmt.Sprintf("%s increased by %v, outside ebpf_exporter's [%v, %v]", name(i), v, lo, hi)
		}
	}
	return ""
}

// shifted returns the buckets a timed observation in bucket i may have
// landed in on the other side: below is the highest index under i whose
// bound is at most bs[i].LE - shift (-1: none, from zero), above the lowest
// over i whose bound is at least bs[i].LE + shift (len(bs): past the last).
// With no shift they are i-1 and i+1: a bucket apart.
func shifted(bs []Bucket, i int, shift float64) (below, above int) {
	below, above = i-1, i+1
	for below >= 0 && bs[below].LE > bs[i].LE-shift {
		below--
	}
	for above < len(bs) && bs[above].LE < bs[i].LE+shift {
		above++
	}
	return below, above
}

// largest bounds histogram s's largest observation: the lowest finite
// bucket bound that holds all of them, 0 where one is above every bound.
func largest(s *Series) float64 {
	for _, b := range s.Bucket {
		if b.Count == s.Count && !math.IsInf(b.LE, 1) {
			return b.LE
		}
	}
	return 0
}

func bounds(bs []Bucket) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		out[i] = b.LE
	}
	return out
}

// Markdown renders the report's tables.
func (r Report) Markdown() string {
	var sb strings.Builder
	sb.WriteString("| config | metric | type | series (ebpf_exporter / ours) | ebpf_exporter | ours | match |\n")
	sb.WriteString("|---|---|---|---|---|---|---|\n")
	for _, rw := range r.Rows {
		ref := "—"
		if rw.RefSeries > 0 {
			ref = fmtNum(rw.RefHi)
			if rw.RefLo != rw.RefHi {
				ref = fmtNum(rw.RefLo) + " … " + fmtNum(rw.RefHi)
			}
		}
		ours := "—"
		if rw.OurSeries > 0 {
			ours = fmtNum(rw.Ours)
		}
		fmt.Fprintf(&sb, "| %s | `%s` | %s | %d / %d | %s | %s | %s |\n", orDash(rw.Config), rw.Family, rw.Type,
			rw.RefSeries, rw.OurSeries, ref, ours, yes(rw.OK))
	}
	if len(r.Bounds) > 0 {
		sb.WriteString("\nHistogram bucket bounds (le), ours, against ebpf_exporter's:\n\n")
		sb.WriteString("| metric | buckets | le | same as ebpf_exporter |\n|---|---|---|---|\n")
		for _, b := range r.Bounds {
			les := make([]string, len(b.Ours))
			for i, le := range b.Ours {
				les[i] = fmtNum(le)
			}
			if len(les) > 8 {
				les = append(append(les[:4:4], "…"), les[len(les)-3:]...)
			}
			fmt.Fprintf(&sb, "| `%s` | %d | %s | %s |\n", b.Family, len(b.Ours), strings.Join(les, ", "), yes(b.Same && b.RefFound))
		}
	}
	if len(r.Exact) > 0 {
		sb.WriteString("\nThe test's own series (exact: ebpf_exporter before and after our collection, and ours, equal):\n\n")
		sb.WriteString("| config | metric | labels | ebpf_exporter | ours | match |\n|---|---|---|---|---|---|\n")
		for _, e := range r.Exact {
			fmt.Fprintf(&sb, "| %s | `%s` | `%s` | %s | %s | %s |\n", orDash(e.Config), e.Family, e.Labels,
				fmtNum(e.Ref), fmtNum(e.Ours), yes(e.OK))
		}
	}
	return sb.String()
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// UnknownCgroup is how ebpf_exporter's cgroup decoder names a cgroup id its
// cgroup monitor has not seen ("unknown_cgroup_id:<id>").
const UnknownCgroup = "unknown_cgroup_id:"

// unknownCgroups is the label value the cgroups one side could not name
// are folded into.
const unknownCgroups = UnknownCgroup + "*"

// FoldUnknownCgroups compares the cgroups ebpf_exporter could not name in
// aggregate. ebpf_exporter learns new cgroups from a fanotify mark on
// /sys/fs/cgroup; on a hybrid (v1 + unified) host that is a tmpfs, where it
// sees no cgroup made after its start and labels their events
// unknown_cgroup_id:<id>, while ours names them by path. For each label
// where ebpf_exporter's scrapes have such a value, in every snapshot of the
// rounds, a series of ebpf_exporter's with one and a series of ours whose
// value none of ebpf_exporter's scrapes has are summed into one series of
// the value unknown_cgroup_id:*; the others are compared as they are. So a
// cgroup ebpf_exporter names, counted apart by ours, is still a difference,
// and the events of the cgroups it could not name must add up.
func FoldUnknownCgroups(rounds ...*Round) {
	type famLabel struct{ family, label string }
	cgroupLabels := map[famLabel]map[string]bool{} // the values ebpf_exporter named
	for _, r := range rounds {
		for _, sn := range []Snapshot{r.A, r.B} {
			for _, s := range sn {
				for l, v := range s.Labels {
					if strings.HasPrefix(v, UnknownCgroup) && cgroupLabels[famLabel{s.Family, l}] == nil {
						cgroupLabels[famLabel{s.Family, l}] = map[string]bool{}
					}
				}
			}
		}
	}
	if len(cgroupLabels) == 0 {
		return
	}
	for _, r := range rounds {
		for _, sn := range []Snapshot{r.A, r.B} {
			for _, s := range sn {
				for l, v := range s.Labels {
					if named := cgroupLabels[famLabel{s.Family, l}]; named != nil && !strings.HasPrefix(v, UnknownCgroup) {
						named[v] = true
					}
				}
			}
		}
	}
	fold := func(sn Snapshot, ours bool) Snapshot {
		out := Snapshot{}
		for _, s := range sn {
			folded := s
			for l, v := range s.Labels {
				named := cgroupLabels[famLabel{s.Family, l}]
				if named == nil || (!strings.HasPrefix(v, UnknownCgroup) && (!ours || named[v])) {
					continue
				}
				if folded == s {
					folded = &Series{Family: s.Family, Type: s.Type, Labels: maps.Clone(s.Labels), Value: s.Value,
						Bucket: slices.Clone(s.Bucket), Count: s.Count, Sum: s.Sum, Time: s.Time}
				}
				folded.Labels[l] = unknownCgroups
			}
			k := folded.Key()
			if prev, ok := out[k]; ok && folded != s {
				prev.merge(folded)
				continue
			}
			out[k] = folded
		}
		return out
	}
	for _, r := range rounds {
		r.A, r.Ours, r.B = fold(r.A, false), fold(r.Ours, true), fold(r.B, false)
	}
}

// merge adds o's counts to s's (the same family and bounds).
func (s *Series) merge(o *Series) {
	s.Value += o.Value
	s.Count += o.Count
	s.Sum += o.Sum
	for i := range s.Bucket {
		if i < len(o.Bucket) {
			s.Bucket[i].Count += o.Bucket[i].Count
		}
	}
}
