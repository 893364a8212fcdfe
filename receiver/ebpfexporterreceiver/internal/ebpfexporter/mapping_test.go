// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

const (
	goldenStart = pcommon.Timestamp(1_700_000_000_000_000_000)
	goldenNow   = pcommon.Timestamp(1_700_000_010_000_000_000)
)

// golden compares md, as indented JSON, with testdata/golden/<name>.json.
func golden(t *testing.T, name string, md pmetric.Metrics) {
	t.Helper()
	raw, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	testutil.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), raw)
}

func entry(key []byte, values ...uint64) mapEntry { return mapEntry{key: key, values: values} }

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func comm(s string) []byte {
	b := make([]byte, 16)
	copy(b, s)
	return b
}

// mapToMetrics runs one config's map contents through the pure mapping.
func mapToMetrics(t *testing.T, yamlText string, contents map[string]mapContents) (pmetric.Metrics, []error) {
	t.Helper()
	cfg, _, err := spec.ParseProgramConfig("golden", "golden.yaml", []byte(yamlText))
	require.NoError(t, err)
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	sm := newConfigScope(rm, cfg.Name)
	caches := map[string]*labelCache{}
	for name := range contents {
		caches[name] = newLabelCache(nil, "")
	}
	errs := configMetrics(sm, cfg, contents, decoder.NewSet(decoder.Env{}), caches, goldenStart, goldenNow)
	return md, errs
}

const countersYAML = `
metrics:
  counters:
    - name: requests_total
      help: several labels and decoder chains
      labels:
        - name: pid
          size: 4
          decoders: [{name: uint}]
        - name: addr
          size: 4
          decoders: [{name: inet_ip}]
        - name: kind
          size: 1
          padding: 3
          decoders:
            - name: uint
            - name: static_map
              static_map: {"1": read, "2": read, "3": write}
        - name: comm
          size: 16
          decoders: [{name: string}]
    - name: plain_total
      help: no labels, read at key uint32(0)
    - name: percpu_sum_total
      help: per-CPU without a cpu label, summed over CPUs
      labels:
        - name: id
          size: 4
          decoders: [{name: hex}]
    - name: percpu_cpu_total
      help: per-CPU with the last label cpu, one series per CPU
      labels:
        - name: pid
          size: 4
          decoders: [{name: uint}]
        - name: cpu
          size: 2
          decoders: [{name: uint}]
    - name: cpu_only_total
      help: per-CPU whose only label is cpu
      labels:
        - name: cpu
          size: 2
          decoders: [{name: uint}]
    - name: filtered_total
      help: regexp drops the label sets it does not match
      labels:
        - name: comm
          size: 16
          decoders:
            - name: string
            - name: regexp
              regexps: ["^nginx"]
    - name: broken_total
      help: a key the labels do not cut is a decoder error; the metric is skipped
      labels:
        - name: pid
          size: 4
          decoders: [{name: uint}]
`

func TestGoldenCounters(t *testing.T) {
	ip := []byte{10, 0, 0, 1}
	md, errs := mapToMetrics(t, countersYAML, map[string]mapContents{
		"requests_total": {entries: []mapEntry{
			entry(cat(u32(7), ip, []byte{1, 0, 0, 0}, comm("nginx")), 5),
			// kind 2 decodes to "read" too: the two keys are one series, summed.
			entry(cat(u32(7), ip, []byte{2, 0xff, 0xff, 0xff}, comm("nginx")), 3),
			entry(cat(u32(7), ip, []byte{3, 0, 0, 0}, comm("nginx")), 1),
			entry(cat(u32(9), []byte{192, 168, 0, 2}, []byte{1, 0, 0, 0}, comm("curl")), 2),
		}},
		"plain_total": {entries: []mapEntry{
			entry(u32(0), 42),
			entry(u32(1), 1000), // an array's other slots: not read
		}},
		"percpu_sum_total": {perCPU: true, entries: []mapEntry{
			entry([]byte{0xca, 0xfe, 0, 1}, 1, 2, 3, 4),
		}},
		"percpu_cpu_total": {perCPU: true, entries: []mapEntry{
			entry(u32(7), 10, 0, 5),
			entry(u32(9), 1, 1, 1),
		}},
		"cpu_only_total": {perCPU: true, entries: []mapEntry{
			entry(u32(0), 3, 4),
		}},
		"filtered_total": {entries: []mapEntry{
			entry(comm("nginx: worker"), 8),
			entry(comm("bash"), 100),
		}},
		"broken_total": {entries: []mapEntry{
			entry(u32(1), 1),
			entry([]byte{1, 2, 3, 4, 5}, 1),
		}},
	})
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `error getting map "broken_total" values for metric "broken_total" of config "golden": error decoding labels: total size of key`)
	golden(t, "counters", md)
}

