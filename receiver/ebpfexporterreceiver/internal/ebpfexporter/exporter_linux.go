// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/budget"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/loader"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spans"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// Exporter loads ebpf_exporter configs, keeps their programs attached and
// turns their maps into metrics.
type Exporter struct {
	cfg    Config
	logger *zap.Logger
	dec    *decoder.Set
	// kallsymsPath is where kaddrs are looked up: the decoders' kallsyms.
	kallsymsPath string

	sink spans.Sink // set before Start; nil: span ring buffers are left unread

	mu            sync.Mutex // guards everything below, and serialises collections
	started       bool
	stopped       bool
	start         pcommon.Timestamp
	configs       []*loadedConfig
	failures      map[string]error
	programs      map[string]map[string]error // config -> program -> nil (attached) or why not
	decoderErrors map[string]uint64
	collections   uint64

	budget *budget.Budget // what other processes made the exporter keep
	queued atomic.Int64   // spans read and not yet taken by the sink
}

// New checks cfg and prepares an Exporter; nothing is loaded until Start.
func New(cfg Config, logger *zap.Logger) (*Exporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	cfg.Names = slices.Clone(cfg.Names)
	cfg = cfg.withDefaults()
	env := decoder.DefaultEnv()
	return &Exporter{
		budget:        budget.New(int64(cfg.MaxSeries), cfg.MaxMemory),
		cfg:           cfg,
		logger:        logger,
		dec:           decoder.NewSet(env),
		kallsymsPath:  env.KallsymsPath,
		failures:      map[string]error{},
		programs:      map[string]map[string]error{},
		decoderErrors: map[string]uint64{},
	}, nil
}

// SetSpanSink makes Start read every config's tracing.spans ring buffers
// and hand their spans to sink. Call it before Start; without it the ring
// buffers are loaded and left unread.
func (e *Exporter) SetSpanSink(sink spans.Sink) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sink = sink
}

// Start loads and attaches every config; Collect then reads their maps. A config that
// fails (bad YAML, missing object, a program the kernel cannot load or
// attach) is logged, counted and closed; the others keep running. Start
// itself only fails when called twice or after Shutdown.
func (e *Exporter) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started || e.stopped {
		e.mu.Unlock()
		return errors.New("ebpf_exporter: Start called twice or after Shutdown")
	}
	e.started = true
	e.start = pcommon.NewTimestampFromTime(time.Now())
	// Kernels with memcg accounting (5.11+) need no memlock rlimit; where
	// raising it is refused the loads below may still work.
	_ = rlimit.RemoveMemlock()

	for _, name := range e.cfg.Names {
		if err := ctx.Err(); err != nil {
			e.mu.Unlock()
			return errors.Join(err, e.closeAll())
		}
		lc, progs, err := e.loadConfig(name)
		if len(progs) > 0 {
			e.programs[name] = progs
		}
		if err != nil {
			e.failures[name] = err
			e.logger.Error("ebpf_exporter config failed; the other configs keep running",
				zap.String("config", name), zap.Error(err))
			continue
		}
		e.configs = append(e.configs, lc)
		e.decoderErrors[name] = 0
		e.logger.Info("ebpf_exporter config loaded",
			zap.String("config", name), zap.Int("programs", lc.obj.Programs()),
			zap.Int("counters", len(lc.cfg.Metrics.Counters)), zap.Int("histograms", len(lc.cfg.Metrics.Histograms)))
	}
	e.mu.Unlock()
	return nil
}

// Shutdown closes every link, program, map and reader. A collection in
// flight holds the lock, so closing waits for it and nothing is read after.
// It is safe to call more than once, and without Start.
func (e *Exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	return e.closeAll()
}

func (e *Exporter) closeAll() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, lc := range e.configs {
		if err := lc.close(); err != nil {
			errs = append(errs, fmt.Errorf("config %q: %w", lc.cfg.Name, err))
		}
	}
	e.configs = nil
	return errors.Join(errs...)
}

// Failures returns why each failed config failed.
func (e *Exporter) Failures() map[string]error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.failures)
}

// Stats returns the exporter's own counters.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := Stats{
		ConfigsLoaded:  len(e.configs),
		ConfigsFailed:  len(e.failures),
		DecoderErrors:  maps.Clone(e.decoderErrors),
		Collections:    e.collections,
		MaxSeries:      int64(e.cfg.MaxSeries),
		MaxMemory:      e.cfg.MaxMemory,
		MaxQueuedSpans: int64(e.cfg.MaxQueuedSpans),
		QueuedSpans:    e.queued.Load(),
	}
	s.Series, s.Memory, s.Dropped = e.budget.Usage()
	for _, lc := range e.configs {
		for _, p := range lc.perf {
			s.PerfEventsLost += p.lostCount()
		}
		for _, r := range lc.spans {
			c := r.Snapshot()
			if s.Spans == nil {
				s.Spans = map[string]spans.Counts{}
			}
			st := s.Spans[lc.cfg.Name]
			st.Records += c.Records
			st.Spans += c.Spans
			st.DecodeErrors += c.DecodeErrors
			st.Dropped += c.Dropped
			s.Spans[lc.cfg.Name] = st
			s.DecoderErrors[lc.cfg.Name] += c.DecodeErrors
		}
	}
	return s
}

