// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	prepareHost()
	goleak.VerifyTestMain(m)
}
