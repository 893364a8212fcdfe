// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

const (
	bootID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	offset = int64(1_700_000_000_000_000_000) // wall = boot + offset
)

// pk names a process: its tgid and start time.
type pk struct {
	pid   uint32
	start uint64
}

var (
	initP = pk{1, 10}
	kthrd = pk{2, 11}
	sshd  = pk{50, 1_000}
)

func forkEv(kt uint64, child, parent pk, comm string, sid uint32) *event.Event {
	return &event.Event{Type: event.Fork, KTime: kt, PID: child.pid, TID: child.pid, StartNs: child.start,
		PPID: parent.pid, ParentStartNs: parent.start, Comm: comm, SID: sid, UID: 1000, GID: 100, CgroupID: 7}
}

func execEv(kt uint64, p, parent pk, comm, path string, args ...string) *event.Event {
	return &event.Event{Type: event.Exec, KTime: kt, PID: p.pid, TID: p.pid, StartNs: p.start,
		PPID: parent.pid, ParentStartNs: parent.start, Comm: comm, Filename: path, Args: args,
		UID: 1000, GID: 100, CgroupID: 7, OldTID: p.pid}
}

func exitEv(kt uint64, p, parent pk, comm string, status uint32) *event.Event {
	return &event.Event{Type: event.Exit, KTime: kt, PID: p.pid, TID: p.pid, StartNs: p.start,
		PPID: parent.pid, ParentStartNs: parent.start, Comm: comm, ExitStatus: status, UID: 1000, GID: 100, CgroupID: 7}
}

func snapEv(kt uint64, p, parent pk, comm string, sid uint32) *event.Event {
	ev := forkEv(kt, p, parent, comm, sid)
	ev.Type = event.Snapshot
	return ev
}

func threadEv(typ event.Type, kt uint64, p pk, tid uint32, tstart uint64) *event.Event {
	return &event.Event{Type: typ, KTime: kt, PID: p.pid, TID: tid, StartNs: tstart, Comm: "worker"}
}

// ids are what Apply returned for one event.
type ids struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// runner applies events with consecutive tickets and collects the spans.
type runner struct {
	t      *testing.T
	m      *Model
	ticket uint64
	got    []ids // by ticket
	spans  ptrace.SpanSlice
	redact *redact.Redactor // applied to each event before the model, as the receiver does
}

func newRunner(t *testing.T, cfg Config) *runner {
	if cfg.BootID == "" {
		cfg.BootID = bootID
	}
	if cfg.BootOffset == 0 {
		cfg.BootOffset = offset
	}
	return &runner{t: t, m: New(cfg), spans: ptrace.NewSpanSlice()}
}

// apply applies evs; it returns the ids of the last one.
func (r *runner) apply(evs ...*event.Event) ids {
	var last ids
	for _, ev := range evs {
		ev.Ticket = r.ticket
		r.ticket++
		Redact(r.redact, ev)
		tr, sp := r.m.Apply(ev)
		last = ids{tr, sp}
		r.got = append(r.got, last)
	}
	return last
}

func (r *runner) drain() int { return r.m.AppendFinished(r.spans) }

// span returns the collected span of p; it fails the test when there is not
// exactly one.
func (r *runner) span(p pk) ptrace.Span {
	r.t.Helper()
	want := r.m.SpanID(p.pid, p.start)
	var found []ptrace.Span
	for i := 0; i < r.spans.Len(); i++ {
		if s := r.spans.At(i); s.SpanID() == want {
			found = append(found, s)
		}
	}
	require.Len(r.t, found, 1, "spans of pid %d start %d", p.pid, p.start)
	return found[0]
}

func wall(bootNs uint64) pcommon.Timestamp { return pcommon.Timestamp(int64(bootNs) + offset) }

func attr(t *testing.T, m pcommon.Map, k string) pcommon.Value {
	t.Helper()
	v, ok := m.Get(k)
	require.True(t, ok, "attribute %s missing", k)
	return v
}

func strs(v pcommon.Value) []string {
	var out []string
	for i := 0; i < v.Slice().Len(); i++ {
		out = append(out, v.Slice().At(i).Str())
	}
	return out
}

func flags(m pcommon.Map) []string {
	var out []string
	for _, k := range []string{AttrSeenAtStart, AttrRunning, AttrEvicted, AttrPartial, AttrExitMissed} {
		if v, ok := m.Get(k); ok && v.Bool() {
			out = append(out, k)
		}
	}
	return out
}

// shellTree is sshd forking sh, which forks three children that exec ls
// (exits 0), grep (exits 3) and sleep (killed by SIGKILL), then exits.
var (
	sh   = pk{100, 5_000}
	ls   = pk{101, 6_000}
	grep = pk{102, 7_000}
	slp  = pk{103, 8_000}
)

