// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Attribute and event names set by this package.
const (
	// AttrScript is on every metric data point and log record: the script name.
	AttrScript = "bpftrace.script"
	// AttrStream is on log records: "stdout" (printed lines and bpftrace's
	// JSON error records) or "stderr" (bpftrace's own messages).
	AttrStream = "bpftrace.stream"
	// AttrLostEvents is on the lost-events log record: how many were lost.
	AttrLostEvents = "bpftrace.lost_events"
	// EventLostEvents is the EventName of the record for a lost_events report.
	EventLostEvents = "bpftrace.lost_events"
	// ScopeName is the instrumentation scope of the logs and metrics.
	ScopeName = "github.com/otelcol-seq/otelcol-seq/receiver/bpftracereceiver/internal/bpftrace"

	streamStdout = "stdout"
	streamStderr = "stderr"
)

// Suffixes of the metrics a stats() map becomes.
const (
	statsCountSuffix   = ".count"
	statsTotalSuffix   = ".total"
	statsAverageSuffix = ".average"
)

// appendMapMetrics appends the metrics for one printed map to ms and returns
// how many data points it appended. Data points carry AttrScript and the key
// attributes; sums and histograms are cumulative since start (the start of
// the bpftrace process: its maps begin empty). A non-nil error describes
// what could not be exported (a type that does not fit the map's data, or
// non-numeric values); what could be exported is appended all the same.
func appendMapMetrics(ms pmetric.MetricSlice, script string, spec *mapSpec, md mapData, start, now pcommon.Timestamp) (int, error) {
	var nums, hists, sts []mapEntry
	others := 0
	for _, e := range md.entries {
		switch e.kind {
		case valueNumber:
			nums = append(nums, e)
		case valueHist:
			hists = append(hists, e)
		case valueStats:
			sts = append(sts, e)
		default:
			others++
		}
	}
	var errs []string
	if others > 0 {
		errs = append(errs, fmt.Sprintf("%d value(s) of map %s are not numbers (strings, tuples...) and are not exported", others, md.name))
	}
	points := 0
	switch spec.typ {
	case MapTypeHistogram:
		if len(nums)+len(sts) > 0 {
			errs = append(errs, fmt.Sprintf("map %s holds numbers, not hist()/lhist() buckets; set its type to sum or gauge", md.name))
		}
		if len(hists) == 0 {
			break
		}
		m := newMetric(spec.metricName, spec)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for _, e := range hists {
			dp := pmetric.NewHistogramDataPoint()
			ok, err := setHistogram(dp, e.buckets)
			if err != nil {
				errs = append(errs, fmt.Sprintf("map %s key %q: %v", md.name, e.key, err))
				continue
			}
			if !ok {
				continue // no counts at all
			}
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(now)
			setAttributes(dp.Attributes(), script, spec, e.key, md.keyed)
			dp.MoveTo(h.DataPoints().AppendEmpty())
			points++
		}
		if h.DataPoints().Len() > 0 {
			m.MoveTo(ms.AppendEmpty())
		}
	default: // sum, gauge
		if len(hists) > 0 {
			errs = append(errs, fmt.Sprintf("map %s is a hist()/lhist() map; set its type to histogram", md.name))
		}
		if len(nums) > 0 {
			points += appendNumbers(ms, spec.metricName, spec, spec.typ, script, md.keyed, nums, func(e mapEntry) number { return e.number }, start, now)
		}
		if len(sts) > 0 {
			points += appendNumbers(ms, spec.metricName+statsCountSuffix, spec, spec.typ, script, md.keyed, sts, func(e mapEntry) number { return e.stats.count }, start, now)
			points += appendNumbers(ms, spec.metricName+statsTotalSuffix, spec, spec.typ, script, md.keyed, sts, func(e mapEntry) number { return e.stats.total }, start, now)
			points += appendNumbers(ms, spec.metricName+statsAverageSuffix, spec, MapTypeGauge, script, md.keyed, sts, func(e mapEntry) number { return e.stats.average }, start, now)
		}
	}
	if len(errs) > 0 {
		return points, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return points, nil
}

func newMetric(name string, spec *mapSpec) pmetric.Metric {
	m := pmetric.NewMetric()
	m.SetName(name)
	m.SetUnit(spec.unit)
	m.SetDescription(spec.description)
	return m
}

// appendNumbers appends one sum or gauge metric with a point per entry.
func appendNumbers(ms pmetric.MetricSlice, name string, spec *mapSpec, typ, script string, keyed bool, entries []mapEntry, value func(mapEntry) number, start, now pcommon.Timestamp) int {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(spec.unit)
	m.SetDescription(spec.description)
	var dps pmetric.NumberDataPointSlice
	if typ == MapTypeSum {
		s := m.SetEmptySum()
		s.SetIsMonotonic(spec.monotonic)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dps = s.DataPoints()
	} else {
		dps = m.SetEmptyGauge().DataPoints()
	}
	dps.EnsureCapacity(len(entries))
	for _, e := range entries {
		dp := dps.AppendEmpty()
		if typ == MapTypeSum {
			dp.SetStartTimestamp(start)
		}
		dp.SetTimestamp(now)
		if n := value(e); n.isInt {
			dp.SetIntValue(n.i)
		} else {
			dp.SetDoubleValue(n.f)
		}
		setAttributes(dp.Attributes(), script, spec, e.key, keyed)
	}
	return len(entries)
}

// setAttributes sets AttrScript and one attribute per key part: bpftrace
// joins a multi-key map's key parts with commas. Part i is named
// spec.keyAttribute(i).
func setAttributes(attrs pcommon.Map, script string, spec *mapSpec, key string, keyed bool) {
	attrs.PutStr(AttrScript, script)
	if !keyed {
		return
	}
	for i, part := range strings.Split(key, ",") {
		attrs.PutStr(spec.keyAttribute(i), part)
	}
}

// setHistogram fills dp from bpftrace's buckets, trimmed to the range from
// the first to the last non-zero bucket. bpftrace buckets hold the integers
// [min, max], so each bucket's upper bound max is an explicit bound (OTel
// buckets are (previous bound, bound]); the first bucket is open below (the
// trimmed ones below held nothing) and a last bucket that has an upper
// bound is followed by an empty (max, +Inf) bucket. A bucket open above
// (lhist's [max, ...)) is the +Inf bucket. It reports false when all
// buckets are empty. Sum, min and max are unknown: bpftrace does not print
// them.
func setHistogram(dp pmetric.HistogramDataPoint, buckets []bucket) (bool, error) {
	lo, hi := -1, -1
	for i, b := range buckets {
		if b.count > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return false, nil
	}
	bs := buckets[lo : hi+1]
	bounds := make([]float64, 0, len(bs)+1)
	counts := make([]uint64, 0, len(bs)+1)
	var total uint64
	for i, b := range bs {
		counts = append(counts, b.count)
		total += b.count
		if i == len(bs)-1 {
			break
		}
		switch {
		case b.hasMax:
			bounds = append(bounds, b.max)
		case bs[i+1].hasMin:
			bounds = append(bounds, bs[i+1].min-1)
		default:
			return false, fmt.Errorf("bucket %d has no upper bound but is not the last", lo+i)
		}
	}
	last := bs[len(bs)-1]
	switch {
	case last.hasMax:
		bounds = append(bounds, last.max)
		counts = append(counts, 0)
	case len(bs) == 1 && last.hasMin:
		// Only [min, +Inf) holds values: (-Inf, min-1] is empty.
		bounds = append(bounds, last.min-1)
		counts = append([]uint64{0}, counts...)
	}
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			return false, fmt.Errorf("bucket bounds are not increasing (%g after %g)", bounds[i], bounds[i-1])
		}
	}
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(total)
	return true, nil
}

