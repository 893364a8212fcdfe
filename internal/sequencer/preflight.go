//go:build linux

package sequencer

import (
	"github.com/otelcol-seq/otelcol-seq/internal/kernelfeatures"
)

// who is the loader named in what the kernel or the process lacks.
const who = "the seq receiver"

// preflight checks what the programs need before anything is loaded, so that
// a missing privilege or kernel feature is named, with the kernel it arrived
// in and the fix, instead of a verifier dump. Every check probes the running
// kernel (distributions backport features), none reads its version number.
// BPF atomic fetch (Linux 5.12) is not a must: without it Open loads the
// ring buffer producers that need none (NoFetch).
func preflight() error {
	if err := kernelfeatures.RequireCapabilities(who); err != nil {
		return err
	}
	if err := kernelfeatures.Require(who, kernelfeatures.BTF, kernelfeatures.TPBTF); err != nil {
		return err
	}
	for _, tp := range []string{"sched_process_fork", "sched_process_exec", "sched_process_exit"} {
		if _, err := kernelfeatures.TracepointProto(tp); err != nil {
			return err
		}
	}
	return kernelfeatures.Require(who, kernelfeatures.Ring...)
}
