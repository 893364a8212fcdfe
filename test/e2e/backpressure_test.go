// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// rssBudget is the agent's memory budget (config/agent.yaml).
const rssBudget = 300 << 20

// logsSink is an OTLP/HTTP logs backend on 127.0.0.1 that can go down and
// come back on the same port: it counts what it acknowledged.
type logsSink struct {
	addr    string
	srv     *http.Server
	records atomic.Int64 // every log record acknowledged
	gaps    atomic.Int64 // seq.lost records among them
	mu      sync.Mutex
	seen    map[string]bool // markers found in exec records' arguments
	markers []string
}

func newLogsSink(t *testing.T, markers ...string) *logsSink {
	s := &logsSink{addr: freePort(t), seen: map[string]bool{}, markers: markers}
	s.start(t)
	t.Cleanup(s.stop)
	return s
}

func (s *logsSink) start(t *testing.T) {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port was ours a moment ago
		if l, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
}

func (s *logsSink) stop() {
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

func (s *logsSink) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/logs" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ld := req.Logs()
	var gaps int64
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				switch lr.EventName() {
				case "seq.lost":
					gaps++
				case "process.exec":
					if v, ok := lr.Attributes().Get("process.command_args"); ok {
						args := v.AsString()
						s.mu.Lock()
						for _, m := range s.markers {
							if strings.Contains(args, m) {
								s.seen[m] = true
							}
						}
						s.mu.Unlock()
					}
				}
			}
		}
	}
	s.records.Add(int64(ld.LogRecordCount()))
	s.gaps.Add(gaps)
	resp, _ := plogotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func (s *logsSink) saw(m string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[m]
}

