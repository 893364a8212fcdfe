// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
)

// recordKind classifies one line of `bpftrace -f json` output.
type recordKind int

const (
	kindUnknown        recordKind = iota // a type this package does not map: counted, passed on as it is
	kindText                             // printf, time, join, cat, syscall, value
	kindMap                              // map, hist, lhist, stats, tseries
	kindLostEvents                       // lost_events
	kindAttachedProbes                   // attached_probes
	kindError                            // errors and warnings: see errorTypes
)

// errorTypes are the record types that report an error or a warning, with
// the severity of their log record: true for an error.
var errorTypes = map[string]bool{
	"runtime_error": true,  // 0.2x: a failed runtime check (divide by zero...)
	"error":         true,  // a script's error message
	"errorf":        true,  // errorf() (0.27)
	"helper_error":  false, // a BPF helper failed (map full...)
	"print_error":   false, // 0.2x: a value print() could not print
	"warning":       false,
	"warnf":         false, // warnf() (0.27)
}

// record is one parsed line of bpftrace's JSON output.
type record struct {
	typ  string // the JSON "type"
	kind recordKind
	// text: kindText's text (as printed, newlines included), or
	// kindError's message.
	text string
	// endsLine: the text completes the printed line even without a
	// trailing newline (join and print of a value add the newline in
	// bpftrace's text output, and leave it out in JSON).
	endsLine bool
	count    uint64    // kindLostEvents, kindAttachedProbes
	maps     []mapData // kindMap: normally one map
	isError  bool      // kindError: an error, not a warning
}

// mapData is one printed map.
type mapData struct {
	name    string // "@syscall"
	keyed   bool
	entries []mapEntry
}

type valueKind int

const (
	valueNumber valueKind = iota // count/sum/min/max/avg/plain integer
	valueHist                    // hist/lhist buckets
	valueStats                   // stats(): count, average, total
	valueOther                   // a string, tuple, record, null...: no metric
)

// mapEntry is one key of a map (the only one of an unkeyed map).
type mapEntry struct {
	key     string // bpftrace's key text: the parts joined with commas
	kind    valueKind
	number  number
	buckets []bucket
	stats   stats
}

// number is a JSON number, kept exact when it is an integer that fits int64.
type number struct {
	isInt bool
	i     int64
	f     float64
}

func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

type stats struct {
	count, average, total number
}

// bucket is one histogram bucket: the integers [min, max]; a bucket
// without min is open below, one without max open above.
type bucket struct {
	min, max       float64
	hasMin, hasMax bool
	count          uint64
}

// rawRecord holds the fields of every record shape bpftrace prints, 0.17 and
// later (src/output.cpp, later src/output/json.cpp).
type rawRecord struct {
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data"`
	Count    json.RawMessage `json:"count"` // lost_events, attached_probes (newer)
	Msg      *string         `json:"msg"`
	Helper   *string         `json:"helper"`
	Retcode  json.RawMessage `json:"retcode"`
	Filename string          `json:"filename"`
	Line     json.RawMessage `json:"line"`
	Col      json.RawMessage `json:"col"`
}

// parseRecord parses one line of `bpftrace -f json` output. It never panics;
// an error means the line is not a bpftrace record or a record's data does
// not have any shape this package knows.
func parseRecord(line []byte) (record, error) {
	var raw rawRecord
	if err := json.Unmarshal(line, &raw); err != nil {
		return record{}, fmt.Errorf("not a JSON record: %w", err)
	}
	if raw.Type == "" {
		return record{}, errors.New(`JSON record without "type"`)
	}
	rec := record{typ: raw.Type}
	switch raw.Type {
	case "printf", "time", "cat", "syscall", "join", "value":
		rec.kind = kindText
		rec.endsLine = raw.Type == "join" || raw.Type == "value"
		text, err := textOf(raw.Data)
		if err != nil {
			return record{}, fmt.Errorf("%s record: %w", raw.Type, err)
		}
		if raw.Type == "value" && text == "" && isNull(raw.Data) {
			// 0.2x prints null for a value it cannot print: say so
			// rather than print nothing.
			text = "null"
		}
		rec.text = text
	case "map", "hist", "lhist", "stats", "tseries":
		rec.kind = kindMap
		maps, err := parseMaps(raw.Type, raw.Data)
		if err != nil {
			return record{}, fmt.Errorf("%s record: %w", raw.Type, err)
		}
		rec.maps = maps
	case "lost_events", "attached_probes":
		if raw.Type == "lost_events" {
			rec.kind = kindLostEvents
		} else {
			rec.kind = kindAttachedProbes
		}
		// 0.17: {"data": {"events": N}} / {"data": {"probes": N}};
		// later: {"count": N}.
		n, err := countOf(raw)
		if err != nil {
			return record{}, fmt.Errorf("%s record: %w", raw.Type, err)
		}
		rec.count = n
	default:
		if isErr, ok := errorTypes[raw.Type]; ok {
			rec.kind = kindError
			rec.isError = isErr
			rec.text = errorMessage(raw)
		} else {
			rec.kind = kindUnknown // test_result, benchmark_results, later types
		}
	}
	return rec, nil
}