const histogramsYAML = `
metrics:
  histograms:
    - name: latency_seconds
      help: exp2, microseconds exported as seconds, by disk
      bucket_type: exp2
      bucket_min: 0
      bucket_max: 4
      bucket_multiplier: 0.000001
      labels:
        - name: disk
          size: 4
          decoders:
            - name: uint
            - name: static_map
              static_map: {"0": sda, "1": sdb}
        - name: bucket
          size: 4
          decoders: [{name: uint}]
    - name: zero_bytes
      help: exp2zero
      bucket_type: exp2zero
      bucket_min: 0
      bucket_max: 3
      labels:
        - name: bucket
          size: 4
          decoders: [{name: uint}]
    - name: queue_depth
      help: linear, per-CPU map summed over CPUs
      bucket_type: linear
      bucket_min: 1
      bucket_max: 4
      labels:
        - name: bucket
          size: 4
          decoders: [{name: uint}]
    - name: size_bytes
      help: fixed
      bucket_type: fixed
      bucket_keys: [64, 512, 4096]
      labels:
        - name: bucket
          size: 8
          decoders: [{name: uint}]
    - name: broken_seconds
      help: a bucket label that is not a number skips the histogram
      bucket_type: exp2
      bucket_max: 2
      labels:
        - name: bucket
          size: 4
          decoders: [{name: string}]
`

func TestGoldenHistograms(t *testing.T) {
	hk := func(disk, bucket uint32) []byte { return cat(u32(disk), u32(bucket)) }
	md, errs := mapToMetrics(t, histogramsYAML, map[string]mapContents{
		"latency_seconds": {entries: []mapEntry{
			entry(hk(0, 0), 1), entry(hk(0, 2), 5), entry(hk(0, 4), 2), entry(hk(0, 5), 77), // sum key 5: 77us
			entry(hk(1, 1), 3), entry(hk(1, 9), 100), // index above the sum key: ignored
		}},
		"zero_bytes": {entries: []mapEntry{
			entry(u32(0), 4), entry(u32(1), 1), entry(u32(3), 2), entry(u32(4), 9),
		}},
		"queue_depth": {perCPU: true, entries: []mapEntry{
			entry(u32(0), 50, 50), // below bucket_min: ignored
			entry(u32(1), 1, 2), entry(u32(4), 0, 3), entry(u32(5), 10, 11),
		}},
		"size_bytes": {entries: []mapEntry{
			entry(u64(64), 2), entry(u64(4096), 1), entry(u64(100), 5), entry(u64(4097), 9000),
		}},
		"broken_seconds": {entries: []mapEntry{
			entry([]byte("abc\x00"), 1),
		}},
	})
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `histogram "broken_seconds" of config "golden": error parsing float value for bucket`)
	golden(t, "histograms", md)
}

func TestGoldenSelfMetrics(t *testing.T) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	appendSelfMetrics(rm, []string{"biolatency", "timers"}, map[string]uint64{"timers": 3, "biolatency": 0}, goldenStart, goldenNow)
	golden(t, "self", md)
}

