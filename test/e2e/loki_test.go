// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"encoding/json"
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
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// lokiBin returns Grafana Loki's binary: $LOKI_BIN, or
// ~/.cache/otelcol-seq/loki/loki, built by `scripts/loki.sh build`
// (`make loki`) when it is absent.
func lokiBin(t *testing.T) string {
	t.Helper()
	def := filepath.Join(os.Getenv("HOME"), ".cache", "otelcol-seq", "loki", "loki")
	return backendBin(t, "Grafana Loki", "LOKI_BIN", def, "scripts/loki.sh")
}

// loki is a running single-binary Loki (scripts/loki.yaml: filesystem
// storage in a temporary directory) on free 127.0.0.1 ports.
type loki struct {
	daemon
	url string // http://127.0.0.1:port: OTLP in (/otlp/v1/logs), LogQL API
}

func startLoki(t *testing.T) *loki {
	t.Helper()
	bin := lokiBin(t)
	httpAddr := freePort(t)
	_, httpPort, err := net.SplitHostPort(httpAddr)
	require.NoError(t, err)
	_, grpcPort, err := net.SplitHostPort(freePort(t))
	require.NoError(t, err)
	l := &loki{daemon: daemon{name: "loki", logPath: filepath.Join(t.TempDir(), "loki.log")}, url: "http://" + httpAddr}
	// /ready answers 503 until the ingester has joined its ring.
	l.run(t, bin, []string{"-config.file=" + filepath.Join(repoRoot(t), "scripts", "loki.yaml"), "-config.expand-env=true"},
		[]string{"LOKI_DIR=" + t.TempDir(), "LOKI_HTTP_PORT=" + httpPort, "LOKI_GRPC_PORT=" + grpcPort},
		l.url+"/ready", 120*time.Second)
	t.Logf("loki %s ready on %s, log %s", bin, l.url, l.logPath)
	return l
}

// lokiEntry is one log line of a query's answer with its stream's labels:
// index labels and structured metadata together.
type lokiEntry struct {
	ts     time.Time
	line   string
	labels map[string]string
}

func (e lokiEntry) String() string {
	return fmt.Sprintf("%s %q seq=%s pid=%s code=%s container=%.12s", e.ts.Format(time.RFC3339Nano), e.line,
		e.labels["seq_number"], e.labels["process_pid"], e.labels["process_exit_code"], e.labels["container_id"])
}

// query runs a LogQL log query over [from, to] (/loki/api/v1/query_range),
// its entries in time order.
func (l *loki) query(t *testing.T, logql string, from, to time.Time) []lokiEntry {
	t.Helper()
	q := url.Values{
		"query":     {logql},
		"start":     {strconv.FormatInt(from.UnixNano(), 10)},
		"end":       {strconv.FormatInt(to.UnixNano(), 10)},
		"limit":     {"5000"},
		"direction": {"forward"},
	}
	resp, err := http.Get(l.url + "/loki/api/v1/query_range?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", logql, body)
	var r struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &r), "%s", tail(string(body), 500))
	require.Equal(t, "success", r.Status, "%s", tail(string(body), 500))
	require.Equal(t, "streams", r.Data.ResultType)
	var out []lokiEntry
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			ns, err := strconv.ParseInt(v[0], 10, 64)
			require.NoError(t, err)
			out = append(out, lokiEntry{ts: time.Unix(0, ns), line: v[1], labels: s.Stream})
		}
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].ts.Before(out[k].ts) })
	return out
}

// await runs a LogQL query from from to a minute from now until it has at
// least n entries (the exporter's two queue consumers may deliver batches
// out of order), for up to 60 s.
func (l *loki) await(t *testing.T, logql string, from time.Time, n int, c *collector) []lokiEntry {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := l.query(t, logql, from, time.Now().Add(time.Minute))
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d entries after 60 s, want %d: %v\nloki log:\n%s\ncollector log:\n%s",
				logql, len(got), n, got, l.log(), tail(c.log(), 4000))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// The shipped config/loki.yaml: a process in a podman container (under a
