// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// Span event names.
const (
	EventNameExec        = pdatamap.EventNameExec        // process.exec
	EventNameThreadStart = pdatamap.EventNameThreadStart // thread.start
	EventNameThreadExit  = pdatamap.EventNameThreadExit  // thread.exit
)

// Attribute keys of the spans beyond pdatamap's; each flag is set only when
// true.
const (
	// AttrProcessSessionLeaderPID is the process's session id (the pid of
	// its session's leader) when last seen.
	AttrProcessSessionLeaderPID = string(semconv.ProcessSessionLeaderPIDKey)
	// AttrSeenAtStart: the process was alive when the receiver started
	// (AddRunning); the span starts at its start time.
	AttrSeenAtStart = "seq.process.seen_at_start"
	// AttrRunning: the process was still alive at CloseAll; the span ends
	// then.
	AttrRunning = "seq.process.running"
	// AttrEvicted: the process was evicted at MaxProcesses; the span ends
	// at the latest event seen then.
	AttrEvicted = "seq.process.evicted"
	// AttrPartial: the process was first seen at an exec or an exit (its
	// fork and snapshot were missed); the span starts at its start time.
	AttrPartial = "seq.process.partial"
	// AttrExitMissed: a newer process took the pid before this one's exit
	// was seen (the exit was lost); the span ends at the newer one's start.
	AttrExitMissed = "seq.process.exit_missed"
)

// AppendFinished moves the spans finished since the last call into dst, in
// the order they finished, and returns how many: at most Config.BuildSpans,
// and no more once the entries built reach Config.BuildBytes (one at
// least), so that a burst of exits is built and handed on in parts; call it
// again while Stats().Pending is not zero. The caller owns the Traces,
// ResourceSpans and ScopeSpans dst belongs to.
func (m *Model) AppendFinished(dst ptrace.SpanSlice) int {
	n := min(len(m.finished)-m.fhead, m.cfg.BuildSpans)
	if n == 0 {
		return 0
	}
	dst.EnsureCapacity(dst.Len() + n)
	var buf [64]byte
	built, bytes := 0, 0
	for built < n && (built == 0 || bytes < m.cfg.BuildBytes) {
		p := m.finished[m.fhead]
		bytes += p.bytes
		p.build(dst.AppendEmpty(), buf[:0])
		m.finished[m.fhead] = nil
		m.fhead++
		m.recycle(p)
		built++
	}
	m.compactFinished()
	return built
}

// DiscardFinished drops the spans finished since the last call without
// building them (no traces pipeline), and returns how many.
func (m *Model) DiscardFinished() int {
	n := len(m.finished) - m.fhead
	for i, p := range m.finished[m.fhead:] {
		m.finished[m.fhead+i] = nil
		m.recycle(p)
	}
	m.finished, m.fhead = m.finished[:0], 0
	return n
}