func shellTree() []*event.Event {
	return []*event.Event{
		snapEv(100, initP, pk{0, 0}, "systemd", 1),
		snapEv(101, sshd, initP, "sshd", 50),
		forkEv(5_000, sh, sshd, "sshd", 50),
		execEv(5_100, sh, sshd, "sh", "/bin/sh", "-sh"),
		forkEv(6_000, ls, sh, "sh", 100),
		execEv(6_100, ls, sh, "ls", "/bin/ls", "ls", "-l", "/tmp"),
		forkEv(7_000, grep, sh, "sh", 100),
		execEv(7_200, grep, sh, "grep", "/usr/bin/grep", "grep", "x"),
		forkEv(8_000, slp, sh, "sh", 100),
		exitEv(6_500, ls, sh, "ls", 0),
		execEv(8_100, slp, sh, "sleep", "/bin/sleep", "sleep", "100"),
		exitEv(7_600, grep, sh, "grep", 3<<8),
		exitEv(9_000, slp, sh, "sleep", 9),
		exitEv(10_000, sh, sshd, "sh", 0),
	}
}

func TestShellTree(t *testing.T) {
	r := newRunner(t, Config{RootParents: []string{"sshd"}})
	evs := shellTree()
	r.apply(evs...)
	require.Equal(t, 4, r.drain())
	st := r.m.Stats()
	assert.Positive(t, st.Memory)
	st.Memory = 0
	assert.Equal(t, Stats{Live: 2, Started: 6, Finished: 4, SeenAtStart: 2}, st)

	shTrace := r.m.TraceID(sh.pid, sh.start)
	shSpan := r.m.SpanID(sh.pid, sh.start)

	// sh: a child of a RootParents process: a new trace, linked to sshd.
	s := r.span(sh)
	assert.Equal(t, shTrace, s.TraceID())
	assert.True(t, s.ParentSpanID().IsEmpty())
	require.Equal(t, 1, s.Links().Len())
	assert.Equal(t, r.m.TraceID(sshd.pid, sshd.start), s.Links().At(0).TraceID())
	assert.Equal(t, r.m.SpanID(sshd.pid, sshd.start), s.Links().At(0).SpanID())
	assert.Equal(t, "sh", s.Name())
	assert.Equal(t, wall(5_000), s.StartTimestamp())
	assert.Equal(t, wall(10_000), s.EndTimestamp())
	assert.Equal(t, ptrace.StatusCodeUnset, s.Status().Code())

	tests := []struct {
		p          pk
		name, path string
		args       []string
		exec, end  uint64
		code       int64
		status     ptrace.StatusCode
		msg        string
		signal     string
	}{
		{ls, "ls", "/bin/ls", []string{"ls", "-l", "/tmp"}, 6_100, 6_500, 0, ptrace.StatusCodeUnset, "", ""},
		{grep, "grep", "/usr/bin/grep", []string{"grep", "x"}, 7_200, 7_600, 3, ptrace.StatusCodeError, "exit 3", ""},
		{slp, "sleep", "/bin/sleep", []string{"sleep", "100"}, 8_100, 9_000, 128 + 9, ptrace.StatusCodeError, "killed by SIGKILL", "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := r.span(tt.p)
			assert.Equal(t, shTrace, s.TraceID())
			assert.Equal(t, shSpan, s.ParentSpanID())
			assert.Equal(t, 0, s.Links().Len())
			assert.Equal(t, tt.name, s.Name())
			assert.Equal(t, ptrace.SpanKindInternal, s.Kind())
			assert.Equal(t, wall(tt.p.start), s.StartTimestamp())
			assert.Equal(t, wall(tt.end), s.EndTimestamp())
			assert.Equal(t, time.Duration(tt.end-tt.p.start), s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime()))
			assert.Equal(t, tt.status, s.Status().Code())
			assert.Equal(t, tt.msg, s.Status().Message())

			a := s.Attributes()
			assert.Equal(t, int64(tt.p.pid), attr(t, a, pdatamap.AttrProcessPID).Int())
			assert.Equal(t, int64(sh.pid), attr(t, a, pdatamap.AttrProcessParentPID).Int())
			assert.Equal(t, tt.name, attr(t, a, pdatamap.AttrProcessExecutableName).Str())
			assert.Equal(t, tt.path, attr(t, a, pdatamap.AttrProcessExecutablePath).Str())
			assert.Equal(t, tt.args, strs(attr(t, a, pdatamap.AttrProcessCommandArgs)))
			assert.Equal(t, tt.code, attr(t, a, pdatamap.AttrProcessExitCode).Int())
			assert.Equal(t, wall(tt.p.start).AsTime().UTC().Format(time.RFC3339Nano), attr(t, a, pdatamap.AttrProcessCreationTime).Str())
			assert.Equal(t, int64(1000), attr(t, a, pdatamap.AttrProcessUserID).Int())
			assert.Equal(t, int64(100), attr(t, a, pdatamap.AttrProcessGroupID).Int())
			assert.Equal(t, int64(7), attr(t, a, pdatamap.AttrCgroupID).Int())
			if tt.signal != "" {
				assert.Equal(t, tt.signal, attr(t, a, pdatamap.AttrExitSignal).Str())
			} else {
				_, ok := a.Get(pdatamap.AttrExitSignal)
				assert.False(t, ok)
			}
			assert.Empty(t, flags(a))

			require.Equal(t, 1, s.Events().Len())
			e := s.Events().At(0)
			assert.Equal(t, EventNameExec, e.Name())
			assert.Equal(t, wall(tt.exec), e.Timestamp())
			assert.Equal(t, tt.path, attr(t, e.Attributes(), pdatamap.AttrProcessExecutablePath).Str())
			assert.Equal(t, tt.args, strs(attr(t, e.Attributes(), pdatamap.AttrProcessCommandArgs)))
			// the exec's ticket: its place in shellTree
			for i, ev := range evs {
				if ev.Type == event.Exec && ev.PID == tt.p.pid {
					assert.Equal(t, int64(i), attr(t, e.Attributes(), pdatamap.AttrSeqNumber).Int())
				}
			}
		})
	}

	// Every event's log record carries its process's span (a fork's: the child's).
	for i, ev := range evs {
		assert.Equal(t, r.m.SpanID(ev.PID, ev.StartNs), r.got[i].span, "event %d", i)
		assert.False(t, r.got[i].trace.IsEmpty(), "event %d", i)
	}
	assert.Equal(t, shTrace, r.got[4].trace) // fork of ls
}

