//go:build linux

// Command ebpfxbench puts the ebpf_exporter receiver beside Cloudflare's
// ebpf_exporter on one config with thousands of series
// (testdata/ebpf_exporter/ebpfx_bench: 16384 counters keyed by pid and
// syscall, 1024 exp2 histograms keyed by pid), both running at once as
// separate processes and collecting once a second for -duration: the
// reference scraped over HTTP by this program, the built collector
// (bin/otelcol-seq, the receiver with collection_interval 1s) exporting over
// OTLP/HTTP to a sink in this program. Each process's CPU seconds (user +
// system, /proc/<pid>/stat) over the window, per collection and per series,
// are printed as one Markdown table with the ratio ours / reference; -png
// also draws both processes' CPU over the window, sampled every second. Run
// it as root (make bench-ebpf-exporter); see docs/benchmarks.md.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
)

// The fixture's contract (ebpfx_bench.bpf.c): getpgid(fillMagic) adds one
// round to every series; these are the series it makes.
const (
	fillMagic      = 0x7eb0beef
	counterSeries  = 16384
	histSeries     = 1024
	counterMetric  = "ebpfx_bench_syscalls_total"
	histMetric     = "ebpfx_bench_latency_seconds"
	configName     = "ebpfx_bench"
	refCounterLine = "ebpf_exporter_" + counterMetric + "{"
)

func main() {
	collector := flag.String("collector", "bin/otelcol-seq", "the built collector")
	reference := flag.String("reference", "", "Cloudflare's ebpf_exporter binary (make ebpf-exporter)")
	dir := flag.String("config-dir", "testdata/ebpf_exporter", "where ebpfx_bench.yaml and .bpf.o are")
	duration := flag.Duration("duration", 20*time.Second, "measured window")
	warmup := flag.Duration("warmup", 3*time.Second, "collections before the window")
	png := flag.String("png", "", "also plot both processes' CPU over the window into this PNG")
	flag.Parse()
	fmt.Printf("The %s.\n\n", kernelfeatures.Summary(kernelfeatures.BTF, kernelfeatures.TPBTF, kernelfeatures.RingBuf, kernelfeatures.Kprobes))
	if err := run(*collector, *reference, *dir, *png, *duration, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "ebpfxbench:", err)
		os.Exit(1)
	}
}

// sink is an OTLP/HTTP metrics endpoint that counts the collections it is
// sent (the distinct timestamps of enabled_configs, which every collection
// carries once: the exporter may split or merge requests) and how many
// data points each metric had in the last request that carried it.
type sink struct {
	mu          sync.Mutex
	requests    int
	collections map[pcommon.Timestamp]bool
	points      map[string]int
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil && r.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	var md pmetric.Metrics
	if err == nil {
		var um pmetric.ProtoUnmarshaler
		md, err = um.UnmarshalMetrics(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests++
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				s.points[m.Name()] = dataPoints(m)
				if m.Name() == "enabled_configs" && m.Gauge().DataPoints().Len() > 0 {
					s.collections[m.Gauge().DataPoints().At(0).Timestamp()] = true
				}
			}
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func dataPoints(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	}
	return 0
}

func (s *sink) counts() (collections, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.collections), s.requests
}

func (s *sink) complete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.points[counterMetric] == counterSeries && s.points[histMetric] == histSeries
}

// cpuSeconds is a process's user + system time so far, all threads.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// fill adds one round to every series of every loaded ebpfx_bench program.
func fill() {
	_, _ = unix.Getpgid(fillMagic) // ESRCH: only the programs see it
}

// bench is one run: the two processes side by side, the sink our
// collector exports to, and the ticker both are collected by.
type bench struct {
	snk       *sink
	ours, ref *exec.Cmd
	logs      [2]bytes.Buffer // the collector's, ebpf_exporter's
	refURL    string
	tick      *time.Ticker
	scrapes   int // of the reference, so far
}

