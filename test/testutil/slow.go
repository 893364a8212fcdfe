// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"os"
	"strconv"
	"time"
)

// Environment variables that test/kernels sets in its QEMU guests, where TCG
// runs code several times slower than the host. Unset, tests run as written.
const (
	// TimeScaleEnv multiplies the tests' waits for something to happen
	// (never their upper bounds on how long an operation may take).
	TimeScaleEnv = "OTELCOL_SEQ_TEST_TIME_SCALE"
	// ForkOpsEnv caps the number of forks of the fork-storm tests.
	ForkOpsEnv = "OTELCOL_SEQ_TEST_FORK_OPS"
)

// Scaled returns d multiplied by $OTELCOL_SEQ_TEST_TIME_SCALE (a positive
// number; default 1).
func Scaled(d time.Duration) time.Duration {
	s, err := strconv.ParseFloat(os.Getenv(TimeScaleEnv), 64)
	if err != nil || s <= 0 {
		return d
	}
	return time.Duration(float64(d) * s)
}

// ForkOps returns n, or $OTELCOL_SEQ_TEST_FORK_OPS when that is a smaller
// positive number: a storm shortened, not skipped.
func ForkOps(n int) int {
	v, err := strconv.Atoi(os.Getenv(ForkOpsEnv))
	if err != nil || v <= 0 || v >= n {
		return n
	}
	return v
}
