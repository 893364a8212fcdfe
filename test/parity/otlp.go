// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package parity

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The receiver's OTLP named as the collector's Prometheus exporter names
// it: only for TestParityKprobeFentry (the ebpfexporter package, in the
// kernel matrix's guests, which have kprobes and trampolines but no
// collector binary). The e2e tests compare the collector's own /metrics.

// FromOTLP turns one collection of the ebpf_exporter receiver into
// Prometheus series named as config/ebpf_exporter.yaml's Prometheus
// exporter names them: Namespace_<name>, nothing appended.
func FromOTLP(md pmetric.Metrics) Snapshot {
	sn := Snapshot{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				addOTLPMetric(sn, ms.At(k))
			}
		}
	}
	return sn
}

func number(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

func addOTLPMetric(sn Snapshot, m pmetric.Metric) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		typ := "gauge"
		if m.Sum().IsMonotonic() {
			typ = "counter"
		}
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			sn.add(&Series{Family: Namespace + "_" + m.Name(), Type: typ,
				Labels: labels(dps.At(i).Attributes()), Value: number(dps.At(i))})
		}
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			sn.add(&Series{Family: Namespace + "_" + m.Name(), Type: "gauge",
				Labels: labels(dps.At(i).Attributes()), Value: number(dps.At(i))})
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			s := &Series{Family: Namespace + "_" + m.Name(), Type: "histogram",
				Labels: labels(dp.Attributes()), Count: dp.Count(), Sum: dp.Sum()}
			var cum uint64
			bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
			for b := 0; b < counts.Len(); b++ {
				cum += counts.At(b)
				le := math.Inf(1)
				if b < bounds.Len() {
					le = bounds.At(b)
				}
				s.Bucket = append(s.Bucket, Bucket{LE: le, Count: cum})
			}
			sn.add(s)
		}
	}
}