// Programs returns, per config and program, nil for a program attached
// and the reason for one that is not. Configs that failed before their
// programs were attached are absent; a config failed by Strict lists only
// its programs that failed.
func (e *Exporter) Programs() map[string]map[string]error {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]map[string]error, len(e.programs))
	for c, ps := range e.programs {
		out[c] = maps.Clone(ps)
	}
	return out
}

// Collect reads every running config's maps now and returns the metrics:
// one ScopeMetrics per config (scope "ebpf_exporter/<name>") and one with
// the exporter's own series (scope "ebpf_exporter").
func (e *Exporter) Collect() pmetric.Metrics {
	md, _, _ := e.CollectContext(context.Background())
	return md
}

// CollectContext is Collect within ctx (the scraper's timeout): once ctx
// is done, the configs not read yet are skipped, and returned as skipped
// with ctx's error; the exporter's own series are always there.
func (e *Exporter) CollectContext(ctx context.Context) (_ pmetric.Metrics, skipped int, _ error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := pcommon.NewTimestampFromTime(time.Now())
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	enabled := make([]string, 0, len(e.configs))
	var cut error
	for i, lc := range e.configs {
		if err := ctx.Err(); err != nil {
			skipped, cut = len(e.configs)-i, fmt.Errorf("collection cut short after %d of %d configs: %w", i, len(e.configs), err)
			break
		}
		enabled = append(enabled, lc.cfg.Name)
		if err := lc.syncCgroupIDMap(); err != nil {
			e.logger.Warn("updating cgroup_id_map failed", zap.String("config", lc.cfg.Name), zap.Error(err))
		}
		sm := newConfigScope(rm, lc.cfg.Name)
		errs := lc.collect(sm, e.dec, now)
		for _, p := range lc.perf {
			e.decoderErrors[lc.cfg.Name] += p.takeErrors()
		}
		for _, err := range errs {
			e.decoderErrors[lc.cfg.Name]++
			e.logger.Warn("metric skipped in this collection", zap.String("config", lc.cfg.Name), zap.Error(err))
		}
	}
	if e.started {
		// Span decode errors count as decoder errors, as in ebpf_exporter.
		decoderErrors := maps.Clone(e.decoderErrors)
		for _, lc := range e.configs {
			for _, r := range lc.spans {
				decoderErrors[lc.cfg.Name] += r.Snapshot().DecodeErrors
			}
		}
		appendSelfMetrics(rm, enabled, decoderErrors, e.start, now)
	}
	e.collections++
	return md, skipped, cut
}

// loadedConfig is one running config.
type loadedConfig struct {
	cfg     *spec.ProgramConfig
	obj     *loader.Object // the object, loaded and attached
	metrics map[string]*metricMap
	perf    []*perfCounter
	spans   []*spans.Reader
	cgroups *cgroupIDMapSync
	start   pcommon.Timestamp
}

// metricMap is a counter's or histogram's map.
type metricMap struct {
	m      *ebpf.Map
	perCPU bool
	labels []spec.Label
	cache  *labelCache
	batch  batchBuffers
}

// batchBuffers are what a map's batch reads write into, kept from one
// collection to the next.
type batchBuffers struct {
	unsupported bool          // no BPF_MAP_LOOKUP_BATCH for this map: iterate
	keys        reflect.Value // [][keySize]byte
	values      []uint64      // possible CPUs values per key (one if not per-CPU)
	entries     []mapEntry
}

// batchChunk is the most elements one BPF_MAP_LOOKUP_BATCH call asks for.
const batchChunk = 4096

