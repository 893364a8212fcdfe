// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
)

// A process running at start chooses its own command line, up to a quarter
// of its stack limit: the snapshot reads at most max_args_bytes of it, and
// flags the cut, as the kernel does at an exec.
func TestProcCmdlineBounded(t *testing.T) {
	pid := uint32(os.Getpid())
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skip(err)
	}
	whole := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")

	exe, args, flags := procCmdline(pid, len(b))
	assert.NotEmpty(t, exe)
	assert.Equal(t, whole, args)
	assert.Zero(t, flags)

	_, args, flags = procCmdline(pid, 5)
	assert.Equal(t, event.FlagArgsTruncated, flags)
	assert.LessOrEqual(t, len(strings.Join(args, "\x00")), 5)
	assert.True(t, strings.HasPrefix(whole[0], args[0]))

	_, args, flags = procCmdline(pid, 0) // max_args_bytes: 0, argv off
	assert.Empty(t, args)
	assert.Zero(t, flags)
}
