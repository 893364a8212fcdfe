// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// BenchmarkHookCost is what each hook costs (root; docs/benchmarks.md has the
// figures and the loop that interleaves the hooks):
//
//	go test -run '^$' -bench 'HookCost/raw_syscalls' ./receiver/grpcreceiver/internal/capture/
//
// Per hook, and with no hook attached (none, the baseline):
//   - getppid: a system call none of the hooks follows, ns/op (BPF
//     statistics off: they cost two clock reads per run). raw_syscalls runs
//     its program on every system call's exit; syscalls puts the kernel's
//     perf probe on every exit, which runs no program for getppid;
//   - read: a 1-byte read of /dev/zero, one of the followed calls that is no
//     socket I/O (files, pipes): both syscall hooks walk its fd;
//   - grpc: unary calls of test/grpctest on one connection, ns/op, and
//     from the hook programs' statistics (kernel.bpf_stats_enabled, on for
//     this part only): bpf-ns/op (their run time per call, both ends),
//     runs/op and bpf-ns/run. For raw_syscalls they count every system call
//     on the host in the window, other processes' too.
func BenchmarkHookCost(b *testing.B) {
	testutil.RequireRoot(b)
	for _, hook := range []Hook{"none", HookSocket, HookSyscalls, HookRawSyscalls} {
		b.Run(string(hook), func(b *testing.B) {
			var c *Capture
			if hook != "none" {
				var err error
				c, err = Open(Options{Hook: hook, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384})
				if err != nil {
					b.Skipf("hook %s: %v", hook, err)
				}
				defer c.Close()
			}
			b.Run("getppid", func(b *testing.B) {
				for b.Loop() {
					unix.Getppid()
				}
			})
			b.Run("read", func(b *testing.B) {
				f, err := os.Open("/dev/zero")
				require.NoError(b, err)
				defer f.Close()
				buf := make([]byte, 1)
				for b.Loop() {
					_, _ = unix.Read(int(f.Fd()), buf)
				}
			})
			b.Run("grpc", func(b *testing.B) { benchGRPC(b, c, hook) })
		})
	}
}

func benchGRPC(b *testing.B, c *Capture, hook Hook) {
	_, client := grpctest.StartDialed(b)
	ctx := context.Background()
	require.NoError(b, grpctest.Unary(ctx, client, codes.OK, "")) // the connection's setup
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(b, err)
	defer stats.Close()
	run0, n0 := hookRunTime(b, c, hook)
	for b.Loop() {
		require.NoError(b, grpctest.Unary(ctx, client, codes.OK, ""))
	}
	run, n := hookRunTime(b, c, hook)
	if c == nil || n == n0 {
		return
	}
	b.ReportMetric(float64(run-run0)/float64(b.N), "bpf-ns/op")
	b.ReportMetric(float64(n-n0)/float64(b.N), "runs/op")
	b.ReportMetric(float64(run-run0)/float64(n-n0), "bpf-ns/run")
}

// hookRunTime sums the run time and runs of the hook's programs.
func hookRunTime(b *testing.B, c *Capture, hook Hook) (time.Duration, uint64) {
	var run time.Duration
	var n uint64
	if c == nil {
		return 0, 0
	}
	for _, name := range hookPrograms(hook) {
		st, err := c.coll.Programs[name].Stats()
		require.NoError(b, err)
		run += st.Runtime
		n += st.RunCount
	}
	return run, n
}
