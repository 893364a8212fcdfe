// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The service name the seq receiver gives its process spans by default.
const processService = "linux-processes"

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

// jaegerBin returns Jaeger v2's binary: $JAEGER_BIN, or .cache/jaeger/jaeger,
// built by `scripts/jaeger.sh build` (`make jaeger`) when it is absent.
func jaegerBin(t *testing.T) string {
	t.Helper()
	return backendBin(t, "Jaeger v2", "JAEGER_BIN", filepath.Join(repoRoot(t), ".cache", "jaeger", "jaeger"), "scripts/jaeger.sh")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// jaeger is a running Jaeger v2 all-in-one (memory storage) on 127.0.0.1.
type jaeger struct {
	daemon
	otlpGRPC  string // host:port
	otlpHTTP  string // host:port
	query     string // http://host:port
	queryGRPC string
}

// startJaeger runs the all-in-one configuration (no --config: memory storage)
// with every listener it keeps on a free 127.0.0.1 port, so that it clashes
// with no other Jaeger (scripts/jaeger.sh start) or collector on the machine.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	queryHTTP := freePort(t)
	j := &jaeger{
		daemon:    daemon{name: "jaeger", logPath: filepath.Join(t.TempDir(), "jaeger.log")},
		otlpGRPC:  freePort(t),
		otlpHTTP:  freePort(t),
		query:     "http://" + queryHTTP,
		queryGRPC: freePort(t),
	}
	j.start(t)
	return j
}

// start runs Jaeger on j's ports (again, after stop: same ports, empty storage).
func (j *jaeger) start(t *testing.T) {
	t.Helper()
	bin := jaegerBin(t)
	j.run(t, bin, []string{
		"--set=receivers.otlp.protocols.grpc.endpoint=" + j.otlpGRPC,
		"--set=receivers.otlp.protocols.http.endpoint=" + j.otlpHTTP,
		"--set=extensions.jaeger_query.http.endpoint=" + strings.TrimPrefix(j.query, "http://"),
		"--set=extensions.jaeger_query.grpc.endpoint=" + j.queryGRPC,
		// Only what the test uses: OTLP in, memory storage, the query API. The
		// all-in-one's other receivers and extensions (Jaeger and Zipkin
		// protocols, sampling, health, zpages) and its own metrics on :8888,
		// where the collector keeps its own, stay off.
		"--set=service.pipelines.traces.receivers=[otlp]",
		"--set=service.extensions=[jaeger_storage,jaeger_query]",
		"--set=extensions.jaeger_storage.backends.some_storage.memory.max_traces=100000",
		"--set=service.telemetry.metrics.level=none",
	}, []string{"JAEGER_LISTEN_HOST=127.0.0.1"}, j.query+"/api/v3/services", 60*time.Second)
	t.Logf("jaeger %s ready: OTLP gRPC %s, HTTP %s, query %s, log %s", bin, j.otlpGRPC, j.otlpHTTP, j.query, j.logPath)
}

// get fetches an /api/v3 path; status and body are returned as they are.
func (j *jaeger) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(j.query + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func (j *jaeger) services(t *testing.T) []string {
	t.Helper()
	code, body := j.get(t, "/api/v3/services")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var r struct {
		Services []string `json:"services"`
	}
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	return r.Services
}

var errNoTraces = errors.New("no traces found")

// traces decodes an /api/v3 traces answer: {"result": <OTLP JSON TracesData>},
// or {"error": {"httpCode": 404, "message": "No traces found"}}.
func decodeTraces(code int, body []byte) (ptrace.Traces, error) {
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			HTTPCode int    `json:"httpCode"`
			Message  string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return ptrace.Traces{}, fmt.Errorf("HTTP %d, not JSON (%w): %s", code, err, tail(string(body), 500))
	}
	if code == http.StatusNotFound {
		return ptrace.Traces{}, errNoTraces
	}
	if r.Error != nil || code != http.StatusOK || len(r.Result) == 0 {
		return ptrace.Traces{}, fmt.Errorf("HTTP %d: %s", code, tail(string(body), 500))
	}
	var um ptrace.JSONUnmarshaler
	return um.UnmarshalTraces(r.Result)
}

