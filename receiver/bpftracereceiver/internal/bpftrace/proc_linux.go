// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// proc is a running bpftrace: the leader of its own process group, so that
// signals reach whatever it started too, and nothing it started survives it.
type proc struct {
	cmd            *exec.Cmd
	pid            int
	stdout, stderr *os.File // read ends

	mu     sync.Mutex // held while reaping: no signal to a reaped (reusable) pid
	reaped bool
	exited chan struct{} // closed once reaped
	err    error         // cmd.Wait's error
}

// startProc starts path with args and env, stdin /dev/null, stdout and stderr pipes.
func startProc(path string, args, env []string) (*proc, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout = outW // *os.File: handed to the child, no copying goroutine
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // its own group: killed as a group, no terminal ^C
		// Should the collector die without Shutdown, bpftrace dies too (and
		// its probes are detached with it).
		Pdeathsig: syscall.SIGKILL,
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &proc{
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		stdout: outR,
		stderr: errR,
		exited: make(chan struct{}),
	}
	go p.wait()
	return p, nil
}

// wait waits for bpftrace to exit, kills what is left of its process group
// while the exited leader still holds the group's id, then reaps it.
func (p *proc) wait() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	p.mu.Lock()
	_ = unix.Kill(-p.pid, unix.SIGKILL)
	p.err = p.cmd.Wait()
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
}

// signal sends sig to the process group, unless bpftrace has been reaped.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = unix.Kill(-p.pid, sig)
	}
}

func (p *proc) state() *os.ProcessState { return p.cmd.ProcessState }