// TestTraceBoundary: which children start a new trace.
func TestTraceBoundary(t *testing.T) {
	parent := pk{300, 3_000}
	child := pk{301, 3_100}
	tests := []struct {
		name     string
		cfg      Config
		setup    []*event.Event // parent: parentPk is known after these
		parentPk pk
		sid      uint32
		newTrace bool
		link     bool
	}{
		{name: "inherit", setup: []*event.Event{forkEv(3_000, parent, pk{299, 2_000}, "bash", 299)}, parentPk: parent, sid: 299},
		{name: "unknown parent", parentPk: parent, sid: 299, newTrace: true},
		{name: "init", setup: []*event.Event{snapEv(20, initP, pk{}, "systemd", 1)}, parentPk: initP, sid: 301, newTrace: true, link: true},
		{name: "kthreadd", setup: []*event.Event{snapEv(20, kthrd, pk{}, "kthreadd", 0)}, parentPk: kthrd, newTrace: true, link: true},
		{name: "unknown init", parentPk: initP, newTrace: true},
		{name: "session leader", cfg: Config{SessionLeaders: true},
			setup: []*event.Event{forkEv(3_000, parent, pk{299, 2_000}, "bash", 300)}, parentPk: parent, sid: 300, newTrace: true, link: true},
		{name: "session leader off",
			setup: []*event.Event{forkEv(3_000, parent, pk{299, 2_000}, "bash", 300)}, parentPk: parent, sid: 300},
		{name: "not the session leader", cfg: Config{SessionLeaders: true},
			setup: []*event.Event{forkEv(3_000, parent, pk{299, 2_000}, "bash", 299)}, parentPk: parent, sid: 299},
		{name: "root parent", cfg: Config{RootParents: []string{"sshd", "cron"}},
			setup: []*event.Event{snapEv(20, parent, initP, "cron", 300)}, parentPk: parent, sid: 300, newTrace: true, link: true},
		{name: "root parent cut to comm", cfg: Config{RootParents: []string{"containerd-shim-runc-v2"}},
			setup: []*event.Event{snapEv(20, parent, initP, "containerd-shim", 300)}, parentPk: parent, sid: 300, newTrace: true, link: true},
		{name: "root parent after exec", cfg: Config{RootParents: []string{"cron"}},
			setup: []*event.Event{
				forkEv(3_000, parent, pk{299, 2_000}, "bash", 299),
				execEv(3_050, parent, pk{299, 2_000}, "cron", "/usr/sbin/cron"),
			}, parentPk: parent, sid: 299, newTrace: true, link: true},
		{name: "root parent no more after exec", cfg: Config{RootParents: []string{"cron"}},
			setup: []*event.Event{
				forkEv(3_000, parent, pk{299, 2_000}, "cron", 299),
				execEv(3_050, parent, pk{299, 2_000}, "mail", "/usr/bin/mail"),
			}, parentPk: parent, sid: 299},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, tt.cfg)
			r.apply(tt.setup...)
			got := r.apply(forkEv(3_100, child, tt.parentPk, "x", tt.sid))
			r.apply(exitEv(3_200, child, tt.parentPk, "x", 0))
			r.drain()
			s := r.span(child)
			assert.Equal(t, got.trace, s.TraceID())
			assert.Equal(t, got.span, s.SpanID())
			pt, ps := r.m.TraceID(tt.parentPk.pid, tt.parentPk.start), r.m.SpanID(tt.parentPk.pid, tt.parentPk.start)
			if tt.newTrace {
				assert.Equal(t, r.m.TraceID(child.pid, child.start), s.TraceID())
				assert.True(t, s.ParentSpanID().IsEmpty())
			} else {
				assert.Equal(t, pt, s.TraceID()) // the parent is a root in every case
				assert.Equal(t, ps, s.ParentSpanID())
			}
			if tt.link {
				require.Equal(t, 1, s.Links().Len())
				assert.Equal(t, pt, s.Links().At(0).TraceID())
				assert.Equal(t, ps, s.Links().At(0).SpanID())
			} else {
				assert.Equal(t, 0, s.Links().Len())
			}
		})
	}
}

