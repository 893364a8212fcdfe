// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"os"
	"testing"
)

// RequireRoot skips a test that loads BPF programs (CAP_BPF, CAP_PERFMON) or
// starts privileged tools when it is not running as root. CI runs as root,
// where such tests never skip.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF, CAP_PERFMON); CI runs as root and runs this test")
	}
}
