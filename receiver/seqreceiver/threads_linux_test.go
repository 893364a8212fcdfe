// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
	"github.com/otelcol-seq/otelcol-seq/internal/sharedcomponent"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The thread cases of a process exit. The test binary re-executes itself
// with SEQ_THREAD_HELPER set; init then runs the case on the process's
// main (leader) thread before any test starts, and never returns.
const helperEnv = "SEQ_THREAD_HELPER"

func init() {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	runtime.LockOSThread() // init runs on the leader thread: keep it there
	os.Exit(runThreadHelper(mode))
}

// rawSleep sleeps without the Go scheduler (the leader thread may be gone).
func rawSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_, _, _ = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// onOtherThread runs fn on a thread other than the leader and waits until
// it has started.
func onOtherThread(fn func()) {
	var started atomic.Bool
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with fn
		started.Store(true)
		fn()
	}()
	for !started.Load() {
		rawSleep(time.Millisecond)
	}
}

func runThreadHelper(mode string) int {
	switch mode {
	case "leader_exits_first":
		// pthread_exit in main: the leader ends alone, another thread ends
		// the process later with exit_group(5).
		onOtherThread(func() {
			rawSleep(100 * time.Millisecond)
			_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 5, 0, 0)
		})
		_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
	case "thread_exit_group":
		// A thread that is not the leader calls exit_group(7).
		onOtherThread(func() { _, _, _ = syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 7, 0, 0) })
		for {
			rawSleep(time.Second)
		}
	case "thread_execve":
		// A thread that is not the leader calls execve: the kernel ends
		// every other thread, the leader included, and the exec'ing
		// thread takes the process's pid; sh then exits 4.
		onOtherThread(func() {
			err := syscall.Exec("/bin/sh", []string{"sh", "-c", "exit 4"}, os.Environ())
			fmt.Fprintln(os.Stderr, "exec:", err)
			_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 99, 0, 0)
		})
		for {
			rawSleep(time.Second)
		}
	case "thread_storm":
		// 200 threads start and end, one at a time and in bursts, then
		// the process exits 0.
		for i := range 200 {
			done := make(chan struct{})
			go func() {
				runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
				if i%2 == 0 {
					close(done)
					return
				}
				defer close(done)
			}()
			<-done
		}
		return 0
	}
	return 100
}

// exitCase runs one helper case and returns its pid and exit code.
func exitCase(t *testing.T, mode string) (pid int64, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v %s", mode, err, out)
	}
	return int64(cmd.Process.Pid), cmd.ProcessState.ExitCode()
}

// Every thread case gives exactly one process.exit with the process's exit
// code as wait() reports it, and thread exits never pose as process exits:
// on both ways the producers tell them apart (6.16's group_dead argument,
// and the thread group's live count with a claim where it is missing).
func TestThreadCasesOneProcessExit(t *testing.T) {
	testutil.RequireRoot(t)
	modes := []sequencer.ExitTracking{sequencer.ExitLiveCount}
	if has, err := kernelfeatures.ExitHasGroupDead(); err == nil && has {
		modes = append(modes, sequencer.ExitGroupDead)
	}
	cases := []struct {
		mode     string
		wantCode int
	}{
		{"leader_exits_first", 5},
		{"thread_exit_group", 7},
		{"thread_execve", 4},
		{"thread_storm", 0},
	}
	for _, tracking := range modes {
		t.Run(string(tracking), func(t *testing.T) {
			sink := &consumertest.LogsSink{}
			cfg := createDefaultConfig()
			cfg.ThreadEvents = true
			require.NoError(t, confmap.Validate(cfg))
			rcv, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
			require.NoError(t, err)
			r := rcv.(*sharedcomponent.Component[*seqReceiver]).C
			r.open = func(o sequencer.Options) (kernel, error) {
				o.ExitTracking = tracking
				return openSequencer(o)
			}
			require.NoError(t, rcv.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(t, rcv.Shutdown(context.Background())) }()

			for _, c := range cases {
				pid, code := exitCase(t, c.mode)
				require.Equal(t, c.wantCode, code, "%s: the helper's own exit status", c.mode)
				var exits, threadExits, execs []rec
				waitFor(t, c.mode+"'s process.exit", func() bool {
					exits, threadExits, execs = nil, nil, nil
					for _, r := range flatten(sink.AllLogs()) {
						if r.int("process.pid") != pid {
							continue
						}
						switch r.name {
						case "process.exit":
							exits = append(exits, r)
						case "thread.exit":
							threadExits = append(threadExits, r)
						case "process.exec":
							execs = append(execs, r)
						}
					}
					return len(exits) > 0
				})
				time.Sleep(50 * time.Millisecond) // a second process.exit would be read by now
				exits = nil
				for _, r := range flatten(sink.AllLogs()) {
					if r.int("process.pid") == pid && r.name == "process.exit" {
						exits = append(exits, r)
					}
				}
				require.Len(t, exits, 1, "%s: exactly one process.exit", c.mode)
				assert.Equal(t, int64(c.wantCode), exits[0].int("process.exit.code"), "%s: the process's exit code", c.mode)
				switch c.mode {
				case "leader_exits_first", "thread_exit_group":
					assert.NotEmpty(t, threadExits, "%s: the other threads' exits are thread.exit records", c.mode)
				case "thread_execve":
					var sh *rec
					for i := range execs {
						if execs[i].attrs["process.executable.path"] == "/bin/sh" {
							sh = &execs[i]
						}
					}
					require.NotNil(t, sh, "the exec of /bin/sh by a non-leader thread")
					assert.NotZero(t, sh.int("seq.exec.old_tid"), "the exec names the thread that called execve")
				case "thread_storm":
					assert.GreaterOrEqual(t, len(threadExits), 200, "every thread's end is a thread.exit")
				}
				t.Logf("%s %s: pid %d, exit code %d, %d thread.exit records", tracking, c.mode, pid, exits[0].int("process.exit.code"), len(threadExits))
			}
		})
	}
}