// TestPIDReuse: the same pid with another start is another process, and the
// exit of one never closes the other.
func TestPIDReuse(t *testing.T) {
	first, second, third := pk{200, 2_000}, pk{200, 9_000}, pk{200, 12_000}
	r := newRunner(t, Config{})
	r.apply(snapEv(1, initP, pk{}, "systemd", 1))
	a := r.apply(forkEv(2_000, first, initP, "a", 200))
	// the exit of first was lost: pid 200 is reused
	b := r.apply(forkEv(9_000, second, initP, "b", 200))
	assert.NotEqual(t, a.span, b.span)
	assert.NotEqual(t, a.trace, b.trace)
	// the new process proves the first one exited: its span ends, exit missed
	assert.Equal(t, 2, r.m.Stats().Live)
	require.Equal(t, 1, r.drain())
	assert.Equal(t, "a", r.span(first).Name())
	assert.Equal(t, []string{AttrExitMissed}, flags(r.span(first).Attributes()))
	assert.Equal(t, wall(9_000), r.span(first).EndTimestamp())
	assert.Equal(t, uint64(1), r.m.Stats().ExitMissed)

	// thread events go to the newest process that started before the thread
	assert.Equal(t, b, r.apply(threadEv(event.ThreadStart, 9_500, second, 250, 9_400)))

	// a late exit of first names it, and makes no second span
	assert.Equal(t, a, r.apply(exitEv(10_000, first, initP, "a", 0)))
	require.Equal(t, 0, r.drain())
	assert.Equal(t, 2, r.m.Stats().Live)

	// an exit of a third, never seen, process with that pid: a partial span,
	// and second, whose pid it took, ends with its exit missed
	c := r.apply(exitEv(13_000, third, initP, "c", 1<<8))
	require.Equal(t, 2, r.drain())
	s := r.span(third)
	assert.Equal(t, c.span, s.SpanID())
	assert.Equal(t, []string{AttrPartial}, flags(s.Attributes()))
	assert.Equal(t, wall(third.start), s.StartTimestamp())
	assert.Equal(t, wall(13_000), s.EndTimestamp())
	assert.Equal(t, "exit 1", s.Status().Message())
	assert.Equal(t, uint64(1), r.m.Stats().Unknown)
	assert.Equal(t, []string{AttrExitMissed}, flags(r.span(second).Attributes()))
	assert.Equal(t, 1, r.m.Stats().Live)
	assert.Empty(t, r.m.procs[200])
}

// TestChildrenOutliveParents: a child whose parent exited keeps its parent
// span id and trace, and names its own children.
func TestChildrenOutliveParents(t *testing.T) {
	p, c, g := pk{400, 4_000}, pk{401, 4_100}, pk{402, 4_300}
	r := newRunner(t, Config{})
	r.apply(
		forkEv(4_000, p, pk{399, 100}, "bash", 399), // unknown parent: a root
		forkEv(4_100, c, p, "bash", 399),
		exitEv(4_200, p, pk{399, 100}, "bash", 0),
		forkEv(4_300, g, c, "bash", 399),
		execEv(4_400, c, p, "daemon", "/usr/sbin/daemon"),
		exitEv(4_500, g, c, "bash", 0),
		exitEv(4_600, c, p, "daemon", 0),
	)
	require.Equal(t, 3, r.drain())
	trace := r.m.TraceID(p.pid, p.start)
	sp, sc, sg := r.span(p), r.span(c), r.span(g)
	assert.Equal(t, trace, sp.TraceID())
	assert.Equal(t, trace, sc.TraceID())
	assert.Equal(t, trace, sg.TraceID())
	assert.Equal(t, sp.SpanID(), sc.ParentSpanID())
	assert.Equal(t, sc.SpanID(), sg.ParentSpanID())
	assert.Equal(t, "daemon", sc.Name())
	assert.Equal(t, "bash", sg.Name())
	assert.Equal(t, 0, r.m.Stats().Live)
}

