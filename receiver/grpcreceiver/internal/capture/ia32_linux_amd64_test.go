// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
	"github.com/otelcol-seq/otelcol-seq/test/testutil/ia32"
)

const ia32Calls = 100000

// The raw_syscalls hook leaves 32-bit calls alone, as the syscalls:*
// tracepoints do: a child makes ia32Calls ia32 getpid calls (20, writev's
// number on x86-64) with rdi holding a connected TCP socket's fd. Taken for
// writev they would be walked to that socket, each counted in sock_calls
// (without the program's TS_COMPAT check: +100 077 for 100 000 calls).
func TestRawSyscallsSkipsIA32(t *testing.T) {
	testutil.RequireRoot(t)
	c, err := Open(Options{Hook: HookRawSyscalls, RingSlots: 1 << 14, MaxConns: 4096, HeaderCap: 16384})
	require.NoError(t, err)
	defer c.Close()
	before, err := c.Counters()
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CAPTURE_IA32_CHILD=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGSEGV {
		t.Skipf("no ia32 emulation in this kernel (int 0x80 killed the child): %s", out)
	}
	require.NoError(t, err, "%s", out)
	after, err := c.Counters()
	require.NoError(t, err)
	n := after.SockCalls - before.SockCalls
	t.Logf("sock_calls +%d (other processes' socket I/O) over %d ia32 calls", n, ia32Calls)
	require.Less(t, n, uint64(ia32Calls/2), "ia32 calls taken for writev")
}

// TestMain runs the package's tests, or, in the child TestRawSyscallsSkipsIA32
// starts (CAPTURE_IA32_CHILD set), only the ia32 calls.
func TestMain(m *testing.M) {
	if os.Getenv("CAPTURE_IA32_CHILD") != "" {
		ia32Child()
		return
	}
	os.Exit(m.Run())
}

// ia32Child makes the ia32 calls on a connected TCP socket's fd; it panics
// (a non-zero exit) when one goes wrong.
func ia32Child() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		panic(err)
	}
	if err := raw.Control(func(fd uintptr) {
		for range ia32Calls {
			if pid := ia32.Getpid(fd); pid != uintptr(os.Getpid()) {
				panic("ia32 getpid returned " + strconv.Itoa(int(pid)))
			}
		}
	}); err != nil {
		panic(err)
	}
}