// sample is both processes' CPU so far and the collections so far.
type sample struct {
	ours, ref            float64
	exports, reqs, scrps int
}

func run(collector, reference, dir, png string, duration, warmup time.Duration) error {
	dir, err := checkInputs(collector, reference, dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ebpfxbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	b := &bench{snk: &sink{collections: map[pcommon.Timestamp]bool{}, points: map[string]int{}}}
	sinkAddr, stopSink, err := b.serveSink()
	if err != nil {
		return err
	}
	defer stopSink()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := b.start(ctx, collector, reference, dir, tmp, sinkAddr)
	if err != nil {
		return err
	}
	defer stop()

	if err := b.waitFilled(); err != nil {
		return err
	}
	b.tick = time.NewTicker(time.Second)
	defer b.tick.Stop()
	s0, s1, wall, pts, err := b.measure(warmup, duration)
	if err != nil {
		return err
	}
	ratio, err := report(s0, s1, wall, warmup)
	if err != nil || png == "" {
		return err
	}
	return savePlot(png, pts, ratio)
}

// checkInputs checks that the collector, the reference and the fixture's
// object are there, and returns dir made absolute.
func checkInputs(collector, reference, dir string) (string, error) {
	if reference == "" {
		return "", errors.New("-reference: the ebpf_exporter binary is required (make ebpf-exporter builds it)")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, p := range []string{collector, reference, filepath.Join(dir, configName+".bpf.o")} {
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// serveSink serves the OTLP/HTTP sink on a free local port; stop closes it.
func (b *bench) serveSink() (addr net.Addr, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: b.snk, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return l.Addr(), func() { _ = srv.Close() }, nil
}

// collectorConfig is the collector's config: the receiver on dir's
// fixture, collecting every second, exporting to the sink at sinkAddr.
func collectorConfig(dir string, sinkAddr net.Addr) string {
	return fmt.Sprintf(`receivers:
  ebpf_exporter:
    config_dir: %s
    names: [%s]
    collection_interval: 1s
exporters:
  otlp_http:
    endpoint: http://%s
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [ebpf_exporter]
      exporters: [otlp_http]
`, dir, configName, sinkAddr)
}

// start starts our collector (its config written into tmp) and the
// reference on a free port; stop kills both. On error none is left running.
func (b *bench) start(ctx context.Context, collector, reference, dir, tmp string, sinkAddr net.Addr) (stop func(), err error) {
	cfgPath := filepath.Join(tmp, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(collectorConfig(dir, sinkAddr)), 0o644); err != nil {
		return nil, err
	}
	refAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	b.ours = exec.CommandContext(ctx, collector, "--config", cfgPath)
	b.ours.Stdout, b.ours.Stderr = &b.logs[0], &b.logs[0]
	b.ref = exec.CommandContext(ctx, reference, "--config.dir="+dir, "--config.names="+configName,
		"--web.listen-address="+refAddr)
	b.ref.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	b.ref.Stdout, b.ref.Stderr = &b.logs[1], &b.logs[1]
	b.refURL = "http://" + refAddr + "/metrics"
	var started []*exec.Cmd
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			_ = started[i].Process.Kill()
			_ = started[i].Wait()
		}
	}
	for _, c := range []*exec.Cmd{b.ours, b.ref} {
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		started = append(started, c)
	}
	return stop, nil
}

// waitFilled waits (60 s at most) until both are up, the series filled and
// both export all of them.
func (b *bench) waitFilled() error {
	fill()
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := scrape(b.refURL)
		refN := strings.Count(body, refCounterLine)
		if err == nil && refN == counterSeries && b.snk.complete() {
			return nil
		}
		if refN == 0 || !b.snk.complete() {
			fill() // a side that started after the last fill has empty maps
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 60 s: reference %d counter series (%v), ours %v\ncollector log:\n%s\nebpf_exporter log:\n%s",
				refN, err, b.snk.points, b.logs[0].String(), b.logs[1].String())
		}
		time.Sleep(time.Second)
	}
}