// TestExecOfUnknown: an exec of a process never seen opens its span at its
// start, under its parent when the parent is known.
func TestExecOfUnknown(t *testing.T) {
	parent, known, orphan := pk{500, 5_000}, pk{501, 5_100}, pk{502, 5_200}
	r := newRunner(t, Config{})
	r.apply(forkEv(5_000, parent, pk{499, 1}, "bash", 499))
	k := r.apply(execEv(5_150, known, parent, "ls", "/bin/ls", "ls"))
	o := r.apply(execEv(5_250, orphan, pk{498, 2}, "ls", "/bin/ls", "ls"))
	r.apply(exitEv(5_300, known, parent, "ls", 0), exitEv(5_400, orphan, pk{498, 2}, "ls", 0))
	require.Equal(t, 2, r.drain())
	assert.Equal(t, uint64(2), r.m.Stats().Unknown)

	s := r.span(known)
	assert.Equal(t, k.trace, s.TraceID())
	assert.Equal(t, r.m.TraceID(parent.pid, parent.start), s.TraceID())
	assert.Equal(t, r.m.SpanID(parent.pid, parent.start), s.ParentSpanID())
	assert.Equal(t, wall(known.start), s.StartTimestamp())
	assert.Equal(t, []string{AttrPartial}, flags(s.Attributes()))

	s = r.span(orphan)
	assert.Equal(t, o.trace, s.TraceID())
	assert.Equal(t, r.m.TraceID(orphan.pid, orphan.start), s.TraceID())
	assert.True(t, s.ParentSpanID().IsEmpty())
	assert.Equal(t, 0, s.Links().Len())
}

func TestSnapshotDedupe(t *testing.T) {
	p := pk{600, 6_000}
	tests := []struct {
		name      string
		evs       []*event.Event
		endSnap   int // EndSnapshot before evs[endSnap], when > 0
		spans     int
		flags     []string
		dedupe    uint64
		seenStart uint64
	}{
		{name: "fork then snapshot", evs: []*event.Event{forkEv(6_000, p, initP, "x", 1), snapEv(6_100, p, initP, "x", 1), exitEv(6_200, p, initP, "x", 0)},
			spans: 1, dedupe: 1},
		{name: "snapshot twice", evs: []*event.Event{snapEv(6_100, p, initP, "x", 1), snapEv(6_100, p, initP, "x", 1), exitEv(6_200, p, initP, "x", 0)},
			spans: 1, flags: []string{AttrSeenAtStart}, dedupe: 1, seenStart: 1},
		{name: "snapshot then fork", evs: []*event.Event{snapEv(6_100, p, initP, "x", 1), forkEv(6_000, p, initP, "x", 1), exitEv(6_200, p, initP, "x", 0)},
			spans: 1, flags: []string{AttrSeenAtStart}, dedupe: 1, seenStart: 1},
		{name: "exit then snapshot", evs: []*event.Event{forkEv(6_000, p, initP, "x", 1), exitEv(6_200, p, initP, "x", 0), snapEv(6_100, p, initP, "x", 1)},
			spans: 1, dedupe: 1},
		{name: "unknown exit then snapshot", evs: []*event.Event{exitEv(6_200, p, initP, "x", 0), snapEv(6_100, p, initP, "x", 1)},
			spans: 1, flags: []string{AttrPartial}, dedupe: 1},
		{name: "exit then snapshot after EndSnapshot", endSnap: 2, evs: []*event.Event{forkEv(6_000, p, initP, "x", 1), exitEv(6_200, p, initP, "x", 0), snapEv(6_100, p, initP, "x", 1)},
			spans: 1, seenStart: 1}, // the snapshot is taken for a new process: only the first span is finished
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, Config{})
			for i, ev := range tt.evs {
				if tt.endSnap > 0 && i == tt.endSnap {
					r.m.EndSnapshot()
				}
				r.apply(ev)
			}
			require.Equal(t, tt.spans, r.drain())
			s := r.span(p)
			assert.Equal(t, tt.flags, flags(s.Attributes()))
			st := r.m.Stats()
			assert.Equal(t, tt.dedupe, st.Deduplicated)
			assert.Equal(t, tt.seenStart, st.SeenAtStart)
			for i, ev := range tt.evs {
				assert.Equal(t, s.SpanID(), r.got[i].span, "event %d (%v)", i, ev.Type)
				assert.Equal(t, s.TraceID(), r.got[i].trace, "event %d (%v)", i, ev.Type)
			}
		})
	}
}

// TestSnapshotTree: a snapshot fed parents first gives the children their
// parent's trace, spans starting at the processes' start times.
func TestSnapshotTree(t *testing.T) {
	bash, vim := pk{700, 7_000}, pk{701, 7_500}
	r := newRunner(t, Config{})
	assert.True(t, r.m.AddRunning(snapEv(9_000, initP, pk{}, "systemd", 1)))
	assert.True(t, r.m.AddRunning(snapEv(9_000, bash, initP, "bash", 700)))
	assert.True(t, r.m.AddRunning(snapEv(9_000, vim, bash, "vim", 700)))
	assert.False(t, r.m.AddRunning(snapEv(9_000, vim, bash, "vim", 700)))
	r.apply(exitEv(9_500, vim, bash, "vim", 0))
	r.m.CloseAll(10_000)
	require.Equal(t, 3, r.drain())

	sb, sv := r.span(bash), r.span(vim)
	assert.Equal(t, r.m.TraceID(bash.pid, bash.start), sb.TraceID())
	assert.Equal(t, sb.TraceID(), sv.TraceID())
	assert.Equal(t, sb.SpanID(), sv.ParentSpanID())
	assert.Equal(t, wall(vim.start), sv.StartTimestamp())
	assert.Equal(t, wall(9_500), sv.EndTimestamp())
	assert.Equal(t, []string{AttrSeenAtStart}, flags(sv.Attributes()))
	assert.Equal(t, []string{AttrSeenAtStart, AttrRunning}, flags(sb.Attributes()))
	assert.Equal(t, Stats{Started: 3, Finished: 3, SeenAtStart: 3, Deduplicated: 1}, r.m.Stats())
}

