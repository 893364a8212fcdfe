// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package kernelfeatures

import (
	"os"
	"strings"
	"sync"
)

// realtimePath says whether the kernel is PREEMPT_RT ("1").
const realtimePath = "/sys/kernel/realtime"

// Realtime reports whether the running kernel is PREEMPT_RT (a property,
// not a feature: the loaders avoid perf buffers' wake-ups there). Read once.
var Realtime = sync.OnceValue(func() bool {
	b, err := os.ReadFile(realtimePath)
	return err == nil && strings.TrimSpace(string(b)) == "1"
})