// promMetrics scrapes the collector's own Prometheus endpoint: series -> value.
func promMetrics(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// sum adds up the series of a metric whose labels contain every one of match.
func sum(m map[string]float64, name string, match ...string) float64 {
	var total float64
	for k, v := range m {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, s := range match {
			ok = ok && strings.Contains(k, s)
		}
		if ok {
			total += v
		}
	}
	return total
}

// The counters the accounting adds up, from one collector run.
type agentCounters struct {
	issued, delivered, lost, records        float64 // the seq receiver's log line at shutdown
	live                                    float64 // processes in the table
	kernel, shed, eventsDelivered           float64 // kernel_events, events_shed, events_delivered
	acceptedLogs, refusedLogs               float64 // receiver obsreport
	acceptedSpans, refusedSpans             float64
	sentLogs, sendFailedLogs, enqFailedLogs float64 // exporter
	sentSpans, sendFailedSpans, enqFailedSp float64
	queueLogs, queueSpans                   float64 // bytes left in the queues
	limiterLogs, limiterSpans               float64 // refused by the memory limiter
	backoff                                 float64 // seconds the reader backed off
}

func countersFrom(m map[string]float64) agentCounters {
	return agentCounters{
		kernel:          sum(m, "otelcol_receiver_seq_kernel_events"),
		live:            sum(m, "otelcol_receiver_seq_processes_live"),
		shed:            sum(m, "otelcol_receiver_seq_events_shed"),
		eventsDelivered: sum(m, "otelcol_receiver_seq_events_delivered"),
		acceptedLogs:    sum(m, "otelcol_receiver_accepted_log_records", `receiver="seq"`),
		refusedLogs:     sum(m, "otelcol_receiver_refused_log_records", `receiver="seq"`),
		acceptedSpans:   sum(m, "otelcol_receiver_accepted_spans", `receiver="seq"`),
		refusedSpans:    sum(m, "otelcol_receiver_refused_spans", `receiver="seq"`),
		sentLogs:        sum(m, "otelcol_exporter_sent_log_records"),
		sendFailedLogs:  sum(m, "otelcol_exporter_send_failed_log_records"),
		enqFailedLogs:   sum(m, "otelcol_exporter_enqueue_failed_log_records"),
		sentSpans:       sum(m, "otelcol_exporter_sent_spans"),
		sendFailedSpans: sum(m, "otelcol_exporter_send_failed_spans"),
		enqFailedSp:     sum(m, "otelcol_exporter_enqueue_failed_spans"),
		queueLogs:       sum(m, "otelcol_exporter_queue_size", `data_type="logs"`),
		queueSpans:      sum(m, "otelcol_exporter_queue_size", `data_type="traces"`),
		limiterLogs:     sum(m, "otelcol_processor_memory_limiter_refused_log_records"),
		limiterSpans:    sum(m, "otelcol_processor_memory_limiter_refused_spans"),
		backoff:         sum(m, "otelcol_receiver_seq_reader_backoff"),
	}
}

var stoppedLine = regexp.MustCompile(`seq receiver stopped.*"tickets_issued": (\d+), "tickets_delivered": (\d+), "tickets_lost": (\d+), "records_delivered": (\d+)`)

// memSample is one look at the collector's memory.
type memSample struct {
	at              time.Duration
	rss, anon, file int64 // bytes
	disk            int64 // bytes under the storage directory
	health          int   // the health_check endpoint's status code
}

func readMem(pid int) (rss, anon, file int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "RssAnon:":
			anon = v << 10
		case "RssFile:":
			file = v << 10
		}
	}
	return rss, anon, file
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// The shipped agent config (config/agent.yaml) with its backend down for
// minutes under a fork storm: memory stays within the budget, the health
// endpoint answers, the collector is restarted in the middle of the outage,
// and when the backend comes back what the persistent queue kept reaches it —
// spans of marker processes started during the outage in Jaeger, their exec
// records in the logs backend — with every event accounted for: delivered to
// the backend, or counted refused, lost or shed.
//
// SEQ_OUTAGE sets the outage (default 2m; the issue says minutes).
func TestAgentBackendDown(t *testing.T) {
	testutil.RequireRoot(t)
	collectorBin(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is missing (apt-get install stress-ng, or `make deps`): %v", err)
	}
	outage := 2 * time.Minute
	if s := os.Getenv("SEQ_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		outage = d
	}
	tag := rand.Uint32()
	// Executables of their own name: the span name is the executable's.
	bindir := t.TempDir()
	markers := []string{fmt.Sprintf("mkA%08x", tag), fmt.Sprintf("mkB%08x", tag)}
	for _, m := range markers {
		b, err := os.ReadFile("/bin/true")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(bindir, m), b, 0o755))
	}

	j := startJaeger(t)
	sink := newLogsSink(t, markers...)
	storage := t.TempDir()
	telemetry, health := freePort(t), freePort(t)
	_, telPort, _ := net.SplitHostPort(telemetry)
	env := []string{
		"OTLP_ENDPOINT=http://" + j.otlpHTTP,
		"SEQ_STORAGE_DIR=" + storage,
		"SEQ_TELEMETRY_PORT=" + telPort,
		"SEQ_HEALTH_ENDPOINT=" + health,
	}
	// Logs to the sink, traces to Jaeger.
	args := []string{"--config", "../../config/agent.yaml",
		"--set=exporters::otlp_http::logs_endpoint=http://" + sink.addr + "/v1/logs"}

	begin := time.Now()
	var mu sync.Mutex
	var samples []memSample
	var pid atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sampled := make(chan struct{})
	go func() { // memory, disk and health, once a second, for the whole test
		defer close(sampled)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		cl := &http.Client{Timeout: 2 * time.Second}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			p := int(pid.Load())
			if p == 0 {
				continue // between the two runs
			}
			s := memSample{at: time.Since(begin), disk: dirSize(storage)}
			s.rss, s.anon, s.file = readMem(p)
			if resp, err := cl.Get("http://" + health + "/"); err == nil {
				s.health = resp.StatusCode
				resp.Body.Close()
			}
			if pid.Load() == int64(p) && s.rss > 0 {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}
	}()

	run := func() *collector {
		c := startCollector(t, env, args...)
		pid.Store(int64(c.cmd.Process.Pid))
		return c
	}
	stopRun := func(c *collector, m map[string]float64) (agentCounters, string) {
		if m == nil {
			var err error
			m, err = promMetrics(telemetry)
			require.NoError(t, err)
		}
		pid.Store(0)
		c.stop(t)
		cs := countersFrom(m)
		line := stoppedLine.FindStringSubmatch(c.log())
		require.NotNil(t, line, "the seq receiver's accounting at shutdown:\n%s", tail(c.log(), 3000))
		cs.issued, _ = strconv.ParseFloat(line[1], 64)
		cs.delivered, _ = strconv.ParseFloat(line[2], 64)
		cs.lost, _ = strconv.ParseFloat(line[3], 64)
		cs.records, _ = strconv.ParseFloat(line[4], 64)
		return cs, c.log()
	}
	marker := func(name string) {
		// setsid: the marker is the child of a session leader, so it starts
		// a trace of its own (traces::session_leaders).
		out, err := exec.Command("setsid", "-w", "sh", "-c", filepath.Join(bindir, name)+" "+name+"; true").CombinedOutput()
		require.NoError(t, err, "%s", out)
		t.Logf("%v marker %s ran", time.Since(begin).Round(time.Second), name)
	}

	c := run()
	// Bounded twice: by the test's length, and by the test binary's life
	// (an aborted run once left a storm starving the next one).
	storm := exec.Command("stress-ng", "--fork", "2", "--timeout", strconv.Itoa(int((outage + 10*time.Minute).Seconds())))
	storm.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, storm.Start())
	stormDone := make(chan struct{})
	go func() { _ = storm.Wait(); close(stormDone) }()
	stopStorm := func() {
		select {
		case <-stormDone:
			return
		default:
		}
		_ = storm.Process.Signal(os.Interrupt)
		select {
		case <-stormDone:
		case <-time.After(10 * time.Second):
			_ = storm.Process.Kill()
			<-stormDone
		}
	}
	t.Cleanup(stopStorm)

	// The backend up: records flow.
	require.Eventually(t, func() bool { return sink.records.Load() > 0 }, 30*time.Second, 100*time.Millisecond, "records reach the logs backend")
	time.Sleep(5 * time.Second)
	t.Logf("%v backend up: %d log records acknowledged", time.Since(begin).Round(time.Second), sink.records.Load())

	// The backend down: Jaeger and the logs backend both gone.
	j.stop()
	sink.stop()
	down := time.Now()
	t.Logf("%v backend down for %v", time.Since(begin).Round(time.Second), outage)
	// The first marker while the queues surely have room (at this fork
	// storm the logs queue fills in 25-45 s, by the machine's speed; what
	// comes after is refused and counted).
	time.Sleep(2 * time.Second)
	// What the queues held and had refused when the first marker ran: at a
	// fast storm the traces queue can be full already (Jaeger took the
	// spans slower than the storm made them while it was up).
	m0, err := promMetrics(telemetry)
	require.NoError(t, err)
	atMarker := countersFrom(m0)
	t.Logf("%v first marker: queues %.0f records, %.0f spans; refused so far %.0f records, %.0f spans", time.Since(begin).Round(time.Second),
		atMarker.queueLogs, atMarker.queueSpans, atMarker.enqFailedLogs, atMarker.enqFailedSp)
	marker(markers[0])
	// The restart comes once the queues are full or nearly (40000 items;
	// their files are far from file_storage::max_size, see config/agent.yaml).
	time.Sleep(8 * time.Second)
	// A collector restart during the outage: the queues are on disk.
	first, log1 := stopRun(c, nil)
	t.Logf("%v collector stopped (queues: %.0f records, %.0f spans); restarting", time.Since(begin).Round(time.Second), first.queueLogs, first.queueSpans)
	c = run()
	marker(markers[1])
	time.Sleep(time.Until(down.Add(outage)))
	stopStorm()

	// The backend back, on the same ports: the queues drain by themselves.
	back := time.Now()
	sink.start(t)
	j.start(t)
	t.Logf("%v backend back after %v", time.Since(begin).Round(time.Second), back.Sub(down).Round(time.Second))
	var m map[string]float64
	drained := func() bool {
		var err error
		m, err = promMetrics(telemetry)
		return err == nil && sum(m, "otelcol_exporter_queue_size") == 0 && sum(m, "otelcol_exporter_in_flight_requests") == 0
	}
	require.Eventually(t, drained, 3*time.Minute, 300*time.Millisecond, "the queues drain once the backend is back\n%s", tail(c.log(), 3000))
	t.Logf("%v queues drained in %v", time.Since(begin).Round(time.Second), time.Since(back).Round(time.Second))

	// The markers' spans in Jaeger, their exec records in the logs backend.
	// The first marker ran while the queues had room; a later one may have
	// found a queue full (the storm fills 40000 items in well under the
	// outage), and then its span or record was refused, and counted so.
	var missedLogs, missedSpans []string
	for i, mk := range markers {
		q := url.Values{
			"query.service_name":   {processService},
			"query.operation_name": {mk},
			"query.num_traces":     {"20"},
			"query.start_time_min": {begin.UTC().Format(time.RFC3339Nano)},
			"query.start_time_max": {time.Now().UTC().Format(time.RFC3339Nano)},
			"query.raw_traces":     {"true"},
		}
		var found []span
		arrived := func() bool {
			td, err := decodeTraces(j.get(t, "/api/v3/traces?"+q.Encode()))
			if err != nil && !errors.Is(err, errNoTraces) {
				t.Logf("jaeger: %v", err)
			}
			found = nil
			if err == nil {
				for _, s := range spans(td) {
					if s.Name() == mk {
						found = append(found, s)
					}
				}
			}
			return len(found) > 0
		}
		// The queues drained: Jaeger indexes what it took at once.
		deadline := time.Now().Add(10 * time.Second)
		for !arrived() && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
		}
		if len(found) == 0 {
			// The first marker's span is missing only if the traces queue
			// was refusing (counted) between that marker and the restart.
			require.False(t, i == 0 && first.enqFailedSp <= atMarker.enqFailedSp,
				"the span of %s, queued on disk before the restart, reaches Jaeger (the traces queue refused nothing after it ran)", mk)
			missedSpans = append(missedSpans, mk)
		} else {
			t.Logf("jaeger has %s: %s", mk, found[0])
			assert.Equal(t, []any{filepath.Join(bindir, mk), mk}, found[0].attrs["process.command_args"])
		}
		if !sink.saw(mk) {
			missedLogs = append(missedLogs, mk)
		}
	}

	// The final counters, at a moment when the queues are empty and nothing
	// is in flight (the host goes on forking: records keep trickling in).
	// The sink counts a batch before it answers, so every record the
	// exporter counts sent is in it by then (asserted below). Eventually
	// polls from a goroutine of its own, which may outlive a timeout: what
	// it saw is shared under a lock.
	var (
		seen      sync.Mutex
		lastSeen  string
		settledAt map[string]float64
	)
	settled := func() bool {
		mm, err := promMetrics(telemetry)
		seen.Lock()
		defer seen.Unlock()
		if err != nil {
			lastSeen = err.Error()
			return false
		}
		q, inFlight := sum(mm, "otelcol_exporter_queue_size"), sum(mm, "otelcol_exporter_in_flight_requests")
		lastSeen = fmt.Sprintf("queue %.0f items, %.0f requests in flight", q, inFlight)
		if q != 0 || inFlight != 0 {
			return false
		}
		settledAt = mm
		return true
	}
	if !assert.Eventually(t, settled, time.Minute, 50*time.Millisecond, "a moment with empty queues") {
		seen.Lock()
		t.Logf("last seen: %s", lastSeen)
		seen.Unlock()
	}
	seen.Lock()
	final := settledAt // nil when the wait timed out: stopRun reads them then
	seen.Unlock()
	second, log2 := stopRun(c, final)
	cancel()
	<-sampled

	// Memory, disk and health throughout.
	var maxRSS, maxAnon, maxFile, maxDisk int64
	unhealthy := 0
	mu.Lock()
	for i, s := range samples {
		maxRSS, maxAnon, maxFile, maxDisk = max(maxRSS, s.rss), max(maxAnon, s.anon), max(maxFile, s.file), max(maxDisk, s.disk)
		if s.health != http.StatusOK {
			unhealthy++
			t.Logf("health_check answered %d at %v", s.health, s.at)
		}
		if i%10 == 0 || s.rss > rssBudget {
			t.Logf("t=%4.0fs RSS %4d MiB (anon %4d, file %4d) disk %4d MiB health %d", s.at.Seconds(),
				s.rss>>20, s.anon>>20, s.file>>20, s.disk>>20, s.health)
		}
	}
	n := len(samples)
	mu.Unlock()
	t.Logf("%d samples: max RSS %d MiB (anon %d, file %d), max disk %d MiB", n, maxRSS>>20, maxAnon>>20, maxFile>>20, maxDisk>>20)
	assert.Greater(t, n, int(outage/time.Second)/2, "samples taken throughout")
	assert.Less(t, maxRSS, int64(rssBudget), "RSS within the agent's budget throughout")
	assert.Zero(t, unhealthy, "the health endpoint answered throughout")
	assert.LessOrEqual(t, maxDisk, int64(2*64<<20+1<<20), "disk within file_storage::max_size per queue")

	// The accounting, per run and together.
	for i, cs := range []agentCounters{first, second} {
		t.Logf("run %d: %+v", i+1, cs)
		assert.Equal(t, cs.issued, cs.delivered+cs.lost, "run %d: tickets issued = delivered + lost", i+1)
		// Records handed to the logs pipeline: every delivered event, plus
		// one seq.lost record per gap; each accepted or refused, once.
		gapRecords := cs.acceptedLogs + cs.refusedLogs - cs.eventsDelivered
		assert.GreaterOrEqual(t, gapRecords, 0.0, "run %d: accepted + refused log records cover the events delivered", i+1)
		assert.LessOrEqual(t, gapRecords, cs.lost, "run %d: at most one seq.lost record per lost ticket", i+1)
		assert.Equal(t, cs.enqFailedLogs+cs.limiterLogs, cs.refusedLogs, "run %d: the queue's and the memory limiter's refusals are the receiver's refused records, counted once", i+1)
		assert.Equal(t, cs.enqFailedSp+cs.limiterSpans, cs.refusedSpans, "run %d: likewise for spans", i+1)
		if cs.refusedLogs+cs.refusedSpans > 0 {
			assert.Positive(t, cs.backoff, "run %d: the reader backed off while refused", i+1)
		}
	}
	assert.Zero(t, second.queueLogs+second.queueSpans, "nothing left in the queues")
	// The first marker's record crossed the restart on disk, unless the
	// first run's stop dropped or refused log batches, logged after the
	// last scrape of the counters: exporterhelper v0.161.0 drops a batch
	// whose export the shutdown interrupts ("Exporting failed. Dropping
	// data."), and the batch processor's flush at shutdown meets a queue
	// the storm may have filled (one CI run: 39942 of 40000 records carried
	// over, the marker's record missing).
	if dropped := shutdownDrops(log1, "logs"); dropped > 0 && slices.Contains(missedLogs, markers[0]) {
		t.Logf("the exec record of %s was in a log batch the first run's shutdown dropped (%d drops or refusals logged at its stop): upstream behaviour, see docs/backend-down.md", markers[0], dropped)
	} else {
		assert.NotContains(t, missedLogs, markers[0], "the exec record of %s, queued on disk before the restart, reaches the logs backend", markers[0])
	}
	if len(missedLogs) > 0 {
		t.Logf("exec records refused while the logs queue was full: %v", missedLogs)
		assert.Positive(t, second.enqFailedLogs, "a marker's record missing from the backend was refused by a full queue, counted")
	}
	if len(missedSpans) > 0 {
		t.Logf("spans refused while the traces queue was full: %v", missedSpans)
		assert.Positive(t, second.enqFailedSp, "a marker's span missing from Jaeger was refused by a full queue, counted")
	}
	// What the receiver accepted was sent (acknowledged by the backend) or
	// failed, counted; the queue carried the first run's backlog over the
	// restart. The second run sent what it accepted plus that carry-over;
	// the first run accepted it, plus what its shutdown flushed after its
	// last scrape (the last batch, the spans of the processes still running).
	carryLogs := second.sentLogs + second.sendFailedLogs - second.acceptedLogs
	carrySpans := second.sentSpans + second.sendFailedSpans - second.acceptedSpans
	flushLogs := carryLogs + first.sentLogs + first.sendFailedLogs - first.acceptedLogs
	flushSpans := carrySpans + first.sentSpans + first.sendFailedSpans - first.acceptedSpans
	t.Logf("carried over the restart on disk: %.0f records, %.0f spans; flushed by the first run's shutdown: %.0f records, %.0f spans",
		carryLogs, carrySpans, flushLogs, flushSpans)
	assert.GreaterOrEqual(t, carryLogs, first.queueLogs, "the first run's queued records crossed the restart")
	assert.GreaterOrEqual(t, flushLogs, 0.0, "no record sent twice or lost across the restart")
	assert.LessOrEqual(t, flushLogs, first.records-first.eventsDelivered+first.lost, "records flushed at shutdown: those read after the last scrape")
	assert.GreaterOrEqual(t, flushSpans, 0.0, "no span sent twice or lost across the restart")
	assert.LessOrEqual(t, flushSpans, first.live+first.records-first.eventsDelivered, "spans flushed at shutdown: running processes, and those that ended after the last scrape")
	// At least once: a batch the backend took while the first run was
	// stopping stays queued (its send was interrupted) and is sent again
	// after the restart, and a send that timed out on a loaded host after
	// the backend took it is retried: the backend may hold such a batch
	// twice. At most the batches in flight at a stop (num_consumers x
	// batch max_size: the collector's restart, the sink's stop at the
	// outage's start) and one batch per retry of a timed-out send.
	twice := float64(sink.records.Load()) - (first.sentLogs + second.sentLogs)
	retries := logRetries(log1+log2, "logs")
	t.Logf("records the backend got beyond what the exporter counts sent (re-sent after the restart or a timeout; %d retries of timed-out sends logged): %.0f", retries, twice)
	assert.GreaterOrEqual(t, twice, 0.0, "the logs backend acknowledged every record the exporter counts sent")
	assert.LessOrEqual(t, twice, float64(2+retries)*8192, "records sent twice: at most the batches in flight at the stop and one per retry of a timed-out send")
	t.Logf("logs backend: %d records (%d seq.lost); backend down %v, markers delivered", sink.records.Load(), sink.gaps.Load(), outage)
	if t.Failed() {
		t.Logf("collector run 1:\n%s\ncollector run 2:\n%s", tail(log1, 4000), tail(log2, 4000))
	}
}