// TestLabelCacheKeepsOnlyLiveKeys checks the decoded-label cache is reused
// for keys seen in the previous collection and forgets the others.
func TestLabelCacheKeepsOnlyLiveKeys(t *testing.T) {
	labels := []spec.Label{{Name: "comm", Size: 16, Decoders: []spec.Decoder{{Name: "string"}, {Name: "regexp", Regexps: []string{"^a"}}}}}
	dec := decoder.NewSet(decoder.Env{})
	cache := newLabelCache(nil, "")
	cache.rotate()
	ss, err := decodeSeries([]mapEntry{entry(comm("a1"), 1), entry(comm("b1"), 1)}, false, labels, dec, cache)
	require.NoError(t, err)
	assert.Len(t, ss, 1)
	assert.Len(t, cache.entries, 2, "decoded and skipped keys are cached")

	cache.rotate()
	_, err = decodeSeries([]mapEntry{entry(comm("a1"), 2)}, false, labels, dec, cache)
	require.NoError(t, err)
	cache.rotate()
	assert.Len(t, cache.entries, 1, "only the key seen in the last collection is kept")
	_, ok := cache.entries[string(comm("a1"))]
	assert.True(t, ok)
}

// TestCachedCollectionsEqualUncached runs collections over changing map
// contents (keys coming and going, values changing, entries in any order,
// keys that decode to the same labels and are summed, keys dropped by a
// decoder, per-CPU rows) through one cache, and checks each against the
// same contents decoded without a cache: what the cache keeps (decoded
// labels, the order of the last full sort, histogram groups) changes
// nothing in the output.
func TestCachedCollectionsEqualUncached(t *testing.T) {
	// pid, and a name whose regexp keeps the first letter only (so "ab"
	// and "ac" are one series) and drops names starting with "z".
	labels := []spec.Label{
		{Name: "pid", Size: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
		{Name: "name", Size: 16, Decoders: []spec.Decoder{{Name: "string"}, {Name: "regexp", Regexps: []string{"^([a-y])"}}}},
	}
	histLabels := []spec.Label{
		{Name: "pid", Size: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
		{Name: "bucket", Size: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
	}
	layout, err := spec.HistogramLayout(spec.Histogram{BucketType: spec.HistogramBucketExp2, BucketMin: 0, BucketMax: 3})
	require.NoError(t, err)
	dec := decoder.NewSet(decoder.Env{})
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"ab", "ac", "b", "zz", "c"}
	for _, perCPU := range []bool{false, true} {
		cache, histCache := newLabelCache(nil, ""), newLabelCache(nil, "")
		for round := range 40 {
			var entries, hist []mapEntry
			for pid := range uint32(6) {
				for _, name := range names {
					if round%5 == 4 && rng.IntN(3) == 0 { // absent this round
						continue
					}
					if name == "c" && round < 20 { // a new key from round 20 on
						continue
					}
					vals := []uint64{rng.Uint64N(100)}
					if perCPU {
						vals = append(vals, rng.Uint64N(100))
					}
					entries = append(entries, entry(cat(u32(pid), comm(name)), vals...))
				}
				for bucket := range uint32(6) { // 4 buckets, the sum key, one ignored
					if round%5 != 4 || rng.IntN(3) > 0 {
						hist = append(hist, entry(cat(u32(pid), u32(bucket)), rng.Uint64N(50)))
					}
				}
			}
			rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
			rng.Shuffle(len(hist), func(i, j int) { hist[i], hist[j] = hist[j], hist[i] })

			cache.rotate()
			got, err := decodeSeries(entries, perCPU, labels, dec, cache)
			require.NoError(t, err)
			want, err := decodeSeries(entries, perCPU, labels, dec, nil)
			require.NoError(t, err)
			require.Equal(t, seriesValues(want), seriesValues(got), "round %d", round)

			histCache.rotate()
			rows, err := decodeSeries(hist, false, histLabels, dec, histCache)
			require.NoError(t, err)
			gotH, err := histogramSeries(rows, layout, histCache)
			require.NoError(t, err)
			rows, err = decodeSeries(hist, false, histLabels, dec, nil)
			require.NoError(t, err)
			wantH, err := histogramSeries(rows, layout, nil)
			require.NoError(t, err)
			require.Equal(t, histValues(wantH), histValues(gotH), "round %d", round)
		}
	}
}

func seriesValues(ss []series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprint(s.labels, s.value)
	}
	return out
}

func histValues(hs []histSeries) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprint(h.labels, h.value.counts, h.value.count, h.value.sum)
	}
	return out
}
