// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/http1"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/metadata"
)

// snapshot copies the counters the telemetry callbacks report.
func (r *grpcReceiver) snapshot() {
	k, err := r.cap.Counters()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.kernel = k
	}
	r.tstats = r.tracker.Stats()
	r.h1stats = r.h1.Stats()
	r.mstats = r.mapper.Stats()
	r.dstats = r.dec.Stats()
}

// counterAttrs caches one attribute set per counter name.
type counterAttrs map[string]metric.MeasurementOption

func (c counterAttrs) get(name string) metric.MeasurementOption {
	o, ok := c[name]
	if !ok {
		o = metric.WithAttributeSet(attribute.NewSet(attribute.String("counter", name)))
		c[name] = o
	}
	return o
}

func (r *grpcReceiver) startTelemetry() (err error) {
	if r.tb, err = metadata.NewTelemetryBuilder(r.set.TelemetrySettings); err != nil {
		return err
	}
	var amu sync.Mutex
	// named observes the counters of a snapshot, each with its counter attribute.
	named := func(counters func() []capture.NamedCounter) metric.Int64Callback {
		attrs := counterAttrs{}
		return func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			cs := counters()
			r.mu.Unlock()
			amu.Lock()
			defer amu.Unlock()
			for _, c := range cs {
				o.Observe(int64(c.Value), attrs.get(c.Name))
			}
			return nil
		}
	}
	return errors.Join(
		r.tb.RegisterReceiverGrpcKernelCallback(named(func() []capture.NamedCounter { return r.kernel.Named() })),
		r.tb.RegisterReceiverGrpcTrackerCallback(named(func() []capture.NamedCounter {
			return append(append(namedFields(r.tstats, ""), namedFields(r.h1stats, "http1_")...), namedFields(r.mstats, "")...)
		})),
		r.tb.RegisterReceiverGrpcConnectionsLiveCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.tstats.ConnsLive + r.h1stats.ConnsLive))
			return nil
		}),
		r.tb.RegisterReceiverGrpcTrackerMemoryCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.tstats.MemoryUsed + r.h1stats.MemoryUsed))
			return nil
		}),
		r.tb.RegisterReceiverGrpcRecordsLostCallback(func(_ context.Context, o metric.Int64Observer) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			o.Observe(int64(r.dstats.Lost + r.dstats.Malformed))
			return nil
		}),
	)
}

// namedFields lists the uint64 fields of a struct of counters by snake_case
// field name after prefix (an array of them by reason: h2.Stats.Gaps as
// gap_<reason>, http1.Stats.SyncLost as sync_lost_<reason>), without
// ConnsLive and MemoryUsed (gauges of their own).
func namedFields(s any, prefix string) []capture.NamedCounter {
	var out []capture.NamedCounter
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "ConnsLive" || f.Name == "MemoryUsed" || !f.IsExported() { // gauges, not counters
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Uint64:
			out = append(out, capture.NamedCounter{Name: prefix + snake(f.Name), Value: fv.Uint()})
		case reflect.Array:
			for j := range fv.Len() {
				name := snake(f.Name) + "_" + strconv.Itoa(j)
				switch f.Name {
				case "Gaps":
					name = "gap_" + h2.GapReason(j).String()
				case "SyncLost":
					name = "sync_lost_" + http1.LostReason(j).String()
				}
				out = append(out, capture.NamedCounter{Name: prefix + name, Value: fv.Index(j).Uint()})
			}
		}
	}
	return out
}

// snake turns a Go field name into snake_case (HPACKErrors -> hpack_errors).
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, c := range rs {
		if unicode.IsUpper(c) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}
