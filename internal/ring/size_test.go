// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ring

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckRingSlots(t *testing.T) {
	for _, n := range []int{MinRingSlots, DefaultRingSlots, MaxRingSlots} {
		assert.NoError(t, CheckRingSlots(n), n)
	}
	for _, n := range []int{0, -256, MinRingSlots / 2, 1000, MaxRingSlots * 2} {
		assert.EqualError(t, CheckRingSlots(n), fmt.Sprintf("%d is not allowed; use a power of two from 256 to 4194304", n))
	}
}
