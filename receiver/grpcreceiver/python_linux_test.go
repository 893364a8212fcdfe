// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
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

var pyScript = filepath.Join("..", "..", "testdata", "grpc", "py_grpc.py")

// countSpans counts the spans of a method by kind and status.
func countSpans(spans []ptrace.Span, method string) map[string]int {
	n := map[string]int{}
	for _, s := range spans {
		if attr(s, "rpc.method") == method {
			n[fmt.Sprintf("%s %s", s.Kind(), attr(s, "rpc.response.status_code"))]++
		}
	}
	return n
}

// grpcio (C-core: sendmsg and recvmsg with iovecs) against grpc-go, both ways.
func TestReceiverPythonGRPC(t *testing.T) {
	testutil.RequireRoot(t)
	py := grpctest.PythonGRPC(t, filepath.Join("..", ".."))
	for _, hook := range []string{HookSocket, HookSyscalls, HookRawSyscalls} {
		t.Run(hook, func(t *testing.T) {
			sink, stop := startReceiver(t, func(c *Config) { c.Hook = hook })
			defer stop()
			const calls = 500
			method := grpctest.Service + "/UnaryCall"

			t.Run("python_server", func(t *testing.T) {
				cmd := exec.Command(py, pyScript, "server")
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
				line, err := bufio.NewReader(stdout).ReadString('\n')
				require.NoError(t, err)
				addr := "127.0.0.1:" + strings.TrimSpace(line)
				cc, client, err := grpctest.Dial(addr)
				require.NoError(t, err)
				defer cc.Close()
				var wg sync.WaitGroup
				for w := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < calls; i += 8 {
							assert.NoError(t, grpctest.Unary(context.Background(), client, codes.OK, ""))
						}
					}()
				}
				wg.Wait()
				require.Error(t, grpctest.Unary(context.Background(), client, codes.NotFound, "notfound"))
				port := int64(mustPort(t, addr))
				require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*calls+2 }, 30*time.Second, 50*time.Millisecond,
					"spans: %v", countSpans(spansOf(sink, port), method))
				assert.Equal(t, map[string]int{"Client OK": calls, "Server OK": calls, "Client NOT_FOUND": 1, "Server NOT_FOUND": 1},
					countSpans(spansOf(sink, port), method))
			})

			t.Run("python_client", func(t *testing.T) {
				srv, err := grpctest.Start()
				require.NoError(t, err)
				defer srv.Stop()
				out, err := exec.Command(py, pyScript, "client", srv.Addr, fmt.Sprint(calls)).CombinedOutput()
				require.NoError(t, err, "%s", out)
				port := int64(mustPort(t, srv.Addr))
				require.Eventually(t, func() bool { return len(spansOf(sink, port)) >= 2*calls+2 }, 30*time.Second, 50*time.Millisecond,
					"spans: %v", countSpans(spansOf(sink, port), method))
				assert.Equal(t, map[string]int{"Client OK": calls, "Server OK": calls, "Client NOT_FOUND": 1, "Server NOT_FOUND": 1},
					countSpans(spansOf(sink, port), method))
			})
		})
	}
}

func mustPort(t *testing.T, addr string) uint16 { return port(t, addr) }