// build fills s with the span of p.
func (p *proc) build(s ptrace.Span, buf []byte) {
	s.SetTraceID(p.traceID)
	s.SetSpanID(p.spanID)
	if !p.parentSpanID.IsEmpty() {
		s.SetParentSpanID(p.parentSpanID)
	}
	s.SetName(p.name)
	s.SetKind(ptrace.SpanKindInternal)
	s.SetStartTimestamp(p.startTime)
	s.SetEndTimestamp(p.endTime)

	attrs := s.Attributes()
	attrs.EnsureCapacity(19)
	attrs.PutInt(pdatamap.AttrProcessPID, int64(p.pid))
	attrs.PutInt(pdatamap.AttrProcessParentPID, int64(p.ppid))
	attrs.PutStr(pdatamap.AttrProcessExecutableName, p.name)
	if p.flags&flagExec != 0 {
		attrs.PutStr(pdatamap.AttrProcessExecutablePath, p.execPath)
		if len(p.args) > 0 {
			putStrs(attrs.PutEmptySlice(pdatamap.AttrProcessCommandArgs), p.args)
		}
		pdatamap.PutFlag(attrs, pdatamap.AttrArgsRedacted, p.flags&flagRedacted != 0)
		pdatamap.PutFlag(attrs, pdatamap.AttrArgsTruncated, p.flags&flagTruncated != 0)
	}
	if p.start != 0 {
		attrs.PutStr(pdatamap.AttrProcessCreationTime, string(pdatamap.AppendRFC3339(buf, int64(p.creation))))
	}
	if p.parentCreation != 0 {
		attrs.PutStr(pdatamap.AttrParentCreationTime, string(pdatamap.AppendRFC3339(buf, int64(p.parentCreation))))
	}
	attrs.PutInt(pdatamap.AttrProcessUserID, int64(p.uid))
	attrs.PutInt(pdatamap.AttrProcessGroupID, int64(p.gid))
	attrs.PutInt(AttrProcessSessionLeaderPID, int64(p.sid))
	attrs.PutInt(pdatamap.AttrCgroupID, int64(p.cgroup))
	if p.cg != nil {
		attrs.PutStr(pdatamap.AttrProcessLinuxCgroup, p.cg.Cgroup)
	}

	ev := event.Event{ExitStatus: p.exitStatus}
	if p.flags&flagExited != 0 {
		code := ev.ExitCode()
		var msg []byte
		if ev.Signaled() {
			code = 128 + ev.Signal()
			sig := event.SignalName(ev.Signal())
			attrs.PutStr(pdatamap.AttrExitSignal, sig)
			msg = append(append(buf[:0], "killed by "...), sig...)
		} else if code != 0 {
			msg = strconv.AppendInt(append(buf[:0], "exit "...), int64(code), 10)
		}
		if ev.CoreDumped() {
			attrs.PutBool(pdatamap.AttrExitCoreDumped, true)
			if msg != nil {
				msg = append(msg, " (core dumped)"...)
			}
		}
		attrs.PutInt(pdatamap.AttrProcessExitCode, int64(code))
		if msg != nil {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(string(msg))
		}
	}
	pdatamap.PutFlag(attrs, AttrSeenAtStart, p.flags&flagSeenAtStart != 0)
	pdatamap.PutFlag(attrs, AttrRunning, p.flags&flagRunning != 0)
	pdatamap.PutFlag(attrs, AttrEvicted, p.flags&flagEvicted != 0)
	pdatamap.PutFlag(attrs, AttrPartial, p.flags&flagPartial != 0)
	pdatamap.PutFlag(attrs, AttrExitMissed, p.flags&flagExitMissed != 0)

	if p.flags&flagLink != 0 {
		l := s.Links().AppendEmpty()
		l.SetTraceID(p.linkTraceID)
		l.SetSpanID(p.linkSpanID)
	}

	if len(p.events) > 0 {
		evs := s.Events()
		evs.EnsureCapacity(len(p.events))
		for i := range p.events {
			e := &p.events[i]
			se := evs.AppendEmpty()
			se.SetTimestamp(e.time)
			a := se.Attributes()
			switch e.kind {
			case kindExec:
				se.SetName(EventNameExec)
				a.EnsureCapacity(3 + b2i(e.redacted) + b2i(e.truncated) + b2i(e.argsDropped))
				a.PutStr(pdatamap.AttrProcessExecutablePath, e.path)
				if e.argHi > e.argLo {
					putStrs(a.PutEmptySlice(pdatamap.AttrProcessCommandArgs), p.arena[e.argLo:e.argHi])
				}
				pdatamap.PutFlag(a, pdatamap.AttrArgsRedacted, e.redacted)
				pdatamap.PutFlag(a, pdatamap.AttrArgsTruncated, e.truncated)
				pdatamap.PutFlag(a, pdatamap.AttrArgsDropped, e.argsDropped)
			case kindThreadStart:
				se.SetName(EventNameThreadStart)
				a.EnsureCapacity(2)
				a.PutInt(pdatamap.AttrThreadID, int64(e.tid))
			case kindThreadExit:
				se.SetName(EventNameThreadExit)
				a.EnsureCapacity(2)
				a.PutInt(pdatamap.AttrThreadID, int64(e.tid))
			}
			a.PutInt(pdatamap.AttrSeqNumber, int64(e.ticket))
		}
	}
	s.SetDroppedEventsCount(p.droppedEvents)
}

func putStrs(dst pcommon.Slice, ss []string) {
	dst.EnsureCapacity(len(ss))
	for _, v := range ss {
		dst.AppendEmpty().SetStr(v)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
