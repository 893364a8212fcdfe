// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64 || riscv64 || 386 || arm)

package event

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// The table agrees with the kernel headers, as x/sys/unix knows them.
func TestSignalNameMatchesUnix(t *testing.T) {
	for sig := 1; sig < len(linuxSignals); sig++ {
		assert.Equal(t, unix.SignalName(syscall.Signal(sig)), SignalName(sig), "signal %d", sig)
	}
}