// logRetries counts the lines of a collector's log in which an exporter of
// the signal's pipeline retries a send that timed out (exporterhelper's
// "Exporting failed. Will retry the request after interval." with "context
// deadline exceeded": the agent's otlp_http client's timeout; gRPC's
// DeadlineExceeded for an otlp exporter): the backend may have taken the
// batch all the same. A refused connection (the backend down) sends
// nothing twice; a batch the sink counted as it was stopped (its answer
// lost) is one of those in flight at a stop.
func logRetries(log, signal string) int {
	return countLogLines(log, signal, func(line string) bool {
		return strings.Contains(line, "Will retry the request") &&
			(strings.Contains(line, "DeadlineExceeded") || strings.Contains(line, "deadline exceeded"))
	})
}

// shutdownDrops counts the lines of a collector's log in which the logs or
// traces (signal) pipeline dropped or refused a batch: the exporter's
// "Exporting failed. Dropping data." (a batch whose export a shutdown
// interrupted) and a full sending queue's refusal (the batch processor's
// flush at shutdown).
func shutdownDrops(log, signal string) int {
	return countLogLines(log, signal, func(line string) bool {
		return strings.Contains(line, "Dropping data.") || strings.Contains(line, "queue is full")
	})
}

// countLogLines counts the lines of a collector's log that name the
// signal's pipeline ("logs", "traces": the otelcol.signal field) and match.
func countLogLines(log, signal string, match func(line string) bool) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"`+signal+`"`) && match(line) {
			n++
		}
	}
	return n
}
