// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/loader"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spans"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// loadConfig reads <name>.yaml (logging its warnings), has the loader load
// and attach its object (see loader.Load for what fails the config and
// what is only reported in progs) and starts reading its maps. On error
// nothing of the config is left loaded.
func (e *Exporter) loadConfig(name string) (_ *loadedConfig, progs map[string]error, err error) {
	cfg, warnings, err := spec.LoadProgramConfig(e.cfg.ConfigDir, name)
	for _, w := range warnings {
		e.logger.Warn(w)
	}
	if err != nil {
		return nil, nil, err
	}
	obj, progs, err := loader.Load(cfg, loader.Options{Strict: e.cfg.Strict, KallsymsPath: e.kallsymsPath, Logger: e.logger})
	if err != nil {
		return nil, progs, err
	}
	lc := &loadedConfig{
		cfg:     cfg,
		obj:     obj,
		metrics: map[string]*metricMap{},
		start:   pcommon.NewTimestampFromTime(time.Now()),
	}
	if err := e.startReaders(name, lc); err != nil {
		_ = lc.close()
		return nil, nil, err
	}
	return lc, progs, nil
}

// startReaders binds the loaded maps to lc: the metrics' maps and the
// perf_event_array counters, the cgroup id map (synced once now) and the
// span ring buffers (when the receiver is in a traces pipeline).
func (e *Exporter) startReaders(name string, lc *loadedConfig) error {
	objErr := lc.cfg.ObjectErrorf
	logger := e.logger.With(zap.String("config", name))
	if err := e.bindMetricMaps(lc, logger, objErr); err != nil {
		return err
	}
	if err := lc.startCgroupIDMap(objErr); err != nil {
		return err
	}
	return e.startSpanReaders(name, lc, logger, objErr)
}

// bindMetricMaps gives each metric its loaded map and opens the
// perf_event_array counters.
func (e *Exporter) bindMetricMaps(lc *loadedConfig, logger *zap.Logger, objErr func(format string, args ...any) error) error {
	for mname, mm := range lc.obj.Metrics {
		lc.metrics[mname] = &metricMap{m: mm.Map, perCPU: mm.PerCPU, labels: mm.Labels, cache: newLabelCache(e.budget, lc.cfg.Name)}
	}
	for _, c := range lc.cfg.Metrics.Counters {
		if !c.PerfEventArray {
			continue
		}
		pc, err := newPerfCounter(lc.cfg.Name, c, lc.obj.Coll.Maps[c.Name], e.dec, e.budget, logger)
		if err != nil {
			return objErr("perf_event_array counter %q: %w", c.Name, err)
		}
		lc.perf = append(lc.perf, pc)
	}
	return nil
}

// startCgroupIDMap fills the config's cgroup id map, if it has one, a first
// time.
func (lc *loadedConfig) startCgroupIDMap(objErr func(format string, args ...any) error) error {
	if lc.cfg.CgroupIDMap.Name == "" {
		return nil
	}
	cg, err := newCgroupIDMapSync(lc.cfg.CgroupIDMap, lc.obj.Coll.Maps[lc.cfg.CgroupIDMap.Name])
	if err != nil {
		return objErr("cgroup_id_map: %w", err)
	}
	lc.cgroups = cg
	if err := lc.syncCgroupIDMap(); err != nil {
		return objErr("cgroup_id_map: %w", err)
	}
	return nil
}

// startSpanReaders reads the spans' ring buffers into the traces sink; with
// no sink (no traces pipeline) they stay loaded and unread, said once.
func (e *Exporter) startSpanReaders(name string, lc *loadedConfig, logger *zap.Logger, objErr func(format string, args ...any) error) error {
	if len(lc.cfg.Tracing.Spans) > 0 && e.sink == nil {
		logger.Warn("tracing.spans are configured but the receiver is in no traces pipeline: their ring buffers are loaded and left unread")
		return nil
	}
	for i, s := range lc.cfg.Tracing.Spans {
		r, err := spans.NewReader(name, s, lc.obj.Coll.Maps[s.RingBuf], e.dec, e.sink, e.budget, &e.queued, e.cfg.MaxQueuedSpans, logger)
		if err != nil {
			return objErr("tracing.spans[%d]: ring buffer %q: %w", i, s.RingBuf, err)
		}
		lc.spans = append(lc.spans, r)
	}
	return nil
}
