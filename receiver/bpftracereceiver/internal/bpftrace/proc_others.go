// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package bpftrace

import (
	"errors"
	"os"
	"syscall"
)

type proc struct {
	stdout, stderr *os.File
	exited         chan struct{}
	err            error
}

func startProc(string, []string, []string) (*proc, error) {
	return nil, errors.New("bpftrace runs on Linux only")
}

func (*proc) signal(syscall.Signal) {}

func (*proc) state() *os.ProcessState { return nil }
