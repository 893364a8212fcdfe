// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import "time"

// Parker is the reader's side of the doorbell handshake (see
// [Reader.SetParked]): a *Reader, or the reader of another transport that
// keeps the same flag (internal/ring/transport's Source).
type Parker interface {
	SetParked()
	ClearParked() bool
	Head() uint64 // tickets issued
	Next() uint64 // the next ticket the reader hands out
}

// Park is how a reader with nothing to read sleeps: it sets the parked
// flag, looks at the head again (a producer publishes, then reads the flag:
// one of the two sees the other) and, only if there is still nothing new,
// calls wait (the doorbell's) with timeout; then it takes the flag back.
// woke and err are wait's; a reader that found a new ticket returns at once,
// with woke false, without waiting.
func Park(p Parker, wait func(timeout time.Duration) (woke bool, err error), timeout time.Duration) (woke bool, err error) {
	p.SetParked()
	defer p.ClearParked()
	if p.Head() != p.Next() {
		return false, nil
	}
	return wait(timeout)
}
