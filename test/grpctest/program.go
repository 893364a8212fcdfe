// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TLSResult is what cmd/grpctls prints when done.
type TLSResult struct {
	PID    int   `json:"pid"`
	Calls  int   `json:"calls"`
	Timed  int   `json:"timed"`  // calls on the clock (all but the first, which makes the connection)
	Failed int64 `json:"failed"` // OK calls that failed (the NOT_FOUND call not counted)
	WallNs int64 `json:"wall_ns"`
	CPUNs  int64 `json:"cpu_ns"` // user and system time of the process over the timed calls
}

// BuildTLSProgram builds cmd/grpctls (a grpc-go server and client over Go
// crypto/tls in one process: a Go executable of its own, for the TLS probes)
// at out, with extra go build flags, by the toolchain running the caller.
func BuildTLSProgram(out string, flags ...string) error {
	args := append(append([]string{"build", "-o", out}, flags...), "github.com/otelcol-seq/otelcol-seq/test/grpctest/cmd/grpctls")
	if b, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...).CombinedOutput(); err != nil { //nolint:staticcheck // SA1019: the toolchain that built this test, on this machine
		return fmt.Errorf("go build grpctls: %w: %s", err, b)
	}
	return nil
}

// TLSProgram is a running cmd/grpctls.
type TLSProgram struct {
	Addr  string // its server's
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartTLSProgram runs the grpctls at bin with args and reads its address.
func StartTLSProgram(bin string, args ...string) (*TLSProgram, error) {
	p := &TLSProgram{cmd: exec.Command(bin, args...)}
	p.cmd.Stderr = os.Stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.out = bufio.NewReader(stdout)
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("grpctls: read its address: %w", err)
	}
	p.Addr = strings.TrimSpace(line)
	return p, nil
}

// Go lets a grpctls started with -wait make its calls.
func (p *TLSProgram) Go() error {
	_, err := io.WriteString(p.stdin, "go\n")
	return err
}

// Result reads what it measured and waits for it to exit.
func (p *TLSProgram) Result() (TLSResult, error) {
	var res TLSResult
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.Kill()
		return res, fmt.Errorf("grpctls: read its result: %w", err)
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		p.Kill()
		return res, fmt.Errorf("grpctls: %q: %w", line, err)
	}
	if err := p.cmd.Wait(); err != nil {
		return res, fmt.Errorf("grpctls: %w", err)
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("grpctls: %d calls failed", res.Failed)
	}
	return res, nil
}

// PID is its process id.
func (p *TLSProgram) PID() int { return p.cmd.Process.Pid }

// Kill ends it (after a failure).
func (p *TLSProgram) Kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// PythonGRPC returns the python of the venv with grpcio and h2 that
// scripts/python-grpc.sh builds once outside the clone; root is the
// repository's root as the caller reaches it.
func PythonGRPC(tb testing.TB, root string) string {
	tb.Helper()
	out, err := exec.Command(filepath.Join(root, "scripts", "python-grpc.sh")).Output()
	if err != nil {
		tb.Fatalf("scripts/python-grpc.sh: a venv with grpcio and h2 from PyPI (needs python3-venv and the network the first time): %v", err)
	}
	return strings.TrimSpace(string(out))
}
