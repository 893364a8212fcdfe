// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package spec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A config using every key of ebpf_exporter's schema.
const fullConfig = `
metrics:
  counters:
    - name: timer_starts_total
      help: Timers fired in the kernel
      labels:
        - name: function
          size: 8
          decoders:
            - name: ksym
    - name: events_total
      help: Events from a perf event array
      perf_event_array: true
      flush_interval: 1m
      labels:
        - name: comm
          size: 16
          padding: 0
          decoders:
            - name: string
            - name: regexp
              regexps: ["^nginx", "^sshd$"]
            - name: static_map
              allow_unknown: true
              static_map:
                sshd: ssh
  histograms:
    - name: bio_latency_seconds
      help: Block IO latency histogram
      bucket_type: exp2
      bucket_min: 0
      bucket_max: 26
      bucket_multiplier: 0.000001
      labels:
        - name: device
          size: 4
          padding: 4
          decoders:
            - name: majorminor
        - name: bucket
          size: 8
          decoders:
            - name: uint
    - name: fixed_seconds
      help: Fixed buckets
      bucket_type: fixed
      bucket_keys: [1, 5, 10]
      labels:
        - name: bucket
          size: 8
          decoders:
            - name: uint
tracing:
  spans:
    - name: exec
      ringbuf: exec_spans
      service: kernel
      labels:
        - name: trace_id
          size: 16
          decoders:
            - name: hex
kaddrs:
  - do_nanosleep
cgroup_id_map:
  name: cgroup_filter
  type: hash
  regexps:
    - ^/sys/fs/cgroup/system.slice/.*
`

func TestParseProgramConfigFullSchema(t *testing.T) {
	cfg, warnings, err := ParseProgramConfig("full", "/cfg/full.yaml", []byte(fullConfig))
	require.NoError(t, err)
	assert.Empty(t, warnings)

	assert.Equal(t, "full", cfg.Name)
	require.Len(t, cfg.Metrics.Counters, 2)
	c := cfg.Metrics.Counters[1]
	assert.True(t, c.PerfEventArray)
	assert.Equal(t, time.Minute, c.FlushInterval)
	assert.Equal(t, []string{"^nginx", "^sshd$"}, c.Labels[0].Decoders[1].Regexps)
	assert.True(t, c.Labels[0].Decoders[2].AllowUnknown)
	assert.Equal(t, map[string]string{"sshd": "ssh"}, c.Labels[0].Decoders[2].StaticMap)

	require.Len(t, cfg.Metrics.Histograms, 2)
	h := cfg.Metrics.Histograms[0]
	assert.Equal(t, HistogramBucketExp2, h.BucketType)
	assert.Equal(t, 26, h.BucketMax)
	assert.Equal(t, 0.000001, h.BucketMultiplier)
	assert.Equal(t, uint(4), h.Labels[0].Padding)
	assert.Equal(t, []float64{1, 5, 10}, cfg.Metrics.Histograms[1].BucketKeys)

	assert.Equal(t, "exec_spans", cfg.Tracing.Spans[0].RingBuf)
	assert.Equal(t, "kernel", cfg.Tracing.Spans[0].Service)
	assert.Equal(t, []string{"do_nanosleep"}, cfg.Kaddrs)
	assert.Equal(t, CgroupIDMap{Name: "cgroup_filter", Type: CgroupIDMapHashType, Regexps: []string{"^/sys/fs/cgroup/system.slice/.*"}}, cfg.CgroupIDMap)
}

func TestParseProgramConfigUnknownKeysWarn(t *testing.T) {
	cfg, warnings, err := ParseProgramConfig("x", "x.yaml", []byte(`
metrics:
  counters:
    - name: a_total
      help: a
      lables: []
`))
	require.NoError(t, err, "ebpf_exporter ignores unknown keys")
	require.NotNil(t, cfg)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], `field lables not found`)
}

func TestLoadProgramConfigFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("metrics:\n  counters:\n    - {name: a_total, help: a}\n"), 0o644))
	cfg, _, err := LoadProgramConfig(dir, "ok")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "ok.yaml"), cfg.YAMLPath)
	assert.Equal(t, filepath.Join(dir, "ok.bpf.o"), cfg.BPFPath)

	_, _, err = LoadProgramConfig(dir, "missing")
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, filepath.Join(dir, "missing.yaml"), ce.File)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestParseProgramConfigRejects: every config ebpf_exporter refuses (at
// parse time, or later for every key it reads) is refused here at load,
// naming the file and the field.
func TestParseProgramConfigRejects(t *testing.T) {
	counter := func(labels string) string {
		return "metrics:\n  counters:\n    - name: c_total\n      help: c\n      labels:\n" + labels
	}
	hist := func(body string) string {
		return "metrics:\n  histograms:\n    - name: h_seconds\n      help: h\n" + body
	}
	bucketLabel := "      labels:\n        - {name: bucket, size: 4, decoders: [{name: uint}]}\n"
	for _, c := range []struct {
		name, yaml, field, msg string
	}{
		{"empty file", "", "", "the file is empty"},
		{"no metrics", "kaddrs: [x]\n", "", `neither metrics nor tracing are defined for config "t"`},
		{"yaml type", "metrics:\n  counters:\n    - {name: a, help: a, labels: [{name: x, size: big, decoders: [{name: uint}]}]}\n", "", "cannot unmarshal !!str `big` into uint"},
		{"counter without name", "metrics:\n  counters:\n    - help: x\n", "metrics.counters[0].name", `counter "" in config "t" lacks name`},
		{"counter without help", "metrics:\n  counters:\n    - name: x\n", "metrics.counters[0].help", `counter "x" in config "t" lacks help`},
		{"bad metric name", "metrics:\n  counters:\n    - {name: a-b, help: x}\n", "metrics.counters[0].name", `"a-b" is not a valid Prometheus metric name`},
		{"duplicate metric", "metrics:\n  counters:\n    - {name: a, help: x}\n    - {name: a, help: y}\n", "metrics.counters[1].name", `metric "a" is already defined at metrics.counters[0]`},
		{"label size zero", counter("        - {name: pid, decoders: [{name: uint}]}\n"), "metrics.counters[0].labels[0].size", `error decoding label "pid": size is zero or not set`},
		{"label without decoders", counter("        - {name: pid, size: 4}\n"), "metrics.counters[0].labels[0].decoders", `error decoding label "pid": no decoders set`},
		{"unknown decoder", counter("        - {name: pid, size: 4, decoders: [{name: uint}, {name: kubecontext}]}\n"), "metrics.counters[0].labels[0].decoders[1].name", `unknown decoder "kubecontext"`},
		{"regexp without regexps", counter("        - {name: comm, size: 16, decoders: [{name: string}, {name: regexp}]}\n"), "metrics.counters[0].labels[0].decoders[1].regexps", "no regexps defined in config"},
		{"bad regexp", counter("        - {name: comm, size: 16, decoders: [{name: regexp, regexps: ['(']}]}\n"), "metrics.counters[0].labels[0].decoders[0].regexps[0]", `error compiling regexp "("`},
		{"uint size", counter("        - {name: pid, size: 3, decoders: [{name: uint}]}\n"), "metrics.counters[0].labels[0].size", "the uint decoder reads 1, 2, 4 or 8 bytes"},
		{"bad label name", counter("        - {name: 1pid, size: 4, decoders: [{name: uint}]}\n"), "metrics.counters[0].labels[0].name", `"1pid" is not a valid Prometheus label name`},
		{"duplicate label", counter("        - {name: pid, size: 4, decoders: [{name: uint}]}\n        - {name: pid, size: 4, decoders: [{name: uint}]}\n"), "metrics.counters[0].labels[1].name", `duplicate label name "pid"`},
		{"histogram without labels", hist("      bucket_type: exp2\n      bucket_max: 3\n"), "metrics.histograms[0].labels", "a histogram needs at least one label"},
		{"unknown bucket type", hist("      bucket_type: exp3\n      bucket_max: 3\n" + bucketLabel), "metrics.histograms[0]", `bucket_type: unknown histogram type: "exp3"`},
		{"missing bucket type", hist("      bucket_max: 3\n" + bucketLabel), "metrics.histograms[0]", "bucket_type: missing"},
		{"zero buckets", hist("      bucket_type: linear\n      bucket_min: 2\n      bucket_max: 2\n" + bucketLabel), "metrics.histograms[0]", "histogram buckets have zero size: [bucket_min .. bucket_max] = [2 .. 2]"},
		{"fixed without keys", hist("      bucket_type: fixed\n" + bucketLabel), "metrics.histograms[0]", "len(bucket_keys) = 0"},
		{"le label", hist("      bucket_type: exp2\n      bucket_max: 3\n      labels:\n        - {name: le, size: 4, decoders: [{name: uint}]}\n        - {name: bucket, size: 4, decoders: [{name: uint}]}\n"), "metrics.histograms[0].labels[0].name", `"le" is reserved`},
		{"span without ringbuf", "tracing:\n  spans:\n    - {name: s, labels: []}\n", "tracing.spans[0].ringbuf", `span "s" in config "t" lacks ringbuf`},
		{"cgroup map type", "metrics:\n  counters: [{name: a, help: a}]\ncgroup_id_map: {name: m, type: array, regexps: [x]}\n", "cgroup_id_map.type", `has unsupported type "array"`},
		{"cgroup map regexps", "metrics:\n  counters: [{name: a, help: a}]\ncgroup_id_map: {name: m}\n", "cgroup_id_map.regexps", `cgroup id map "m" in config "t" lacks regexps`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseProgramConfig("t", "/etc/ebpf/t.yaml", []byte(c.yaml))
			require.Error(t, err)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Equal(t, "/etc/ebpf/t.yaml", ce.File)
			assert.Equal(t, c.field, ce.Field)
			assert.Contains(t, err.Error(), c.msg)
			assert.Contains(t, err.Error(), `config "t" (/etc/ebpf/t.yaml)`)
		})
	}
}

// TestParseProgramConfigSpanLabelNames: a span's labels become attribute
// keys, never Prometheus labels, and ebpf_exporter checks no name rule on
// them (its upstream sched-trace example has "cpu.orig" and "cpu.dest"); a
// counter's labels keep the Prometheus rule.
func TestParseProgramConfigSpanLabelNames(t *testing.T) {
	label := func(name string) string {
		return "      labels:\n        - {name: " + name + ", size: 4, decoders: [{name: uint}]}\n"
	}
	for _, name := range []string{"cpu.orig", "cpu.dest", "1x", "k8s.pod-name"} {
		cfg, _, err := ParseProgramConfig("t", "/etc/ebpf/t.yaml", []byte("tracing:\n  spans:\n    - name: s\n      ringbuf: r\n"+label(name)))
		require.NoError(t, err, name)
		assert.Equal(t, name, cfg.Tracing.Spans[0].Labels[0].Name)
	}
	_, _, err := ParseProgramConfig("t", "/etc/ebpf/t.yaml", []byte("metrics:\n  counters:\n    - name: c_total\n      help: c\n"+label("cpu.orig")))
	require.ErrorContains(t, err, `"cpu.orig" is not a valid Prometheus label name`)
}