// findTraces searches the service's traces started in [from, to]. Raw: the
// spans as the collector sent them, without Jaeger's adjusters (clock skew...).
func (j *jaeger) findTraces(t *testing.T, service string, from, to time.Time) (ptrace.Traces, error) {
	t.Helper()
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {from.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {to.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {"1000"},
		"query.raw_traces":     {"true"},
	}
	return decodeTraces(j.get(t, "/api/v3/traces?"+q.Encode()))
}

func (j *jaeger) trace(t *testing.T, id pcommon.TraceID) (ptrace.Traces, error) {
	t.Helper()
	return decodeTraces(j.get(t, "/api/v3/traces/"+id.String()+"?raw_traces=true"))
}

type span struct {
	ptrace.Span
	attrs map[string]any
}

func (s span) int(k string) int64 {
	v, _ := s.attrs[k].(int64)
	return v
}

func (s span) String() string {
	return fmt.Sprintf("%s pid=%v ppid=%v args=%v status=%s %q duration=%v span=%s parent=%s events=%d",
		s.Name(), s.attrs["process.pid"], s.attrs["process.parent_pid"], s.attrs["process.command_args"],
		s.Status().Code(), s.Status().Message(), s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime()),
		s.SpanID(), s.ParentSpanID(), s.Events().Len())
}

// spans flattens traces; it keeps each span's resource service.name in attrs["service.name"].
func spans(td ptrace.Traces) []span {
	var out []span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		svc, _ := rs.Resource().Attributes().Get("service.name")
		for k := 0; k < rs.ScopeSpans().Len(); k++ {
			ss := rs.ScopeSpans().At(k).Spans()
			for l := 0; l < ss.Len(); l++ {
				s := span{Span: ss.At(l), attrs: ss.At(l).Attributes().AsRaw()}
				s.attrs["service.name"] = svc.AsString()
				out = append(out, s)
			}
		}
	}
	return out
}

func hasExecEvent(s span) (ptrace.SpanEvent, bool) {
	for i := 0; i < s.Events().Len(); i++ {
		if e := s.Events().At(i); e.Name() == "process.exec" {
			return e, true
		}
	}
	return ptrace.SpanEvent{}, false
}

// A process tree the test knows reaches Jaeger as one trace: the shell that
// setsid's session leader starts is the root span, its four commands are
// its child spans, with their exit statuses, times and exec events.
func TestJaegerProcessTree(t *testing.T) {
	testutil.RequireRoot(t)
	collectorBin(t)
	j := startJaeger(t)
	begin := time.Now()

	c := startCollector(t, []string{"JAEGER_OTLP_ENDPOINT=" + j.otlpGRPC}, "--config", "../../config/jaeger.yaml")

	marker := fmt.Sprintf("jaeger-marker-%d", rand.Uint32())
	pidFile := filepath.Join(t.TempDir(), "root.pid")
	// The inner sh is the root: a child of the session leader setsid makes.
	// The trailing `; true`s stop dash from exec'ing a last simple command in
	// place of forking it.
	tree := fmt.Sprintf(`echo $$ > %s; sleep 0.2; /bin/true %s; sh -c 'exit 3'; ls /nonexistent-%s; true`,
		pidFile, marker, marker)
	cmd := exec.Command("setsid", "-w", "sh", "-c", `sh -c "$SEQ_TREE"; true`)
	cmd.Env = append(os.Environ(), "SEQ_TREE="+tree)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	rootPID, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	t.Logf("process tree ran: root sh pid %d, marker %s", rootPID, marker)

	time.Sleep(time.Second) // batch timeout 200ms
	c.stop(t)               // SIGTERM: whatever spans are open are flushed

	checkProcessTree(t, j, begin, rootPID, marker, c.log())
}

