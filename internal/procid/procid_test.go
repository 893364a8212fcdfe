// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package procid

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestIDs(t *testing.T) {
	const boot = "0f6c2d1e-0000-4000-8000-000000000001"
	h := sha256.Sum256([]byte("seq.span\x00" + boot + "\x00100\x005000"))
	assert.Equal(t, pcommon.SpanID(h[:8]), SpanID(boot, 100, 5_000))
	assert.Equal(t, pcommon.SpanID(h[:8]), New(boot).SpanID(100, 5_000))
	h = sha256.Sum256([]byte("seq.trace\x00" + boot + "\x00100\x005000"))
	assert.Equal(t, pcommon.TraceID(h[:16]), TraceID(boot, 100, 5_000))
	assert.Equal(t, pcommon.TraceID(h[:16]), New(boot).TraceID(100, 5_000))

	assert.NotEqual(t, SpanID(boot, 100, 5_000), SpanID(boot, 100, 5_001))
	assert.NotEqual(t, SpanID(boot, 100, 5_000), SpanID("other", 100, 5_000))
	assert.NotEqual(t, TraceID(boot, 101, 5_000), TraceID(boot, 100, 5_000))

	// the zero IDs is the boot id ""
	var z IDs
	assert.Equal(t, New("").SpanID(7, 8), z.SpanID(7, 8))
	assert.Equal(t, New("").TraceID(7, 8), z.TraceID(7, 8))
}

func TestIDsAllocateNothing(t *testing.T) {
	p := New("boot")
	n := testing.AllocsPerRun(100, func() {
		_ = p.SpanID(1, 2)
		_ = p.TraceID(1, 2)
	})
	assert.Zero(t, n)
}
