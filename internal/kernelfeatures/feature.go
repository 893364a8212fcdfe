// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package kernelfeatures

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
)

// Feature is a kernel feature a loader needs: what it is, the Linux release
// that brought it, the fix where it is missing, and its probe, run once.
type Feature struct {
	// What names it for a reader ("the BPF ring buffer").
	What string
	// Since is the Linux release that brought it ("Linux 5.8").
	Since string
	// Fix is what a user does where it is missing: an imperative that
	// names a kernel version, a config option or a mount.
	Fix string

	probe func() error
	once  sync.Once
	err   error
}

// newFeature is a feature probed by probe.
func newFeature(what, since, fix string, probe func() error) *Feature {
	return &Feature{What: what, Since: since, Fix: fix, probe: probe}
}

// Probe reports whether the running kernel has f: nil, or why not. The
// probe runs once per process; later calls return its answer.
func (f *Feature) Probe() error {
	f.once.Do(func() { f.err = f.probe() })
	return f.err
}

// Present reports whether the running kernel has f.
func (f *Feature) Present() bool { return f.Probe() == nil }

// String is what f is and the release that brought it.
func (f *Feature) String() string { return fmt.Sprintf("%s (%s)", f.What, f.Since) }

// Lacks says that the kernel lacks f, with err, what its probe (or a load
// that needed f) returned: a verifier's refusal by the last line of its log
// before the statistics ("processed N insns ..."), which is the reason, not
// cilium/ebpf's summary with "(N line(s) omitted)". For a loader that goes
// on without f: it says why, not what to do.
func (f *Feature) Lacks(err error) string {
	return fmt.Sprintf("this kernel lacks %s (%s)", f, reason(err))
}

// Missing is the error of a loader (who, "the seq receiver") that cannot go
// on without f: what it lacks, who needs it and the fix, wrapping err.
func (f *Feature) Missing(who string, err error) error {
	return &MissingError{Feature: f, Who: who, Err: err}
}

// MissingError is a feature a loader cannot go on without.
type MissingError struct {
	Feature *Feature
	Who     string // the loader that needs it
	Err     error  // what its probe, or the load, returned
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("this kernel lacks %s, which %s needs; %s (%s)", e.Feature, e.Who, e.Feature.Fix, reason(e.Err))
}

func (e *MissingError) Unwrap() error { return e.Err }

// Require probes fs in order; the first one missing is the error, naming
// it, who needs it and the fix.
func Require(who string, fs ...*Feature) error {
	for _, f := range fs {
		if err := f.Probe(); err != nil {
			return f.Missing(who, err)
		}
	}
	return nil
}

// Summary lists which of fs the running kernel has and lacks, for a
// benchmark's report.
func Summary(fs ...*Feature) string {
	var has, lacks []string
	for _, f := range fs {
		if f.Present() {
			has = append(has, f.What)
		} else {
			lacks = append(lacks, f.What)
		}
	}
	s := "kernel has " + strings.Join(has, ", ")
	if len(lacks) > 0 {
		s += "; lacks " + strings.Join(lacks, ", ")
	}
	return s
}

// reason is err as Lacks and MissingError quote it: a verifier's refusal
// by its log's last line.
func reason(err error) string {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		for i := len(ve.Log) - 1; i >= 0; i-- {
			if line := strings.TrimSpace(ve.Log[i]); line != "" && !strings.HasPrefix(line, "processed ") {
				return "its verifier: " + line
			}
		}
	}
	return fmt.Sprint(err)
}