// checkProcessTree finds in Jaeger the trace of the tree TestJaegerProcessTree
// ran (its root sh had rootPID) and checks its spans.
func checkProcessTree(t *testing.T, j *jaeger, begin time.Time, rootPID int64, marker, collectorLog string) {
	t.Helper()
	// The service, found rather than assumed, so that a different name says so.
	// Jaeger batches what it receives (200 ms) before it is searchable.
	deadline := time.Now().Add(15 * time.Second)
	svcs := j.services(t)
	for !slices.Contains(svcs, processService) && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		svcs = j.services(t)
	}
	t.Logf("jaeger services: %q", svcs)
	require.Contains(t, svcs, processService,
		"the receiver's spans should be under service.name %q; jaeger knows %q.\ncollector log:\n%s",
		processService, svcs, tail(collectorLog, 4000))

	// Find the trace holding the root's span.
	var traceID pcommon.TraceID
	var all []span
	deadline = time.Now().Add(15 * time.Second)
	for traceID.IsEmpty() {
		td, err := j.findTraces(t, processService, begin.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil && !errors.Is(err, errNoTraces) {
			require.NoError(t, err)
		}
		if err == nil {
			all = spans(td)
			for _, s := range all {
				if s.int("process.pid") == rootPID {
					traceID = s.TraceID()
				}
			}
		}
		if traceID.IsEmpty() {
			if time.Now().After(deadline) {
				var sb strings.Builder
				for _, s := range all {
					if s.int("process.pid") == rootPID || s.int("process.parent_pid") == rootPID {
						fmt.Fprintf(&sb, "  %s\n", s)
					}
				}
				t.Fatalf("no span with process.pid=%d among %d spans of service %q (related: \n%s)\ncollector log:\n%s",
					rootPID, len(all), processService, sb.String(), tail(collectorLog, 4000))
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	td, err := j.trace(t, traceID)
	require.NoError(t, err)
	tr := spans(td)
	for _, s := range tr {
		t.Logf("trace %s: %s", traceID, s)
	}

	var root span
	var children []span
	for _, s := range tr {
		switch {
		case s.int("process.pid") == rootPID:
			root = s
		case s.int("process.parent_pid") == rootPID:
			children = append(children, s)
		}
	}
	require.NotNil(t, root.attrs, "root span")
	assert.Equal(t, processService, root.attrs["service.name"])
	assert.True(t, root.ParentSpanID().IsEmpty(), "the root sh (child of a session leader) starts its trace; parent %s", root.ParentSpanID())
	assert.Equal(t, "sh", root.Name())
	assert.Equal(t, 5, len(tr), "the trace holds the root sh and its four commands, nothing else")
	require.Len(t, children, 4, "children of the root sh")

	rootStart, rootEnd := root.StartTimestamp(), root.EndTimestamp()
	assert.Less(t, rootStart, rootEnd)
	byName := map[string]span{}
	for _, s := range append([]span{root}, children...) {
		assert.Equal(t, ptrace.SpanKindInternal, s.Kind(), "%s", s)
		assert.Equal(t, traceID, s.TraceID(), "%s", s)
		_, ok := hasExecEvent(s)
		assert.True(t, ok, "a process.exec event on %s", s)
		assert.Equal(t, s.Name(), s.attrs["process.executable.name"], "%s", s)
		assert.NotEmpty(t, s.attrs["process.executable.path"], "%s", s)
		if s.int("process.pid") == rootPID {
			continue
		}
		assert.Equal(t, root.SpanID(), s.ParentSpanID(), "parent of %s", s)
		assert.GreaterOrEqual(t, s.StartTimestamp(), rootStart, "%s starts within the root %s", s, root)
		assert.LessOrEqual(t, s.EndTimestamp(), rootEnd, "%s ends within the root %s", s, root)
		byName[s.Name()] = s
	}
	assert.NotEqual(t, ptrace.StatusCodeError, root.Status().Code(), "root %s exits 0", root)
	assert.Equal(t, int64(0), root.int("process.exit.code"))

	names := slices.Sorted(maps.Keys(byName))
	require.Equal(t, []string{"ls", "sh", "sleep", "true"}, names, "the children's span names")

	sleep := byName["sleep"]
	assert.GreaterOrEqual(t, sleep.EndTimestamp().AsTime().Sub(sleep.StartTimestamp().AsTime()), 200*time.Millisecond, "%s", sleep)
	assert.NotEqual(t, ptrace.StatusCodeError, sleep.Status().Code(), "%s", sleep)

	tru := byName["true"]
	assert.Equal(t, []any{"/bin/true", marker}, tru.attrs["process.command_args"], "%s", tru)
	if e, ok := hasExecEvent(tru); ok {
		args, _ := e.Attributes().Get("process.command_args")
		assert.Equal(t, []any{"/bin/true", marker}, args.Slice().AsRaw(), "exec event of %s", tru)
		_, ok := e.Attributes().Get("seq.number")
		assert.True(t, ok, "exec event of %s has seq.number", tru)
	}
	assert.NotEqual(t, ptrace.StatusCodeError, tru.Status().Code(), "%s", tru)

	exit3 := byName["sh"]
	assert.Equal(t, []any{"sh", "-c", "exit 3"}, exit3.attrs["process.command_args"], "%s", exit3)
	assert.Equal(t, ptrace.StatusCodeError, exit3.Status().Code(), "%s", exit3)
	assert.Equal(t, "exit 3", exit3.Status().Message(), "%s", exit3)
	assert.Equal(t, int64(3), exit3.int("process.exit.code"), "%s", exit3)

	ls := byName["ls"]
	assert.Equal(t, ptrace.StatusCodeError, ls.Status().Code(), "%s", ls)
	assert.Equal(t, "exit 2", ls.Status().Message(), "%s", ls)
	assert.Equal(t, int64(2), ls.int("process.exit.code"), "%s", ls)
}
