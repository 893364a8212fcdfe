// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import "fmt"

// The ring sizes a receiver accepts (its ring_slots), in slots of SlotSize
// bytes: a power of two from MinRingSlots to MaxRingSlots.
const (
	MinRingSlots     = 256
	MaxRingSlots     = 1 << 22 // 4 Mi slots: 512 MiB of ring
	DefaultRingSlots = 1 << 16 // 8 MiB
)

// CheckRingSlots says why n slots is not a ring size a receiver accepts; nil
// when it is one.
func CheckRingSlots(n int) error {
	if n < MinRingSlots || n > MaxRingSlots || n&(n-1) != 0 {
		return fmt.Errorf("%d is not allowed; use a power of two from %d to %d", n, MinRingSlots, MaxRingSlots)
	}
	return nil
}