// round fills every series and scrapes the reference once.
func (b *bench) round() error {
	fill()
	if _, err := scrape(b.refURL); err != nil {
		return err
	}
	b.scrapes++
	return nil
}

// rounds does a round every tick for d, calling after (if not nil) after
// each.
func (b *bench) rounds(d time.Duration, after func() error) error {
	for range int(d / time.Second) {
		<-b.tick.C
		if err := b.round(); err != nil {
			return err
		}
		if after == nil {
			continue
		}
		if err := after(); err != nil {
			return err
		}
	}
	return nil
}

// take samples both processes' CPU and the collections so far.
func (b *bench) take() (sample, error) {
	o, err1 := cpuSeconds(b.ours.Process.Pid)
	r, err2 := cpuSeconds(b.ref.Process.Pid)
	c, req := b.snk.counts()
	return sample{o, r, c, req, b.scrapes}, errors.Join(err1, err2)
}

// measure runs the warm-up rounds, then the window's, sampling at its
// start, after each of its rounds (the plot's points) and at its end.
func (b *bench) measure(warmup, duration time.Duration) (s0, s1 sample, wall time.Duration, pts []cpuPoint, err error) {
	if err := b.rounds(warmup, nil); err != nil {
		return s0, s1, 0, nil, err
	}
	if s0, err = b.take(); err != nil {
		return s0, s1, 0, nil, err
	}
	t0 := time.Now()
	pts = []cpuPoint{{}}
	if err := b.rounds(duration, func() error {
		s, err := b.take()
		pts = append(pts, cpuPoint{time.Since(t0).Seconds(), s.ours - s0.ours, s.ref - s0.ref})
		return err
	}); err != nil {
		return s0, s1, 0, nil, err
	}
	// The last scrape is done; the collector's export of the same second
	// may be in flight: count what the sink has now.
	s1, err = b.take()
	return s0, s1, time.Since(t0), pts, err
}

// report prints the window's table (s0 at its start, s1 at its end) and
// returns our CPU per collection over the reference's.
func report(s0, s1 sample, wall, warmup time.Duration) (ratio float64, err error) {
	series := counterSeries + histSeries
	oursCPU, refCPU := s1.ours-s0.ours, s1.ref-s0.ref
	oursN, refN := float64(s1.exports-s0.exports), float64(s1.scrps-s0.scrps)
	if oursN == 0 || refN == 0 {
		return 0, fmt.Errorf("no collections in the window: ours %v, reference %v", oursN, refN)
	}
	fmt.Printf("ebpfx_bench: %d counter series (pid, syscall) + %d exp2 histograms (pid, 16 buckets), %.1f s window after %s warm-up, both running at once\n\n",
		counterSeries, histSeries, wall.Seconds(), warmup)
	fmt.Println("| exporter | collections | CPU s | CPU ms / collection | µs / series / collection | vs. ebpf_exporter |")
	fmt.Println("|---|---|---|---|---|---|")
	refPer := refCPU / refN
	row := func(name string, cpu, n float64) {
		per := cpu / n
		fmt.Printf("| %s | %.0f | %.2f | %.1f | %.2f | %.2f |\n", name, n, cpu, per*1e3, per*1e6/float64(series), per/refPer)
	}
	row("ebpf_exporter v2.5.1 (scraped over HTTP)", refCPU, refN)
	row("otelcol-seq ebpf_exporter receiver (OTLP/HTTP)", oursCPU, oursN)
	fmt.Printf("\nours: %d collections (enabled_configs timestamps) came in %d OTLP requests\n", s1.exports-s0.exports, s1.reqs-s0.reqs)
	return oursCPU / oursN / refPer, nil
}

// savePlot draws both processes' CPU over the window into png.
func savePlot(png string, pts []cpuPoint, ratio float64) error {
	f, err := os.Create(png)
	if err != nil {
		return err
	}
	if err := writePlot(f, pts, ratio); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
