// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// selfNSChild marks the test binary run in a pid namespace of its own.
const selfNSChild = "CAPTURE_TEST_SELF_PIDNS"

// TestCaptureSkipsSelfInPIDNamespace: the collector in a pid namespace of
// its own (a container without the host's pids; the test binary re-run
// under CLONE_NEWPID, pid 1 there) skips its own calls, and still
// captures curl's, another process of that namespace. Before, SkipPID
// (os.Getpid(), 1) was compared with the host's tgids: the collector's
// exports were traced (and the host's init skipped).
func TestCaptureSkipsSelfInPIDNamespace(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv(selfNSChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCaptureSkipsSelfInPIDNamespace$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), selfNSChild+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the run in a pid namespace of its own:\n%s", out)
		t.Logf("%s", out)
		return
	}
	require.Equal(t, 1, os.Getpid(), "pid 1 of a namespace of its own")
	c, err := Open(Options{Hook: hooksHere(t)[0], RingSlots: 1 << 14, MaxConns: 1024, HeaderCap: 16384, HTTP1: true, SkipPID: os.Getpid()})
	require.NoError(t, err)
	defer c.Close()
	// The collector's own requests (an export, say), then curl's.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	srvPort := port(t, srv.Listener.Addr().String())
	for i := range 5 {
		resp, err := srv.Client().Post(srv.URL+"/v1/traces", "application/x-protobuf", strings.NewReader(strconv.Itoa(i)))
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		require.NoError(t, resp.Body.Close())
	}
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", srv.URL+"/curl").CombinedOutput()
	require.NoError(t, err, "curl: %s", out)

	rec := newRecorder()
	drain(c, NewDecoder(rec))
	cnt, err := c.Counters()
	require.NoError(t, err)
	var clients, servers int // the collector's server end, curl's and the collector's client ends
	for id, o := range rec.opens {
		switch {
		case o.Role == h2.RoleServer && o.Local.Port == srvPort:
			servers++
		case o.Role == h2.RoleClient && o.Remote.Port == srvPort && rec.chunks[id] != nil:
			clients++
		}
	}
	t.Logf("self_calls %d; connections to the server captured: %d client ends, %d server ends", cnt.SelfCalls, clients, servers)
	assert.Positive(t, cnt.SelfCalls, "the collector's calls skipped (self_calls)")
	assert.Equal(t, 1, clients, "curl's client end alone captured")
	assert.Zero(t, servers, "the collector's server ends captured")
}