func TestEviction(t *testing.T) {
	r := newRunner(t, Config{MaxProcesses: 3})
	a, b, c, d := pk{10, 100}, pk{20, 200}, pk{30, 300}, pk{40, 400}
	// snapshot order is not start order; the oldest-started goes first
	for _, p := range []pk{c, a, d} {
		r.m.AddRunning(snapEv(1_000, p, pk{1, 1}, "p", 1))
	}
	assert.Equal(t, 3, r.m.Stats().Live)
	r.m.AddRunning(snapEv(1_000, b, pk{1, 1}, "p", 1)) // evicts a
	child := pk{50, 1_500}
	r.apply(forkEv(1_500, child, b, "p", 1)) // evicts b; b is remembered as its parent
	st := r.m.Stats()
	assert.Equal(t, 3, st.Live)
	assert.Equal(t, uint64(2), st.Evicted)
	require.Equal(t, 2, r.drain())
	for _, p := range []pk{a, b} {
		s := r.span(p)
		assert.Equal(t, []string{AttrSeenAtStart, AttrEvicted}, flags(s.Attributes()))
		assert.Equal(t, wall(p.start), s.StartTimestamp())
	}
	assert.Equal(t, wall(1_000), r.span(a).EndTimestamp()) // the latest event then
	assert.Equal(t, wall(1_500), r.span(b).EndTimestamp())

	// the exit of an evicted process carries its ids, and makes no second span
	got := r.apply(exitEv(2_000, a, pk{1, 1}, "p", 0))
	assert.Equal(t, r.m.SpanID(a.pid, a.start), got.span)
	assert.Equal(t, r.m.TraceID(a.pid, a.start), got.trace)
	assert.Equal(t, 0, r.drain())
	assert.Equal(t, uint64(1), r.m.Stats().AfterEviction)
	assert.Equal(t, uint64(0), r.m.Stats().Unknown)

	// a child forked before its parent's eviction, and one after it, are
	// still the children of the evicted process
	child2 := pk{51, 2_050}
	r.apply(forkEv(2_050, child2, b, "p", 1)) // evicts c
	r.apply(exitEv(2_100, child, b, "p", 0), exitEv(2_200, child2, b, "p", 0))
	require.Equal(t, 3, r.drain())
	assert.Equal(t, []string{AttrSeenAtStart, AttrEvicted}, flags(r.span(c).Attributes()))
	for _, p := range []pk{child, child2} {
		s := r.span(p)
		assert.Equal(t, r.m.TraceID(b.pid, b.start), s.TraceID())
		assert.Equal(t, r.m.SpanID(b.pid, b.start), s.ParentSpanID())
		assert.Empty(t, flags(s.Attributes()))
	}
	st = r.m.Stats()
	assert.Equal(t, 1, st.Live) // d
	assert.Equal(t, uint64(3), st.Evicted)
}

// TestForkStorm: a million short-lived processes leave nothing behind.
func TestForkStorm(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	r := newRunner(t, Config{MaxProcesses: 1024, MaxFinished: 4096})
	shell := pk{100, 1}
	r.m.AddRunning(snapEv(1, shell, pk{1, 1}, "sh", 100))
	var fork, exit event.Event
	exported := 0
	for i := range n {
		p := pk{uint32(300 + i%32_000), uint64(10 + 2*i)} // pids are reused
		fork = *forkEv(p.start, p, shell, "sh", 100)
		exit = *exitEv(p.start+1, p, shell, "sh", 0)
		r.m.Apply(&fork)
		r.m.Apply(&exit)
		if i%65536 == 65535 { // spans nobody collects in time are dropped
			exported += r.m.AppendFinished(ptrace.NewSpanSlice())
		}
		if st := r.m.Stats(); st.Live != 1 || st.Pending > 4096 {
			t.Fatalf("after %d: %+v", i, st)
		}
	}
	exported += r.m.AppendFinished(ptrace.NewSpanSlice())
	st := r.m.Stats()
	assert.Equal(t, 1, st.Live) // the shell
	assert.Equal(t, uint64(n+1), st.Started)
	assert.Equal(t, uint64(n), st.Finished)
	assert.Equal(t, uint64(n-exported), st.DroppedSpans)
	assert.Equal(t, (n/65536+1)*4096, exported)
	assert.Zero(t, st.Evicted+st.Unknown)
	assert.Len(t, r.m.procs, 1)
	assert.Len(t, r.m.heap, 1)
	assert.LessOrEqual(t, len(r.m.free), maxFree)
	assert.LessOrEqual(t, cap(r.m.finished), 8192)
}

