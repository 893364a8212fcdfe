// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/multiarch"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls/elftest"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// probed says whether the Go executable at path is among c's probed files.
func probed(t *testing.T, c *Capture, path string) bool {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	for _, b := range c.GoBinaries() {
		if b.Dev == st.Dev && b.Ino == st.Ino {
			return true
		}
	}
	return false
}

// freshGRPCTLS is a copy of grpctls (a file no capture has seen).
func freshGRPCTLS(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "grpctls")
	testutil.CopyFile(t, buildGRPCTLS(t), bin, 0o755)
	return bin
}

// A Go TLS program that a wrapper execs after its set-up, as container
// entrypoint scripts do (exec "$@"), gets probed on the next rescan: the
// wrapper's pid was looked at already, but its executable changed (it was
// not: the pid was in the rescan's set for good).
func TestRescanTLSExecAfterSetUp(t *testing.T) {
	testutil.RequireRoot(t)
	bin := freshGRPCTLS(t)
	ready := filepath.Join(t.TempDir(), "set-up-done")
	started := make(chan *grpctest.TLSProgram, 1)
	go func() {
		p, err := grpctest.StartTLSProgram("/bin/sh", "-c",
			`while [ ! -e "$1" ]; do sleep 0.05; done; exec "$0" -wait`, bin, ready)
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	require.False(t, probed(t, c, bin), "the wrapper execs it only now")
	require.NoError(t, os.WriteFile(ready, nil, 0o644))
	p := <-started
	require.NotNil(t, p)
	t.Cleanup(p.Kill)
	got := c.RescanTLS(context.Background())
	assert.True(t, probed(t, c, bin), "not probed after the exec: %+v", got)
	assert.Positive(t, c.tlsRelooked.Load())
}

// A Go TLS program started at a pid that a short-lived process had held
// (and that a rescan had looked at) gets probed: the process is known by
// its pid and start time. The pid is taken again through
// /proc/sys/kernel/ns_last_pid (retried: other processes fork too).
func TestRescanTLSPidReused(t *testing.T) {
	testutil.RequireRoot(t)
	bin := freshGRPCTLS(t)
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	var p *grpctest.TLSProgram
	for attempt := 0; attempt < 50 && p == nil; attempt++ {
		short := exec.Command("/bin/sleep", "60")
		require.NoError(t, short.Start())
		pid := short.Process.Pid
		c.RescanTLS(context.Background()) // looks at the short-lived one
		_ = short.Process.Kill()
		_ = short.Wait()
		require.NoError(t, os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644))
		q, err := grpctest.StartTLSProgram(bin, "-wait")
		require.NoError(t, err)
		if q.PID() != pid {
			q.Kill()
			continue
		}
		p = q
	}
	require.NotNil(t, p, "no pid taken again in 50 tries")
	t.Cleanup(p.Kill)
	got := c.RescanTLS(context.Background())
	assert.True(t, probed(t, c, bin), "not probed at pid %d reused: %+v", p.PID(), got)
}

// The set of processes looked at holds the live ones only (the gone are
// pruned at each rescan), at most maxProcs: beyond, a process is counted
// and looked at again next time. It grew by every pid ever seen, to
// pid_max.
func TestRescanTLSSeenBounded(t *testing.T) {
	testutil.RequireRoot(t)
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true,
		Filter: ProcFilter{IncludeExecutables: []string{"/nothing"}}})
	defer c.Close()
	for range 20 {
		var short []*exec.Cmd
		for range 50 {
			cmd := exec.Command("/bin/sleep", "60")
			require.NoError(t, cmd.Start())
			short = append(short, cmd)
		}
		c.RescanTLS(context.Background()) // looks at them
		for _, cmd := range short {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	live := len(procPIDs())
	c.scanMu.Lock()
	n := len(c.procs)
	c.scanMu.Unlock()
	assert.LessOrEqual(t, n, live+50, "1000 processes gone, %d live", live)

	c.scanMu.Lock()
	c.maxProcs = 8
	c.scanMu.Unlock()
	before := c.tlsUnremembered.Load()
	c.RescanTLS(context.Background())
	c.scanMu.Lock()
	n = len(c.procs)
	c.scanMu.Unlock()
	assert.LessOrEqual(t, n, 8)
	assert.Greater(t, c.tlsUnremembered.Load(), before)
	cnt, err := c.Counters()
	require.NoError(t, err)
	assert.Contains(t, cnt.Named(), NamedCounter{"tls_procs_unremembered", c.tlsUnremembered.Load()})
}

// heapWatch samples the Go heap every few milliseconds until stopped: its
// peak, and a panic past limit (a hostile file being allocated: the test
// would bring the machine down before it could fail).
func heapWatch(limit uint64) (peak func() uint64, stop func()) {
	var top atomic.Uint64
	done := make(chan struct{})
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			metrics.Read(s)
			v := s[0].Value.Uint64()
			if v > top.Load() {
				top.Store(v)
			}
			if v > limit {
				panic(fmt.Sprintf("heap at %d bytes, past %d: a hostile file's declared size is being allocated", v, limit))
			}
		}
	}()
	return top.Load, func() { close(done) }
}

// mapAsNobody maps path read-only from an unprivileged process (a copy of
// this test binary run as nobody, in TestHelperMapFile) until the test ends.
func mapAsNobody(t *testing.T, self, path string) int {
	return mapAsNobodyAfter(t, self, path, "")
}

