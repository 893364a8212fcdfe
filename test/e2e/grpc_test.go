// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// readSpans parses the file exporter's OTLP JSON traces, one request a line.
func readSpans(t *testing.T, path string) []ptrace.Span {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []ptrace.Span
	var um ptrace.JSONUnmarshaler
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		td, err := um.UnmarshalTraces(sc.Bytes())
		if err != nil {
			continue // a line being written
		}
		for i := range td.ResourceSpans().Len() {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := range ss.Len() {
				for k := range ss.At(j).Spans().Len() {
					out = append(out, ss.At(j).Spans().At(k))
				}
			}
		}
	}
	return out
}

// The shipped config/grpc.yaml under the built collector: real gRPC calls on
// this host reach the OTLP file as one CLIENT and one SERVER span each, with
// the method and the status, while the seq receiver's process spans go to
// their own file.
func TestGRPCConfigExportsCalls(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "grpc.jsonl")
	procs := filepath.Join(dir, "seq.jsonl")
	c := startCollector(t, []string{"GRPC_OUTPUT=" + out, "SEQ_OUTPUT=" + procs},
		"--config", filepath.Join(repoRoot(t), "config", "grpc.yaml"))

	srv, client := grpctest.StartDialed(t)
	ctx := context.Background()
	const calls = 300
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < calls; i += 4 {
				assert.NoError(t, grpctest.Unary(ctx, client, codes.OK, ""))
			}
		}()
	}
	wg.Wait()
	require.Error(t, grpctest.Unary(ctx, client, codes.PermissionDenied, "nope"))

	_, portStr, _ := strings.Cut(srv.Addr, ":")
	ours := func() map[string]int {
		n := map[string]int{}
		for _, s := range readSpans(t, out) {
			p, _ := s.Attributes().Get("server.port")
			if p.AsString() != portStr {
				continue
			}
			m, _ := s.Attributes().Get("rpc.method")
			st, _ := s.Attributes().Get("rpc.response.status_code")
			n[s.Kind().String()+" "+m.Str()+" "+st.Str()]++
		}
		return n
	}
	unary := grpctest.Service + "/UnaryCall"
	require.Eventually(t, func() bool {
		n := ours()
		return n["Client "+unary+" OK"] >= calls && n["Server "+unary+" PERMISSION_DENIED"] >= 1
	}, 60*time.Second, 200*time.Millisecond, "spans in %s: %v\n%s", out, ours(), tail(c.log(), 3000))
	c.stop(t)
	assert.Equal(t, map[string]int{
		"Client " + unary + " OK": calls, "Server " + unary + " OK": calls,
		"Client " + unary + " PERMISSION_DENIED": 1, "Server " + unary + " PERMISSION_DENIED": 1,
	}, ours())
	assert.Contains(t, c.log(), "grpc receiver: capturing")
	// The process spans' pipeline ran beside it.
	assert.NotEmpty(t, readSpans(t, procs), "process spans in %s", procs)
}