// TestApplyAllocs: in the steady state a fork, exec and exit allocate
// nothing (entries are recycled; here through MaxFinished).
func TestApplyAllocs(t *testing.T) {
	m := New(Config{BootID: bootID, MaxFinished: 1, RootParents: []string{"cron"}})
	shell := pk{100, 1}
	m.AddRunning(snapEv(1, shell, pk{1, 1}, "sh", 100))
	fork := forkEv(0, pk{}, shell, "sh", 100)
	exec := execEv(0, pk{}, shell, "ls", "/bin/ls", "ls", "-l")
	exit := exitEv(0, pk{}, shell, "ls", 0)
	i := uint64(0)
	allocs := testing.AllocsPerRun(10_000, func() {
		i++
		for _, ev := range []*event.Event{fork, exec, exit} {
			ev.KTime, ev.PID, ev.StartNs = 10+i, uint32(300+i%1000), 10+i
			m.Apply(ev)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 1, m.Stats().Live)
}

// TestMaxFinished: spans nobody collects are dropped and counted.
func TestMaxFinished(t *testing.T) {
	r := newRunner(t, Config{MaxFinished: 10})
	for i := range 100 {
		p := pk{uint32(1000 + i), uint64(100 + i)}
		r.apply(forkEv(p.start, p, initP, "x", 1), exitEv(p.start+1, p, initP, "x", 0))
	}
	st := r.m.Stats()
	assert.Equal(t, 10, st.Pending)
	assert.Equal(t, uint64(90), st.DroppedSpans)
	assert.Equal(t, 10, r.drain())
}

func TestCloseAll(t *testing.T) {
	r := newRunner(t, Config{})
	r.apply(shellTree()[:9]...) // init, sshd, sh and its children alive
	assert.Equal(t, 6, r.m.Stats().Live)
	r.m.CloseAll(20_000)
	assert.Equal(t, 0, r.m.Stats().Live)
	assert.Empty(t, r.m.procs)
	require.Equal(t, 6, r.drain())
	assert.Equal(t, 0, r.drain())
	starts := []pcommon.Timestamp{}
	for i := 0; i < r.spans.Len(); i++ {
		s := r.spans.At(i)
		starts = append(starts, s.StartTimestamp())
		assert.Equal(t, wall(20_000), s.EndTimestamp())
		assert.Contains(t, flags(s.Attributes()), AttrRunning)
		assert.Equal(t, ptrace.StatusCodeUnset, s.Status().Code())
		_, ok := s.Attributes().Get(pdatamap.AttrProcessExitCode)
		assert.False(t, ok)
	}
	assert.IsNonDecreasing(t, starts) // oldest first
	// events after CloseAll are of unknown processes
	r.apply(exitEv(21_000, ls, sh, "ls", 0))
	require.Equal(t, 1, r.drain())
	assert.Equal(t, uint64(1), r.m.Stats().Unknown)
}

// TestDeterministicIDs: two Models name the same processes the same way; the
// ids are the documented hashes.
func TestDeterministicIDs(t *testing.T) {
	run := func(boot string) (ptrace.Traces, []ids) {
		r := newRunner(t, Config{BootID: boot, RootParents: []string{"sshd"}, SessionLeaders: true, ThreadEvents: true})
		r.apply(shellTree()...)
		r.m.CloseAll(20_000)
		td := ptrace.NewTraces()
		r.m.AppendFinished(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans())
		return td, r.got
	}
	td1, ids1 := run(bootID)
	td2, ids2 := run(bootID)
	var mr ptrace.ProtoMarshaler
	b1, err := mr.MarshalTraces(td1)
	require.NoError(t, err)
	b2, err := mr.MarshalTraces(td2)
	require.NoError(t, err)
	assert.Equal(t, b1, b2)
	assert.Equal(t, ids1, ids2)
	assert.Equal(t, 6, td1.SpanCount())

	_, ids3 := run("another-boot")
	for i := range ids1 {
		assert.NotEqual(t, ids1[i].span, ids3[i].span)
		assert.NotEqual(t, ids1[i].trace, ids3[i].trace)
	}

	m := New(Config{BootID: bootID})
	h := sha256.Sum256([]byte("seq.span\x00" + bootID + "\x00100\x005000"))
	assert.Equal(t, pcommon.SpanID(h[:8]), m.SpanID(100, 5_000))
	h = sha256.Sum256([]byte("seq.trace\x00" + bootID + "\x00100\x005000"))
	assert.Equal(t, pcommon.TraceID(h[:16]), m.TraceID(100, 5_000))
	assert.Equal(t, ids1[3].trace, m.TraceID(100, 5_000)) // sh's exec: sh roots its trace
}

func TestThreadEvents(t *testing.T) {
	p := pk{800, 8_000}
	for _, on := range []bool{false, true} {
		r := newRunner(t, Config{ThreadEvents: on, MaxSpanEvents: 3})
		forked := r.apply(forkEv(8_000, p, initP, "srv", 1))
		assert.Equal(t, forked, r.apply(threadEv(event.ThreadStart, 8_100, p, 801, 8_100)))
		assert.Equal(t, forked, r.apply(threadEv(event.ThreadStart, 8_200, p, 802, 8_200)))
		assert.Equal(t, forked, r.apply(threadEv(event.ThreadExit, 8_300, p, 801, 8_100)))
		assert.Equal(t, forked, r.apply(threadEv(event.ThreadExit, 8_400, p, 802, 8_200)))
		// threads of unknown processes: nothing
		assert.Equal(t, ids{}, r.apply(threadEv(event.ThreadStart, 8_500, pk{900, 1}, 901, 8_500)))
		assert.Equal(t, 1, r.m.Stats().Live)
		r.apply(exitEv(9_000, p, initP, "srv", 0))
		require.Equal(t, 1, r.drain())
		s := r.span(p)
		if !on {
			assert.Equal(t, 0, s.Events().Len())
			continue
		}
		require.Equal(t, 3, s.Events().Len())
		assert.Equal(t, uint32(1), s.DroppedEventsCount())
		want := []struct {
			name string
			tid  int64
			at   uint64
		}{{EventNameThreadStart, 801, 8_100}, {EventNameThreadStart, 802, 8_200}, {EventNameThreadExit, 801, 8_300}}
		for i, w := range want {
			e := s.Events().At(i)
			assert.Equal(t, w.name, e.Name())
			assert.Equal(t, wall(w.at), e.Timestamp())
			assert.Equal(t, w.tid, attr(t, e.Attributes(), pdatamap.AttrThreadID).Int())
			assert.Equal(t, int64(i+1), attr(t, e.Attributes(), pdatamap.AttrSeqNumber).Int())
		}
	}
}

func TestBootOffset(t *testing.T) {
	p := pk{800, 8_000}
	r := newRunner(t, Config{})
	r.apply(forkEv(8_000, p, initP, "x", 1))
	r.m.SetBootOffset(offset + 5)
	r.apply(exitEv(9_000, p, initP, "x", 0))
	r.drain()
	s := r.span(p)
	assert.Equal(t, wall(8_000), s.StartTimestamp())
	assert.Equal(t, wall(9_000)+5, s.EndTimestamp())
}

func TestCoreDumped(t *testing.T) {
	p := pk{800, 8_000}
	r := newRunner(t, Config{})
	r.apply(forkEv(8_000, p, initP, "x", 1), exitEv(9_000, p, initP, "x", 0x80|11))
	r.drain()
	s := r.span(p)
	assert.Equal(t, "killed by SIGSEGV (core dumped)", s.Status().Message())
	assert.Equal(t, int64(139), attr(t, s.Attributes(), pdatamap.AttrProcessExitCode).Int())
	assert.True(t, attr(t, s.Attributes(), pdatamap.AttrExitCoreDumped).Bool())
}

// BenchmarkApplyForkExecExit: the hot path, Apply alone: a shell forks a
// child that execs and exits. The finished spans are recycled without being
// built (MaxFinished 1), so only Apply is measured. "snapshotting" is before
// EndSnapshot, when the Model also remembers every exit.
func BenchmarkApplyForkExecExit(b *testing.B) {
	b.Run("steady", func(b *testing.B) { benchApply(b, false, true) })
	b.Run("snapshotting", func(b *testing.B) { benchApply(b, false, false) })
}

// BenchmarkApplyAndExport: the spans path, Apply and AppendFinished
// (building the spans) every 1024 processes; ns/op is per process (a fork,
// an exec and an exit), events/s per event.
func BenchmarkApplyAndExport(b *testing.B) {
	benchApply(b, true, true)
}

func benchApply(b *testing.B, export, endSnapshot bool) {
	cfg := Config{BootID: bootID, BootOffset: offset, RootParents: []string{"cron", "sshd"}}
	if !export {
		cfg.MaxFinished = 1
	}
	m := New(cfg)
	shell := pk{100, 1}
	m.AddRunning(snapEv(1, shell, pk{1, 1}, "sh", 100))
	if endSnapshot {
		m.EndSnapshot()
	}
	fork := forkEv(0, pk{}, shell, "sh", 100)
	exec := execEv(0, pk{}, shell, "ls", "/bin/ls", "ls", "-l", "/tmp")
	exit := exitEv(0, pk{}, shell, "ls", 0)
	spans := ptrace.NewSpanSlice()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		pid, start := uint32(300+i%32_000), uint64(10+4*i)
		for j, ev := range []*event.Event{fork, exec, exit} {
			ev.Ticket, ev.KTime, ev.PID, ev.TID, ev.StartNs = uint64(3*i+j), start+uint64(j), pid, pid, start
			m.Apply(ev)
		}
		if export && i%1024 == 1023 {
			m.AppendFinished(spans)
			spans = ptrace.NewSpanSlice()
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "processes/s")
}
