// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// backendBin returns a backend's binary (Jaeger, Loki): $envVar, or def,
// built by `script build` (a make target does it ahead) when it is absent.
// The test skips, loudly, only when that build is impossible.
func backendBin(t *testing.T, what, envVar, def, script string) string {
	t.Helper()
	root := repoRoot(t)
	bin := os.Getenv(envVar)
	if bin == "" {
		bin = def
	}
	if _, err := os.Stat(bin); err == nil {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		return abs
	}
	t.Logf("%s is missing: building it with %s build (minutes; `make` does it ahead)", bin, script)
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(root, script), "build")
	cmd.Dir = root
	cmd.Stdout = io.MultiWriter(os.Stderr, &out)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		t.Skipf("SKIPPED, NOT PASSED: %s could not be built, so the collector's export was not checked "+
			"against a real backend (%s build: %v). Build it ahead or point %s at a binary. Last output:\n%s",
			what, script, err, envVar, tail(out.String(), 2000))
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s build succeeded but %s is missing: %v", script, bin, err)
	}
	return bin
}

// daemon is a backend process a test runs, its output kept in a log file.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan error
	client  *http.Client // for the readiness URL; nil: http.DefaultClient
}

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	return tail(string(b), 6000)
}

// run starts bin (again, after stop) with args and env added to the test's,
// stops it at the test's end, and waits up to timeout for GET ready to
// answer 200.
func (d *daemon) run(t *testing.T, bin string, args, env []string, ready string, timeout time.Duration) {
	t.Helper()
	d.done = make(chan error, 1)
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer logf.Close()
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	require.NoError(t, d.cmd.Start())
	cmd, done := d.cmd, d.done
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { d.stopCmd(cmd, done) })
	client := d.client
	if client == nil {
		client = http.DefaultClient
	}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		select {
		case err := <-d.done:
			t.Fatalf("%s exited before %s answered (%v):\n%s", d.name, ready, err, d.log())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not answering after %v (%v):\n%s", d.name, ready, timeout, err, d.log())
		}
	}
}

// stop ends the process (SIGTERM, SIGKILL after 10 s).
func (d *daemon) stop() { d.stopCmd(d.cmd, d.done) }

func (d *daemon) stopCmd(cmd *exec.Cmd, done chan error) {
	select {
	case err := <-done:
		done <- err // already ended; leave the result for a later look
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		done <- err
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		done <- <-done
	}
}