// appendLineLog appends a log record for a printed line (stream stdout,
// INFO) or a line bpftrace wrote to stderr (WARN).
func appendLineLog(lrs plog.LogRecordSlice, script, stream, body string, sev plog.SeverityNumber, at, observed time.Time) {
	lr := lrs.AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.SetSeverityNumber(sev)
	lr.SetSeverityText(severityText(sev))
	lr.Body().SetStr(body)
	lr.Attributes().PutStr(AttrScript, script)
	lr.Attributes().PutStr(AttrStream, stream)
}

// appendEventLog appends a record named event (lost events, bpftrace's JSON
// error records, records passed on as they are) with severity sev.
func appendEventLog(lrs plog.LogRecordSlice, script, event, body string, sev plog.SeverityNumber, now time.Time) plog.LogRecord {
	lr := lrs.AppendEmpty()
	ts := pcommon.NewTimestampFromTime(now)
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	lr.SetEventName(event)
	lr.SetSeverityNumber(sev)
	lr.SetSeverityText(severityText(sev))
	lr.Body().SetStr(body)
	lr.Attributes().PutStr(AttrScript, script)
	lr.Attributes().PutStr(AttrStream, streamStdout)
	return lr
}

func appendLostEventsLog(lrs plog.LogRecordSlice, script string, lost uint64, now time.Time) {
	lr := appendEventLog(lrs, script, EventLostEvents, fmt.Sprintf("bpftrace lost %d events (its perf buffer was full)", lost), plog.SeverityNumberWarn, now)
	lr.Attributes().PutInt(AttrLostEvents, int64(min(lost, uint64(1<<63-1))))
}

func severityText(s plog.SeverityNumber) string {
	switch s {
	case plog.SeverityNumberInfo:
		return "INFO"
	case plog.SeverityNumberWarn:
		return "WARN"
	case plog.SeverityNumberError:
		return "ERROR"
	default:
		return ""
	}
}
