// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The shipped config/grpc-red.yaml under the built collector, against a
// grpc-go server in this process called by a grpcio client (another process)
// and by a grpc-go client in this process: Prometheus's scrape of the
// collector has semconv's rpc.{server,client}.call.duration histograms
// counting each call by method and status, and the service graph's edges
// (host/pid of the client -> host/pid of the server) counting the calls of
// each pair of processes.
func TestGRPCREDMetrics(t *testing.T) {
	testutil.RequireRoot(t)
	prom := freePort(t)
	c := startCollector(t, []string{"PROMETHEUS_ENDPOINT=" + prom},
		"--config", filepath.Join(repoRoot(t), "config", "grpc-red.yaml"))
	py := grpctest.PythonGRPC(t, repoRoot(t))

	srv, err := grpctest.Start()
	require.NoError(t, err)
	defer srv.Stop()
	_, port, _ := strings.Cut(srv.Addr, ":")
	require.Eventually(t, func() bool { return strings.Contains(c.log(), "grpc receiver: capturing") },
		60*time.Second, 100*time.Millisecond, "%s", tail(c.log(), 3000))

	// grpcio: pyCalls OK, then one NOT_FOUND (a client-side error only).
	const pyCalls = 120
	cmd := exec.Command(py, filepath.Join(repoRoot(t), "testdata", "grpc", "py_grpc.py"), "client", srv.Addr, strconv.Itoa(pyCalls))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pyPID := cmd.Process.Pid

	// grpc-go in this process: goCalls OK, then one PERMISSION_DENIED.
	const goCalls = 80
	cc, client, err := grpctest.Dial(srv.Addr)
	require.NoError(t, err)
	defer cc.Close()
	ctx := context.Background()
	for range goCalls {
		require.NoError(t, grpctest.Unary(ctx, client, codes.OK, ""))
	}
	require.Error(t, grpctest.Unary(ctx, client, codes.PermissionDenied, "nope"))

	host, err := os.Hostname()
	require.NoError(t, err)
	node := func(pid int) string { return host + "/" + strconv.Itoa(pid) }
	goNode, pyNode := node(os.Getpid()), node(pyPID)
	unary := grpctest.Service + "/UnaryCall"
	ours := func(status string) []string {
		return []string{`rpc_method="` + unary + `"`, `rpc_response_status_code="` + status + `"`, `server_port="` + port + `"`, `rpc_system_name="grpc"`}
	}
	edge := func(client string) []string { return []string{`client="` + client + `"`, `server="` + goNode + `"`} }
	type want struct {
		name  string
		match []string
		value float64
	}
	wants := []want{
		{"rpc_server_call_duration_seconds_count", ours("OK"), pyCalls + goCalls},
		{"rpc_client_call_duration_seconds_count", ours("OK"), pyCalls + goCalls},
		{"rpc_server_call_duration_seconds_count", ours("NOT_FOUND"), 1},
		{"rpc_client_call_duration_seconds_count", append(ours("NOT_FOUND"), `error_type="NOT_FOUND"`), 1},
		{"rpc_server_call_duration_seconds_count", ours("PERMISSION_DENIED"), 1},
		{"rpc_client_call_duration_seconds_count", append(ours("PERMISSION_DENIED"), `error_type="PERMISSION_DENIED"`), 1},
		{`rpc_server_call_duration_seconds_bucket`, append(ours("OK"), `le="+Inf"`), pyCalls + goCalls},
		{"traces_service_graph_request_total", edge(pyNode), pyCalls + 1},
		{"traces_service_graph_request_failed_total", edge(pyNode), 1},
		{"traces_service_graph_request_server_seconds_count", edge(pyNode), pyCalls + 1},
		{"traces_service_graph_request_client_seconds_count", edge(pyNode), pyCalls + 1},
		{"traces_service_graph_request_total", edge(goNode), goCalls + 1},
		{"traces_service_graph_request_failed_total", edge(goNode), 1},
	}
	var m map[string]float64
	report := func() string {
		var b strings.Builder
		for k, v := range m {
			if (strings.Contains(k, port) || strings.Contains(k, "service_graph")) && !strings.Contains(k, "_bucket{") {
				fmt.Fprintf(&b, "%s %v\n", k, v)
			}
		}
		return b.String()
	}
	require.Eventually(t, func() bool {
		if m, err = promMetrics(prom); err != nil {
			return false
		}
		for _, w := range wants {
			if sum(m, w.name, w.match...) < w.value {
				return false
			}
		}
		return true
	}, 60*time.Second, time.Second, "scrape of %s:\n%s\n%s", prom, report(), tail(c.log(), 3000))
	for _, w := range wants {
		assert.Equal(t, w.value, sum(m, w.name, w.match...), "%s %v", w.name, w.match)
	}
	// Semconv's bucket boundaries (seconds), every one of them.
	for _, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5", "0.75", "1", "2.5", "5", "7.5", "10", "+Inf"} {
		assert.Equal(t, float64(pyCalls+goCalls), sum(m, "rpc_client_call_duration_seconds_bucket", append(ours("OK"), `le="`+le+`"`)...), "le=%s", le)
	}
	// The spanmetrics call counters are dropped (the histograms' _count).
	assert.Zero(t, sum(m, "rpc_server_call_calls_total")+sum(m, "rpc_client_call_calls_total"))
	t.Logf("scrape of %s:\n%s", prom, report())
}