func isNull(data json.RawMessage) bool {
	d := bytes.TrimSpace(data)
	return len(d) == 0 || bytes.Equal(d, []byte("null"))
}

// textOf renders a text record's data: strings as they are, anything else
// (print() of a number or tuple) as compact JSON.
func textOf(data json.RawMessage) (string, error) {
	if isNull(data) {
		return "", nil
	}
	data = bytes.TrimSpace(data)
	if data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func countOf(raw rawRecord) (uint64, error) {
	if len(raw.Count) > 0 {
		n, err := parseNumber(raw.Count)
		if err != nil {
			return 0, fmt.Errorf("count: %w", err)
		}
		return toCount(n), nil
	}
	data := bytes.TrimSpace(raw.Data)
	if len(data) == 0 {
		return 0, errors.New("no count")
	}
	if data[0] != '{' {
		n, err := parseNumber(data)
		if err != nil {
			return 0, err
		}
		return toCount(n), nil
	}
	fields, err := decodeObject(data)
	if err != nil {
		return 0, err
	}
	for _, f := range fields {
		if n, err := parseNumber(f.value); err == nil {
			return toCount(n), nil
		}
	}
	return 0, errors.New("no count")
}

func toCount(n number) uint64 {
	f := n.float()
	switch {
	case n.isInt && n.i >= 0:
		return uint64(n.i)
	case f <= 0 || math.IsNaN(f):
		return 0
	case f >= math.MaxUint64:
		return math.MaxUint64
	default:
		return uint64(f)
	}
}

func errorMessage(raw rawRecord) string {
	var b strings.Builder
	switch {
	case raw.Msg != nil:
		if raw.Helper != nil {
			fmt.Fprintf(&b, "%s: %s", *raw.Helper, *raw.Msg)
		} else {
			b.WriteString(*raw.Msg)
		}
	case raw.Helper != nil:
		// 0.17: {"type": "helper_error", "helper": "map_update_elem", "retcode": -7, ...}
		fmt.Fprintf(&b, "%s failed", *raw.Helper)
		if n, err := parseNumber(raw.Retcode); err == nil && n.isInt {
			if n.i < 0 && n.i > -4096 {
				fmt.Fprintf(&b, ": %s (%d)", syscall.Errno(-n.i).Error(), n.i)
			} else {
				fmt.Fprintf(&b, ": %d", n.i)
			}
		}
	default:
		if s, err := textOf(raw.Data); err == nil && s != "" {
			b.WriteString(strings.TrimRight(s, "\n"))
		} else {
			b.WriteString(raw.Type)
		}
	}
	line, lerr := parseNumber(raw.Line)
	col, cerr := parseNumber(raw.Col)
	if raw.Filename != "" || lerr == nil {
		b.WriteString(" at ")
		if raw.Filename != "" {
			b.WriteString(raw.Filename)
			b.WriteString(":")
		}
		if lerr == nil {
			fmt.Fprintf(&b, "%d", line.i)
			if cerr == nil {
				fmt.Fprintf(&b, ":%d", col.i)
			}
		}
	}
	return b.String()
}

// parseMaps parses the data of a map record: {"@name": value}, normally one
// map per record.
func parseMaps(typ string, data json.RawMessage) ([]mapData, error) {
	fields, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(fields) == 0 {
		return nil, errors.New("data: no map")
	}
	out := make([]mapData, 0, len(fields))
	for _, f := range fields {
		md, err := parseMap(typ, f.key, f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		out = append(out, md)
	}
	return out, nil
}

func parseMap(typ, name string, v json.RawMessage) (mapData, error) {
	md := mapData{name: name}
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return md, errors.New("no value")
	}
	switch typ {
	case "hist", "lhist":
		// [buckets], or {"key": [buckets], ...}
		if v[0] == '[' {
			b, err := parseBuckets(v)
			if err != nil {
				return md, err
			}
			md.entries = []mapEntry{{kind: valueHist, buckets: b}}
			return md, nil
		}
		fields, err := decodeObject(v)
		if err != nil {
			return md, fmt.Errorf("neither buckets nor keyed buckets: %w", err)
		}
		md.keyed = true
		for _, f := range fields {
			b, err := parseBuckets(f.value)
			if err != nil {
				return md, fmt.Errorf("key %q: %w", f.key, err)
			}
			md.entries = append(md.entries, mapEntry{key: f.key, kind: valueHist, buckets: b})
		}
		return md, nil
	case "tseries":
		// Later bpftrace: [{"interval_start": t, "value": v}, ...] or keyed;
		// the value of the latest interval is kept.
		if v[0] == '[' {
			e, err := parseTseries(v)
			if err != nil {
				return md, err
			}
			md.entries = []mapEntry{e}
			return md, nil
		}
		fields, err := decodeObject(v)
		if err != nil {
			return md, err
		}
		md.keyed = true
		for _, f := range fields {
			e, err := parseTseries(f.value)
			if err != nil {
				return md, fmt.Errorf("key %q: %w", f.key, err)
			}
			e.key = f.key
			md.entries = append(md.entries, e)
		}
		return md, nil
	}
	// map and stats: a scalar (unkeyed), {"count","average","total"}
	// (unkeyed stats), or {"key": value, ...}.
	if v[0] != '{' {
		md.entries = []mapEntry{scalarEntry(v)}
		return md, nil
	}
	fields, err := decodeObject(v)
	if err != nil {
		return md, err
	}
	if typ == "stats" {
		if st, ok := statsOf(fields); ok {
			md.entries = []mapEntry{{kind: valueStats, stats: st}}
			return md, nil
		}
	}
	md.keyed = true
	md.entries = make([]mapEntry, 0, len(fields))
	for _, f := range fields {
		var e mapEntry
		if typ == "stats" && len(f.value) > 0 && f.value[0] == '{' {
			sf, err := decodeObject(f.value)
			if err == nil {
				if st, ok := statsOf(sf); ok {
					e = mapEntry{kind: valueStats, stats: st}
				} else {
					e = mapEntry{kind: valueOther}
				}
			} else {
				e = mapEntry{kind: valueOther}
			}
		} else {
			e = scalarEntry(f.value)
		}
		e.key = f.key
		md.entries = append(md.entries, e)
	}
	return md, nil
}

// scalarEntry is a number (JSON number or numeric string: bpftrace prints
// integers that a double cannot hold as strings), or valueOther.
func scalarEntry(v json.RawMessage) mapEntry {
	n, err := parseNumber(v)
	if err != nil {
		return mapEntry{kind: valueOther}
	}
	return mapEntry{kind: valueNumber, number: n}
}

func statsOf(fields []field) (stats, bool) {
	var st stats
	var have int
	for _, f := range fields {
		var dst *number
		switch f.key {
		case "count":
			dst = &st.count
		case "average":
			dst = &st.average
		case "total":
			dst = &st.total
		default:
			return stats{}, false
		}
		n, err := parseNumber(f.value)
		if err != nil {
			return stats{}, false
		}
		*dst = n
		have++
	}
	return st, have == 3
}

func parseBuckets(v json.RawMessage) ([]bucket, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, fmt.Errorf("buckets: %w", err)
	}
	out := make([]bucket, 0, len(items))
	for i, it := range items {
		fields, err := decodeObject(it)
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", i, err)
		}
		var b bucket
		var haveCount bool
		for _, f := range fields {
			switch f.key {
			case "min", "max":
				n, err := parseNumber(f.value)
				if err != nil {
					return nil, fmt.Errorf("bucket %d: %s: %w", i, f.key, err)
				}
				if f.key == "min" {
					b.min, b.hasMin = n.float(), true
				} else {
					b.max, b.hasMax = n.float(), true
				}
			case "count":
				n, err := parseNumber(f.value)
				if err != nil {
					return nil, fmt.Errorf("bucket %d: count: %w", i, err)
				}
				b.count = toCount(n)
				haveCount = true
			}
		}
		if !haveCount {
			return nil, fmt.Errorf("bucket %d: no count", i)
		}
		out = append(out, b)
	}
	return out, nil
}

func parseTseries(v json.RawMessage) (mapEntry, error) {
	var items []struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(v, &items); err != nil {
		return mapEntry{}, fmt.Errorf("tseries: %w", err)
	}
	for i := len(items) - 1; i >= 0; i-- {
		if n, err := parseNumber(items[i].Value); err == nil {
			return mapEntry{kind: valueNumber, number: n}, nil
		}
	}
	return mapEntry{kind: valueOther}, nil
}

// parseNumber accepts a JSON number or a string holding one.
func parseNumber(v json.RawMessage) (number, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return number{}, errors.New("missing number")
	}
	s := string(v)
	if v[0] == '"' {
		if err := json.Unmarshal(v, &s); err != nil {
			return number{}, err
		}
		s = strings.TrimSpace(s)
	} else if !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return number{}, fmt.Errorf("not a number: %.40s", s)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{isInt: true, i: i, f: float64(i)}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return number{}, fmt.Errorf("not a number: %.40q", s)
	}
	return number{f: f}, nil
}

type field struct {
	key   string
	value json.RawMessage
}

// decodeObject decodes a JSON object keeping the order of its fields
// (bpftrace prints maps sorted by value).
func decodeObject(v json.RawMessage) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, field{key: key, value: val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}