// mapAsNobodyAfter is mapAsNobody that maps path only once the file
// trigger exists (a dlopen after the process was looked at).
func mapAsNobodyAfter(t *testing.T, self, path, trigger string) int {
	cmd := exec.Command(self, "-test.run=^TestHelperMapFile$")
	cmd.Env = append(os.Environ(), "CAPTURE_MAP_FILE="+path, "CAPTURE_MAP_AFTER="+trigger)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	b := make([]byte, 6)
	_, err = out.Read(b)
	require.NoError(t, err)
	require.Equal(t, "mapped", string(b))
	return cmd.Process.Pid
}

// TestHelperMapFile is mapAsNobody's process.
func TestHelperMapFile(t *testing.T) {
	path := os.Getenv("CAPTURE_MAP_FILE")
	if path == "" {
		t.Skip("the process of mapAsNobody")
	}
	trigger := os.Getenv("CAPTURE_MAP_AFTER")
	if trigger != "" {
		fmt.Print("mapped") // to be
		for _, err := os.Stat(trigger); err != nil; _, err = os.Stat(trigger) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		os.Exit(2)
	}
	if _, err := syscall.Mmap(int(f.Fd()), 0, 1<<20, syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
		os.Exit(3)
	}
	if trigger == "" {
		fmt.Print("mapped")
	}
	time.Sleep(time.Hour)
}

// sparseLibSSL writes, at dir/name/libssl.so.3, an ELF file of 16 GiB that
// holds a few hundred bytes, whose section name table is 16 GiB (less a
// page) in the hole: debug/elf read it whole (13.8 GB RSS, then out of
// memory: fatal in Go, a crash loop as the scan at start finds it again).
func sparseLibSSL(t *testing.T, dir, name string) string {
	b := elftest.Synthetic("go1.22.0")
	sh := b[binary.LittleEndian.Uint64(b[40:])+5*64:]
	binary.LittleEndian.PutUint64(sh[24:], 4096)
	binary.LittleEndian.PutUint64(sh[32:], 16<<30-4096)
	path := filepath.Join(dir, name, "libssl.so.3")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	require.NoError(t, os.Truncate(path, 16<<30))
	return path
}

// A 16 GiB sparse file mapped at a /libssl.so path by an unprivileged
// process (read-only: no exec needed) is refused, named and counted, at
// Open and at a rescan, with the heap well under a bound (it went past
// 13 GB).
func TestTLSSparseLibSSL(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("", "sparse-libssl")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self := filepath.Join(dir, "helper")
	exe, err := os.Executable()
	require.NoError(t, err)
	testutil.CopyFile(t, exe, self, 0o755)

	atOpen := sparseLibSSL(t, dir, "a")
	mapAsNobody(t, self, atOpen)
	peak, stop := heapWatch(1 << 30)
	defer stop()
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	assert.True(t, strings.Contains(strings.Join(c.LibSSLSkipped(), "\n"), filepath.Base(filepath.Dir(atOpen))+"/libssl.so.3"),
		"not listed: %v", c.LibSSLSkipped())
	assert.Positive(t, c.tlsTooLarge.Load())

	later := sparseLibSSL(t, dir, "b")
	mapAsNobody(t, self, later)
	failed := c.TLSFilesFailed()
	got := c.RescanTLS(context.Background())
	require.Len(t, got.Failed, 1, "%+v", got)
	assert.Contains(t, got.Failed[0], "b/libssl.so.3")
	assert.Contains(t, got.Failed[0], "section name table")
	assert.Equal(t, failed+1, c.TLSFilesFailed())
	assert.Less(t, peak(), uint64(256<<20), "heap peak")
	t.Logf("heap peak %d MiB; %s", peak()>>20, got.Failed[0])
	cnt, err := c.Counters()
	require.NoError(t, err)
	assert.Contains(t, cnt.Named(), NamedCounter{"tls_files_too_large", c.tlsTooLarge.Load()})
}

// A process that maps a libssl (dlopen) after a rescan looked at it gets
// it probed at a later rescan: its size changed, its maps are read again.
func TestRescanTLSDlopenLater(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("", "dlopen-libssl")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self := filepath.Join(dir, "helper")
	exe, err := os.Executable()
	require.NoError(t, err)
	testutil.CopyFile(t, exe, self, 0o755)
	system := "/usr/lib/" + multiarch.Tuple() + "/libssl.so.3"
	if _, err := os.Stat(system); err != nil {
		t.Skip("no libssl 3 here:", err)
	}
	lib := filepath.Join(dir, "lib", "libssl.so.3") // a file no capture has seen
	require.NoError(t, os.MkdirAll(filepath.Dir(lib), 0o755))
	testutil.CopyFile(t, system, lib, 0o644)
	trigger := filepath.Join(dir, "dlopen")
	pid := mapAsNobodyAfter(t, self, lib, trigger)

	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	c.RescanTLS(context.Background()) // looks at it, no libssl yet
	require.NoError(t, os.WriteFile(trigger, nil, 0o644))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		return strings.Contains(string(b), lib)
	}, 10*time.Second, 10*time.Millisecond)
	got := c.RescanTLS(context.Background())
	assert.Contains(t, strings.Join(got.LibSSL, "\n"), lib, "%+v", got)
}
