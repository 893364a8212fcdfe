// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"time"

	"github.com/otelcol-seq/otelcol-seq/internal/bootclock"
)

// syncBootOffset keeps the boot-clock→wall-clock offset steady: reading the
// two clocks jitters by microseconds, which would make one process's
// creation time print differently in its fork and exit records. The offset
// moves only when the wall clock was stepped (by more than a millisecond).
func (r *seqReceiver) syncBootOffset(now time.Time) {
	off := bootclock.Offset(now)
	if d := off - r.mapper.BootOffset; d > int64(time.Millisecond) || d < -int64(time.Millisecond) {
		r.mapper.BootOffset = off
		if r.model != nil {
			r.model.SetBootOffset(off)
		}
	}
}
