// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package parity

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Endpoint is a Prometheus /metrics endpoint: ebpf_exporter's, or the
// collector's Prometheus exporter.
type Endpoint struct {
	Addr string // host:port
}

// FreeAddr is a 127.0.0.1 address with a port free now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Reference is a running Cloudflare ebpf_exporter (scripts/ebpf-exporter.sh
// builds it), serving /metrics on a free 127.0.0.1 port.
type Reference struct {
	Endpoint
	cmd    *exec.Cmd
	out    *syncBuffer // stderr: its log
	stdout *syncBuffer // spans, with OTEL_TRACES_EXPORTER=console
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// StartReference runs bin --config.dir=dir --config.names=names and waits
// until /metrics serves the enabled configs (the programs are attached by
// then). Its span exporter is off unless env (NAME=value, added to the
// test's environment) sets OTEL_TRACES_EXPORTER. It is stopped when the
// test ends.
func StartReference(t testing.TB, bin, dir string, names []string, env ...string) *Reference {
	t.Helper()
	r := &Reference{Endpoint: Endpoint{Addr: FreeAddr(t)}, out: &syncBuffer{}, stdout: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(bin, "--config.dir="+dir, "--config.names="+strings.Join(names, ","),
		"--web.listen-address="+r.Addr)
	r.cmd.Env = append(append(os.Environ(), "OTEL_TRACES_EXPORTER=none"), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.out
	require.NoError(t, r.cmd.Start())
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() { r.Stop(t) })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := r.get(); err == nil && strings.Contains(b, Namespace+"_enabled_configs") {
			return r
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("ebpf_exporter exited before serving /metrics (%v):\n%s", err, r.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ebpf_exporter not serving /metrics after 60 s:\n%s", r.out)
		}
	}
}

// Stop ends ebpf_exporter (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (r *Reference) Stop(t testing.TB) {
	t.Helper()
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		t.Logf("ebpf_exporter stopped: %v", err)
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		t.Logf("ebpf_exporter killed after 10 s: %v", <-r.done)
	}
}

// Log is what ebpf_exporter logged (stderr).
func (r *Reference) Log() string { return r.out.String() }

// Stdout is what ebpf_exporter printed on stdout: spans, with
// OTEL_TRACES_EXPORTER=console (complete once Stop flushed them).
func (r *Reference) Stdout() string { return r.stdout.String() }

func (e Endpoint) get() (string, error) {
	resp, err := http.Get("http://" + e.Addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b.String())
	}
	return b.String(), nil
}

// Scrape reads /metrics now.
func (e Endpoint) Scrape(t testing.TB) Snapshot {
	t.Helper()
	b, err := e.get()
	require.NoError(t, err, "GET http://%s/metrics", e.Addr)
	sn, err := FromText(strings.NewReader(b))
	require.NoError(t, err)
	return sn
}

// Round takes scrape A, then ours() (one collection of ours), then scrape B.
func (r *Reference) Round(t testing.TB, ours func() Snapshot) Round {
	t.Helper()
	a := r.Scrape(t)
	o := ours()
	return Round{A: a, Ours: o, B: r.Scrape(t)}
}

// Check compares cur with the baseline round, logs the tables under title
// and fails the test on each difference.
func Check(t testing.TB, base, cur Round, opt Options, title string) Report {
	t.Helper()
	r := Compare(base, cur, opt)
	t.Logf("%s: ebpf_exporter v2.5.1's /metrics against the collector's (config/ebpf_exporter.yaml), increases since a baseline taken once both ran "+
		"(ebpf_exporter: the bounds its scrapes around our collections give); %d series appeared after our collection, "+
		"%d only before ours attached\n\n%s", title, r.Late, r.Early, r.Markdown())
	for _, d := range r.Diffs {
		t.Errorf("difference: %s", d)
	}
	return r
}

// IgnoreNonEbpfExporter leaves out the families that are not
// ebpf_exporter's (go_*, process_*, promhttp_*).
func IgnoreNonEbpfExporter(f string) bool { return !strings.HasPrefix(f, Namespace+"_") }

// RefOnly lists ebpf_exporter's own series that the collector does not
// serve (receiver/ebpfexporterreceiver/README.md, "Migrating from
// ebpf_exporter": program states are the collector's own telemetry, and
// their id label is the kernel's id of each process's own copy; build info
// is the collector's).
var RefOnly = []string{
	Namespace + "_build_info",
	Namespace + "_ebpf_program_info",
	Namespace + "_ebpf_program_attached",
	Namespace + "_ebpf_program_run_time_seconds",
	Namespace + "_ebpf_program_run_count_total",
}