// Kubernetes pod's cgroup parent) exits 42; Loki finds its fork, exec and
// exit records by container and by exit code, and finds nothing for another
// exit code or another container. Jaeger has its span.
func TestLokiContainerExitCode(t *testing.T) {
	testutil.RequireRoot(t)
	collectorBin(t)
	conf := podmanConf(t)
	l := startLoki(t)
	j := startJaeger(t)
	begin := time.Now()
	c := startCollector(t, []string{"LOKI_OTLP_ENDPOINT=" + l.url + "/otlp", "JAEGER_OTLP_ENDPOINT=" + j.otlpGRPC},
		"--config", "../../config/loki.yaml",
		// No metrics server: the default :8888 may be taken by another collector.
		"--config=yaml:service::telemetry::metrics::level: none")

	const code = 42
	uid, parent := testutil.KubepodsParent(t)
	marker := fmt.Sprintf("loki-marker-%d", rand.Uint32())
	cidFile := filepath.Join(t.TempDir(), "cid")
	// The container's sh forks the inner sh, which execs and exits 42; the
	// outer one exits with its status (`; exit $?`: not exec'd in its place).
	cmd := exec.Command("podman", "run", "--rm", "--cgroup-parent="+parent, "--cidfile="+cidFile, "--network=none",
		"localhost/seq-busybox", "/bin/sh", "-c", fmt.Sprintf("/bin/sh -c 'exit %d' %s; exit $?", code, marker))
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "podman run should fail with the container's exit code: %v\n%s", err, out)
	require.Equal(t, code, ee.ExitCode(), "podman run's exit code is the container's: %s", out)
	b, err := os.ReadFile(cidFile)
	require.NoError(t, err)
	cid := strings.TrimSpace(string(b))
	require.Len(t, cid, 64)
	t.Logf("container %s (pod %s) exited %d, marker %s", cid, uid, code, marker)

	// By container and exit code: the exits of the inner and the outer sh.
	// Loki keeps service.name as the index label service_name, and
	// container.id and process.exit.code as structured metadata.
	sel := `{service_name="linux-processes"}`
	byCode := func(cid string, code int) string {
		return fmt.Sprintf(`%s | container_id=%q | process_exit_code="%d"`, sel, cid, code)
	}
	from := begin.Add(-time.Minute)
	exits := l.await(t, byCode(cid, code), from, 2, c)
	t.Logf("%s: %d entries", byCode(cid, code), len(exits))
	exitLine := regexp.MustCompile(fmt.Sprintf(`^exit pid=\d+ code=%d comm=sh$`, code))
	pids := map[string]bool{}
	for _, e := range exits {
		t.Logf("  %s", e)
		assert.Regexp(t, exitLine, e.line)
		assert.Equal(t, map[string]string{
			"service_name": "linux-processes", "container_id": cid, "container_runtime_name": "podman",
			"k8s_pod_uid": uid, "process_exit_code": strconv.Itoa(code),
		}, pick(e.labels, "service_name", "container_id", "container_runtime_name", "k8s_pod_uid", "process_exit_code"))
		pids[e.labels["process_pid"]] = true
	}
	assert.Len(t, exits, 2, "the inner and the outer sh exit %d, no other process of the container does", code)

	// The inner sh, by its exec: a line filter on its argv (the outer sh's
	// has the marker too, in its own -c argument).
	inner := fmt.Sprintf(`-c "exit %d" %s`, code, marker)
	execs := l.await(t, fmt.Sprintf(`%s | container_id=%q |= %q`, sel, cid, inner), from, 1, c)
	require.Len(t, execs, 1, "the inner sh's exec, by the marker in its line: %v", execs)
	pid := execs[0].labels["process_pid"]
	assert.True(t, pids[pid], "the inner sh (pid %s) is among the exits 42 (%v)", pid, pids)
	assert.Equal(t, fmt.Sprintf(`exec pid=%s /bin/sh /bin/sh %s`, pid, inner), execs[0].line)

	// Its whole lifecycle, by container and pid: fork, exec, exit, in ticket order.
	byPID := fmt.Sprintf(`%s | container_id=%q | process_pid=%q`, sel, cid, pid)
	life := l.await(t, byPID, from, 3, c)
	t.Logf("%s: %d entries", byPID, len(life))
	var kinds []string
	for _, e := range life {
		t.Logf("  %s", e)
		kinds = append(kinds, strings.Fields(e.line)[0])
	}
	require.Equal(t, []string{"fork", "exec", "exit"}, kinds, "the inner sh's records, in time order")
	for i := 1; i < len(life); i++ {
		assert.Less(t, seqNumber(life[i-1]), seqNumber(life[i]), "time order is ticket order")
	}
	assert.Equal(t, fmt.Sprintf("exit pid=%s code=%d comm=sh", pid, code), life[2].line)
	assert.Equal(t, strconv.Itoa(code), life[2].labels["process_exit_code"])
	assert.NotEmpty(t, life[0].labels["process_parent_pid"], "the fork names the parent")

	// The negatives, now that the positives are in: another exit code, or
	// another container, finds nothing. (Not exit code 0: runc's own
	// processes exit 0 in the container's cgroup.)
	for _, q := range []string{byCode(cid, code+1), byCode(strings.Repeat("0", 64), code)} {
		got := l.query(t, q, from, time.Now().Add(time.Minute))
		assert.Empty(t, got, "%s", q)
		t.Logf("%s: %d entries", q, len(got))
	}

	// The traces half of config/loki.yaml: the inner sh's span, exit 42, in Jaeger.
	want, err := strconv.ParseInt(pid, 10, 64)
	require.NoError(t, err)
	var got *span
	deadline := time.Now().Add(30 * time.Second)
	for got == nil {
		td, err := j.findTraces(t, processService, from, time.Now().Add(time.Minute))
		if err != nil && !errors.Is(err, errNoTraces) {
			require.NoError(t, err)
		}
		if err == nil { // none yet: td is empty
			for _, s := range spans(td) {
				if s.int("process.pid") == want {
					got = &s
				}
			}
		}
		if got == nil {
			require.False(t, time.Now().After(deadline), "no span of pid %d in jaeger after 30 s:\n%s", want, tail(c.log(), 4000))
			time.Sleep(500 * time.Millisecond)
		}
	}
	t.Logf("jaeger: %s", got)
	assert.Equal(t, int64(code), got.int("process.exit.code"))

	c.stop(t)
}

// pick returns m's values of keys (those it has).
func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func seqNumber(e lokiEntry) int64 {
	n, _ := strconv.ParseInt(e.labels["seq_number"], 10, 64)
	return n
}