func (lc *loadedConfig) close() error {
	var errs []error
	for _, r := range lc.spans {
		if err := r.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	lc.spans = nil
	for _, p := range lc.perf {
		if err := p.close(); err != nil {
			errs = append(errs, err)
		}
	}
	lc.perf = nil
	for _, mm := range lc.metrics {
		mm.cache.release()
	}
	if err := lc.obj.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// collect reads the config's maps into sm.
func (lc *loadedConfig) collect(sm pmetric.ScopeMetrics, dec *decoder.Set, now pcommon.Timestamp) []error {
	contents := map[string]mapContents{}
	caches := map[string]*labelCache{}
	var errs []error
	for name, mm := range lc.metrics {
		entries, err := readMap(mm)
		if err != nil {
			errs = append(errs, fmt.Errorf("error reading map %q of config %q: %w", name, lc.cfg.Name, err))
			continue
		}
		mm.cache.rotate()
		contents[name] = mapContents{entries: entries, perCPU: mm.perCPU}
		caches[name] = mm.cache
	}
	errs = append(errs, configMetrics(sm, lc.cfg, contents, dec, caches, lc.start, now)...)
	for _, c := range caches {
		c.sweep()
	}
	ms := sm.Metrics()
	for _, p := range lc.perf {
		ss, start := p.snapshot()
		appendCounter(ms, p.counter, ss, start, now)
	}
	return errs
}

// readMap reads every element of a metric map (only key 0 for metrics
// that read nothing else): in batches where the kernel has
// BPF_MAP_LOOKUP_BATCH for the map (5.6+, hash and array maps and their
// per-CPU and LRU kinds), one element at a time otherwise. The entries
// returned share the map's buffers: they are valid until its next read.
func readMap(mm *metricMap) ([]mapEntry, error) {
	if spec.OnlyKeyZero(mm.labels, mm.perCPU) {
		return readKeyZero(mm)
	}
	if !mm.batch.unsupported {
		entries, err := readBatches(mm)
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return entries, err
		}
		mm.batch.unsupported = true
	}
	return iterateMap(mm)
}

func readKeyZero(mm *metricMap) ([]mapEntry, error) {
	key := make([]byte, mm.m.KeySize())
	e := mapEntry{key: key}
	var err error
	if mm.perCPU {
		var vals []uint64
		err = mm.m.Lookup(key, &vals)
		e.values = vals
	} else {
		var v uint64
		err = mm.m.Lookup(key, &v)
		e.values = []uint64{v}
	}
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []mapEntry{e}, nil
}

// readBatches reads the whole map with BPF_MAP_LOOKUP_BATCH, batchChunk
// elements at a time (more if a hash bucket does not fit: the kernel says
// ENOSPC, and the read starts over with twice the chunk).
func readBatches(mm *metricMap) ([]mapEntry, error) {
	b := &mm.batch
	ks := int(mm.m.KeySize())
	ncpu := 1
	if mm.perCPU {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, err
		}
		ncpu = n
	}
	chunk := max(1, min(int(mm.m.MaxEntries()), batchChunk))
	var cursor ebpf.MapBatchCursor
	n := 0
	for {
		b.grow(n+chunk, ks, ncpu)
		got, err := mm.m.BatchLookup(&cursor, b.keys.Slice(n, n+chunk).Interface(), b.values[n*ncpu:(n+chunk)*ncpu], nil)
		if errors.Is(err, unix.ENOSPC) && chunk < int(mm.m.MaxEntries()) {
			chunk *= 2
			cursor, n = ebpf.MapBatchCursor{}, 0
			continue
		}
		n += got
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break // the end of the map
		}
		if err != nil {
			return nil, err
		}
		if got == 0 {
			break
		}
	}
	var keys []byte
	if n > 0 {
		keys = unsafe.Slice((*byte)(b.keys.Index(0).Addr().UnsafePointer()), n*ks)
	}
	b.entries = b.entries[:0]
	for i := range n {
		b.entries = append(b.entries, mapEntry{
			key:    keys[i*ks : (i+1)*ks : (i+1)*ks],
			values: b.values[i*ncpu : (i+1)*ncpu : (i+1)*ncpu],
		})
	}
	return b.entries, nil
}

// grow makes room for n keys of ks bytes and their values, keeping what
// is there.
func (b *batchBuffers) grow(n, ks, ncpu int) {
	if !b.keys.IsValid() || b.keys.Len() < n {
		keys := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(ks, reflect.TypeFor[byte]())), 2*n, 2*n)
		if b.keys.IsValid() {
			reflect.Copy(keys, b.keys)
		}
		b.keys = keys
	}
	if len(b.values) < n*ncpu {
		values := make([]uint64, 2*n*ncpu)
		copy(values, b.values)
		b.values = values
	}
}

// iterateMap reads the map one element at a time (BPF_MAP_GET_NEXT_KEY and
// BPF_MAP_LOOKUP_ELEM), on kernels without batch reads.
func iterateMap(mm *metricMap) ([]mapEntry, error) {
	var entries []mapEntry
	it := mm.m.Iterate()
	key := make([]byte, mm.m.KeySize())
	if mm.perCPU {
		var vals []uint64
		for it.Next(&key, &vals) {
			entries = append(entries, mapEntry{key: slices.Clone(key), values: slices.Clone(vals)})
		}
	} else {
		var v uint64
		for it.Next(&key, &v) {
			entries = append(entries, mapEntry{key: slices.Clone(key), values: []uint64{v}})
		}
	}
	return entries, it.Err()
}
