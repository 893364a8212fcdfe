// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && usermanifest && linux

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
)

// logSink is an OTLP/gRPC logs backend: it keeps each record's body and
// attributes as text.
type logSink struct {
	plogotlp.UnimplementedGRPCServer
	mu      sync.Mutex
	records []string
}

func (s *logSink) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rls := req.Logs().ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				s.records = append(s.records, fmt.Sprintf("%s %s %v", lr.EventName(), lr.Body().AsString(), lr.Attributes().AsRaw()))
			}
		}
	}
	return plogotlp.NewExportResponse(), nil
}

// has reports whether a record holds every one of parts.
func (s *logSink) has(parts ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.records {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(r, p)
		}
		if all {
			return true
		}
	}
	return false
}

// A user's own collector: their ocb manifest at this project's collector
// release takes a contrib component, core's otlp exporter and two of our
// receivers by their module paths (replaced by this working tree, as a user
// with a checkout would: the modules are not published). ocb builds it, and
// the binary runs: the seq receiver's exec record and the bpftrace
// receiver's printed line reach an OTLP backend and contrib's file exporter.
// The contrib component is the file exporter, not the filelog receiver:
// filelog v0.161.0 needs pkg/stanza v0.161.0, which the module proxy
// refuses. Needs ocb (OCB_BIN, `make tools`), root, bpftrace and the proxy.
func TestUserManifest(t *testing.T) {
	testutil.RequireRoot(t)
	ocb := os.Getenv("OCB_BIN")
	if ocb == "" {
		ocb = "../../.tools/builder"
	}
	_, err := os.Stat(ocb)
	require.NoError(t, err, "ocb is missing: run `make tools`")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()

	const mod = "github.com/otelcol-seq/otelcol-seq"
	manifest := fmt.Sprintf(`dist:
  module: example.com/mycollector
  name: mycollector
  output_path: %[1]s/dist
receivers:
  - gomod: %[2]s/receiver/seqreceiver v0.0.0
  - gomod: %[2]s/receiver/bpftracereceiver v0.0.0
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter v0.161.0
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v0.161.0
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider v1.67.0
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider v1.67.0
replaces:
  - %[2]s => %[3]s
  - %[2]s/receiver/seqreceiver => %[3]s/receiver/seqreceiver
  - %[2]s/receiver/bpftracereceiver => %[3]s/receiver/bpftracereceiver
`, dir, mod, root)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644))
	build := exec.Command(ocb, "--config", filepath.Join(dir, "manifest.yaml"))
	build.Env = append(os.Environ(), "GOWORK=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "ocb: %s", out)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	sink := &logSink{}
	plogotlp.RegisterGRPCServer(srv, sink)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	// A program of our own name, so that the seq record and the bpftrace
	// line are the ones this test caused.
	name := fmt.Sprintf("um%06d", rand.IntN(1000000))
	prog := filepath.Join(dir, name)
	bin, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(prog, bin, 0o755))
	exported := filepath.Join(dir, "logs.jsonl")

	config := fmt.Sprintf(`receivers:
  seq: {}
  bpftrace:
    scripts:
      - name: execs
        program: 'tracepoint:sched:sched_process_exec { printf("exec %%s\n", comm); }'
exporters:
  otlp:
    endpoint: %[2]s
    tls:
      insecure: true
  file:
    path: %[1]s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [seq, bpftrace]
      exporters: [otlp, file]
`, exported, lis.Addr())
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))

	c := &collector{ready: make(chan struct{}), done: make(chan error, 1)}
	c.cmd = exec.Command(filepath.Join(dir, "dist", "mycollector"), "--config", cfg)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	require.NoError(t, c.cmd.Start())
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
		}
	})
	select {
	case <-c.ready:
	case err := <-c.done:
		t.Fatalf("the user's collector exited before it was ready (%v):\n%s", err, c.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("the user's collector not ready after 30 s:\n%s", c.log())
	}

	// bpftrace attaches after the collector is ready: exec until its line arrives.
	require.NoError(t, exec.Command(prog).Run())
	require.Eventually(t, func() bool {
		_ = exec.Command(prog).Run()
		return sink.has("process.exec", prog) && sink.has("exec "+name)
	}, 30*time.Second, 500*time.Millisecond, "records at the backend: seq exec %v, bpftrace line %v\n%s",
		sink.has("process.exec", prog), sink.has("exec "+name), c.log())
	c.stop(t)
	var inFile, printed bool
	for _, r := range readExport(t, exported) {
		inFile = inFile || (r.name == "process.exec" && r.attrs["process.executable.path"] == prog)
		printed = printed || strings.Contains(r.body, "exec "+name)
	}
	require.True(t, inFile, "the seq exec record of %s in the file exporter's output", prog)
	require.True(t, printed, "the bpftrace line in the file exporter's output")
}
