// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Park waits only when the head, looked at after the flag is set, shows
// nothing new; the flag is set while it waits and cleared when it returns.
func TestParkLooksAgainAfterSettingTheFlag(t *testing.T) {
	ctl, _, _, r := newRing(t, 8)
	parked := func() uint64 { return atomic.LoadUint64(r.parked) }

	// Nothing claimed: Park waits, with the flag set and the timeout given.
	calls := 0
	woke, err := Park(r, func(timeout time.Duration) (bool, error) {
		calls++
		if timeout != 7*time.Millisecond {
			t.Errorf("wait got timeout %v, want 7ms", timeout)
		}
		if parked() != 1 {
			t.Error("the parked flag is not set while the reader waits")
		}
		return true, nil
	}, 7*time.Millisecond)
	if !woke || err != nil || calls != 1 {
		t.Fatalf("Park on an empty ring: woke %v, err %v, %d waits; want true, nil, 1", woke, err, calls)
	}
	if parked() != 0 {
		t.Fatal("the parked flag is still set after Park")
	}

	// A ticket claimed since the last read: Park returns without waiting.
	claim(ctl, 1)
	woke, err = Park(r, func(time.Duration) (bool, error) {
		t.Error("Park waited with a ticket to read")
		return true, nil
	}, time.Second)
	if woke || err != nil {
		t.Fatalf("Park with a ticket to read: woke %v, err %v; want false, nil", woke, err)
	}
	if parked() != 0 {
		t.Fatal("the parked flag is still set after Park")
	}
}

// wait's error comes back, and the flag is cleared all the same.
func TestParkReturnsTheWaitsError(t *testing.T) {
	_, _, _, r := newRing(t, 8)
	boom := errors.New("doorbell broken")
	if _, err := Park(r, func(time.Duration) (bool, error) { return false, boom }, time.Second); !errors.Is(err, boom) {
		t.Fatalf("Park: err %v, want %v", err, boom)
	}
	if atomic.LoadUint64(r.parked) != 0 {
		t.Fatal("the parked flag is still set after a failed wait")
	}
}
