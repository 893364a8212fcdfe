// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bootclock

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNowIsTheBootClock(t *testing.T) {
	var before, after unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &before))
	now := Now()
	require.NoError(t, unix.ClockGettime(unix.CLOCK_BOOTTIME, &after))
	assert.GreaterOrEqual(t, now, uint64(before.Nano()))
	assert.LessOrEqual(t, now, uint64(after.Nano()))
}

// Offset turns a boot-clock reading into wall time: a reading taken now
// lands on the wall clock now, within what two clock reads apart cost.
func TestOffsetTurnsBootTimeIntoWallTime(t *testing.T) {
	wall := time.Now()
	off := Offset(wall)
	got := time.Unix(0, int64(Now())+off)
	assert.WithinDuration(t, wall, got, 50*time.Millisecond)
	// The same wall time gives the same offset, up to the clocks' jitter.
	assert.InDelta(t, off, Offset(wall), float64(50*time.Millisecond))
	// A wall clock one second later is an offset one second larger.
	assert.InDelta(t, off+int64(time.Second), Offset(wall.Add(time.Second)), float64(50*time.Millisecond))
}

func TestID(t *testing.T) {
	id, err := ID()
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), id)
	again, err := ID()
	require.NoError(t, err)
	assert.Equal(t, id, again, "the boot id is the same for the whole boot")
}
