// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"cmp"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/process"
)

// addRunning puts the processes alive at start into the process model, from
// the BPF task iterator, with their command lines from /proc.
func (r *seqReceiver) addRunning() {
	recs, err := r.seq.Snapshot()
	if err != nil {
		r.set.Logger.Warn("seq receiver: no snapshot of the running processes; their spans start at their first event", zap.Error(err))
		return
	}
	evs := make([]event.Event, 0, len(recs))
	for _, b := range recs {
		var ev event.Event
		if event.Decode(0, b, &ev) == nil {
			var cut event.Flags
			ev.Filename, ev.Args, cut = procCmdline(ev.PID, r.inner.snapshotArgs)
			ev.Flags |= cut
			process.Redact(r.inner.redact, &ev)
			evs = append(evs, ev)
		}
	}
	// Parents before children, so a child joins its parent's trace.
	slices.SortFunc(evs, func(a, b event.Event) int { return cmp.Compare(a.StartNs, b.StartNs) })
	for i := range evs {
		r.model.AddRunning(&evs[i])
	}
	r.model.EndSnapshot()
	r.set.Logger.Info("seq receiver: processes running at start", zap.Int("processes", len(recs)))
}

// procCmdline reads a running process's executable and argv from /proc
// (best effort: a process may be gone, or a kernel thread has none), at most
// maxBytes of argv, as the kernel cuts an exec's: a process chooses its own
// command line, up to a quarter of its stack limit.
func procCmdline(pid uint32, maxBytes int) (exe string, args []string, flags event.Flags) {
	p := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	exe, _ = os.Readlink(p + "/exe")
	if maxBytes <= 0 {
		return exe, nil, 0
	}
	f, err := os.Open(p + "/cmdline")
	if err != nil {
		return exe, nil, 0
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if len(b) > maxBytes {
		b, flags = b[:maxBytes], event.FlagArgsTruncated
	}
	if s := strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00"); s != "" {
		args = strings.Split(s, "\x00")
	}
	return exe, args, flags
}
