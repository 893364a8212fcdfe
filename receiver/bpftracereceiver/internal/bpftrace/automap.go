// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"regexp"
	"strconv"
	"strings"
)

// A map the script prints itself (print(@x), or bpftrace's print of every
// map at exit) that no MapConfig names is exported all the same, as an
// "auto" map: named as a listed map would be by default, its key parts the
// attributes key, key.1, key.2, ..., its type what bpftrace's JSON record
// says, and for a "map" record (count, sum, min, max and plain values alike)
// the function the script assigns to it.

// aggAssignRE finds `@name[...] = fn(` and `@name = fn(`: the aggregation
// function the script assigns to a map.
var aggAssignRE = regexp.MustCompile(`(@[A-Za-z_][A-Za-z0-9_]*|@)\s*(?:\[[^;{}]*?\])?\s*=\s*([a-z_]+)\s*\(`)

// mapFunctions returns, per map name, the aggregation function the script's
// code assigns to it (count, sum, min, max, avg, stats, hist, lhist...).
// A map assigned more than one function (bpftrace refuses that) or only
// plain values is left out.
func mapFunctions(text string) map[string]string {
	code := stripCommentsAndStrings(text)
	out := map[string]string{}
	conflict := map[string]bool{}
	for _, m := range aggAssignRE.FindAllStringSubmatch(code, -1) {
		name, fn := m[1], m[2]
		if prev, ok := out[name]; ok && prev != fn {
			conflict[name] = true
		}
		out[name] = fn
	}
	for name := range conflict {
		delete(out, name)
	}
	return out
}

// autoMapSpec is the mapSpec of a printed map no MapConfig names: recType is
// the JSON record's type, fn the function the script assigns to the map
// (mapFunctions; "" when unknown), md the printed data.
//
//   - hist (hist() and lhist()): histogram.
//   - stats holding count/average/total (stats()): sum, so the count and total
//     are monotonic Sums and the average a Gauge.
//   - stats holding one number (avg()), tseries: gauge.
//   - map: sum when the script assigns count() or sum(), otherwise (min(),
//     max(), plain values) gauge.
func autoMapSpec(script, recType, fn string, md mapData) *mapSpec {
	ms := &mapSpec{
		mapName:    md.name,
		typ:        MapTypeGauge,
		metricName: defaultMetricName(script, md.name),
		monotonic:  true,
		auto:       true,
	}
	switch recType {
	case "hist", "lhist":
		ms.typ = MapTypeHistogram
	case "stats":
		for _, e := range md.entries {
			if e.kind == valueStats {
				ms.typ = MapTypeSum
				break
			}
		}
	case "map":
		if fn == "count" || fn == "sum" {
			ms.typ = MapTypeSum
		}
	}
	return ms
}

// defaultMetricName is a map's metric name when its MapConfig sets none:
// bpftrace.<script>.<map without @>, or bpftrace.<script> for the map "@".
func defaultMetricName(script, mapName string) string {
	name := "bpftrace." + script
	if short := strings.TrimPrefix(mapName, "@"); short != "" {
		name += "." + short
	}
	return name
}

// keyAttribute names part i of a map key: the MapConfig's attribute name,
// else key<i> for a listed map and key, key.1, key.2... for an auto map.
func (s *mapSpec) keyAttribute(i int) string {
	switch {
	case i < len(s.attributes):
		return s.attributes[i]
	case !s.auto:
		return "key" + strconv.Itoa(i)
	case i == 0:
		return "key"
	default:
		return "key." + strconv.Itoa(i)
	}
}
