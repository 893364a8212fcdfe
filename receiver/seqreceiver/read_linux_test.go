// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The reader gathers for gatherWait unless, at the rate of the last read,
// a quarter of the ring would fill sooner; never under gatherMin.
func TestGatherFor(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		since time.Duration
		slots int
		want  time.Duration
	}{
		{"nothing read", 0, time.Millisecond, 65536, gatherWait},
		{"first read", 10, 0, 65536, gatherWait},
		// A fork storm here: 11 k events/s, 220 a read; a quarter of the
		// default ring lasts 1.5 s at that rate.
		{"storm, default ring", 220, 20 * time.Millisecond, 65536, gatherWait},
		// The same storm into the smallest ring: 64 slots fill in 5.8 ms.
		{"storm, 256 slots", 220, 20 * time.Millisecond, 256, 5818181 * time.Nanosecond},
		// 3.3 M records/s into the default ring: a quarter in 5 ms.
		{"flood", 66000, 20 * time.Millisecond, 65536, 4964848 * time.Nanosecond},
		{"faster than gatherMin", 1 << 20, 20 * time.Millisecond, 256, gatherMin},
	} {
		got := gatherFor(c.n, c.since, c.slots)
		assert.InDelta(t, float64(c.want), float64(got), float64(time.Microsecond), c.name)
	}
}
