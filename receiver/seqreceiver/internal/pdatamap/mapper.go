// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package pdatamap turns decoded sequencer events into OTLP log records.
//
// One event gives one log record, named by EventName (process.fork,
// process.exec, process.exit, thread.start, thread.exit), with the time it
// happened, converted from the boot clock to the wall clock, as Timestamp, a
// one-line readable Body and the attributes of attributes.go. A gap in the
// tickets gives one seq.lost record. The caller owns the plog.Logs and its
// ResourceLogs and ScopeLogs, and batches many events into one.
//
// Severity is INFO, except WARN for a process that exited with a code other
// than 0 or was killed by a signal (shells and tests exit 1 routinely, so
// not ERROR), and WARN for seq.lost. A process killed by signal N has
// process.exit.code 128+N, as shells and container runtimes report it, and
// seq.exit.signal.
package pdatamap

import (
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
)

// maxBodyArgs bounds the bytes of argv copied into an exec Body; the whole of
// argv is in process.command_args.
const maxBodyArgs = 256

// Mapper maps events to log records. Its zero value maps boot-clock times as
// if the machine had booted at the Unix epoch and skips thread events.
// A Mapper is not modified by its methods: one may serve many goroutines.
type Mapper struct {
	// BootToWall converts a CLOCK_BOOTTIME reading to wall-clock time.
	// When nil, BootOffset is used.
	BootToWall func(bootNs uint64) time.Time
	// BootOffset is wall-clock minus boot-clock time, in nanoseconds.
	BootOffset int64
	// IncludeThreads maps thread.start and thread.exit events; they are
	// skipped otherwise.
	IncludeThreads bool
	// Cgroups resolves an event's cgroup id to its process.linux.cgroup
	// (nil, or a nil result: the record has seq.cgroup.id only). It is
	// called at the event: the cgroup may be gone soon after.
	Cgroups func(id uint64) *cgroups.Info
	// MaxArgs bounds the arguments of an exec's process.command_args; the
	// rest are cut and the record marked seq.args.truncated (0: no bound
	// beyond the kernel's max_args_bytes).
	MaxArgs int
}

func (m *Mapper) wall(bootNs uint64) pcommon.Timestamp {
	if m.BootToWall != nil {
		return pcommon.NewTimestampFromTime(m.BootToWall(bootNs))
	}
	return pcommon.Timestamp(int64(bootNs) + m.BootOffset)
}

// AppendEvent appends the log record of ev to dst, observed at observed. It
// reports false, appending nothing, for a thread event when IncludeThreads is
// off. The record keeps no reference to ev, whose strings it shares (they are
// immutable), so ev may be reused at once.
func (m *Mapper) AppendEvent(dst plog.LogRecordSlice, ev *event.Event, observed time.Time) bool {
	return m.AppendEventWith(dst, ev, observed, nil)
}

// Scratch is what AppendEventWith reuses from one record to the next: the
// formatted creation times of the latest processes (a process's fork, exec
// and exit records carry the same one, and its children its parent's).
// A Scratch belongs to one goroutine at a time; its zero value is ready.
type Scratch struct {
	times [timeCacheSize]cachedTime
	// arena holds the bytes of the latest records' bodies: one allocation
	// per arenaSize bytes of bodies instead of one per record. Bytes once
	// appended are never written again (a body string points at them), so
	// a full arena is left to the records that use it and a new one begun.
	arena []byte
}

const arenaSize = 16 << 10

// str returns b as a string, its bytes copied into the arena when s is not nil.
func (s *Scratch) str(b []byte) string {
	if s == nil || len(b) == 0 || len(b) > arenaSize/4 {
		return string(b)
	}
	if cap(s.arena)-len(s.arena) < len(b) {
		s.arena = make([]byte, 0, arenaSize)
	}
	start := len(s.arena)
	s.arena = append(s.arena, b...)
	return unsafe.String(&s.arena[start], len(b))
}

const timeCacheSize = 256 // a power of 2

type cachedTime struct {
	ns int64 // wall time, ns since the Unix epoch; 0: empty
	s  string
}

// creationTime returns boot-clock time bootNs as wall-clock RFC 3339, from
// the cache when it was formatted lately. s may be nil.
func (m *Mapper) creationTime(s *Scratch, bootNs uint64) string {
	ns := int64(m.wall(bootNs))
	if s == nil || ns == 0 {
		var buf [64]byte
		return string(AppendRFC3339(buf[:0], ns))
	}
	c := &s.times[uint64(ns)*0x9E3779B97F4A7C15>>(64-8)&(timeCacheSize-1)]
	if c.ns != ns || c.s == "" {
		var buf [64]byte
		c.ns, c.s = ns, s.str(AppendRFC3339(buf[:0], ns))
	}
	return c.s
}

// AppendEventWith is AppendEvent reusing s (nil: nothing to reuse): the same
// records, fewer allocations.
func (m *Mapper) AppendEventWith(dst plog.LogRecordSlice, ev *event.Event, observed time.Time, s *Scratch) bool {
	return m.AppendEventSlots(dst, ev, observed, s, 1)
}

// AppendEventSlots is AppendEventWith for a record that took slots ring
// slots: more than one gives it seq.tickets, its last attribute.
func (m *Mapper) AppendEventSlots(dst plog.LogRecordSlice, ev *event.Event, observed time.Time, s *Scratch, slots int) bool {
	if ev.IsThread() && !m.IncludeThreads {
		return false
	}
	lr := dst.AppendEmpty()
	lr.SetTimestamp(m.wall(ev.KTime))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.SetEventName(eventName(ev.Type))
	if ev.Type == event.Exit && ev.ExitStatus != 0 { // a code other than 0, or a signal
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
		lr.SetSeverityText("WARN")
	} else {
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
	}

	// ev.Args is redacted (process.Redact): a record with a value replaced
	// says seq.args.redacted.
	args, redacted := ev.Args, ev.Redacted
	if ev.Type == event.Exec {
		if m.MaxArgs > 0 && len(args) > m.MaxArgs {
			args = args[:m.MaxArgs]
			cut := *ev // rare: a copy, so that ev stays as it was
			cut.Flags |= event.FlagArgsTruncated
			ev = &cut
		}
	}
	var buf [512]byte
	lr.Body().SetStr(s.str(body(buf[:0], ev, args)))

	m.putAttrs(lr.Attributes(), ev, args, redacted > 0, s, slots)
	return true
}

// putAttrs puts the attributes of ev, whose argv is args, in the empty map
// attrs. One at a time: each value is an allocation of pdata's whichever
// way it is put, and Map.CopyTo from a prepared map costs more than the
// Puts (BenchmarkAttrsCopyTo).
func (m *Mapper) putAttrs(attrs pcommon.Map, ev *event.Event, args []string, redacted bool, s *Scratch, slots int) {
	var cgroup *cgroups.Info
	if m.Cgroups != nil {
		cgroup = m.Cgroups(ev.CgroupID)
	}
	// The exact count: a map grown by append would allocate twice, and a
	// spare slot is 32 bytes to allocate and clear.
	attrs.EnsureCapacity(attrCount(ev, len(args), redacted, cgroup != nil, slots > 1))
	attrs.PutInt(AttrSeqNumber, int64(ev.Ticket))
	attrs.PutInt(AttrProcessPID, int64(ev.PID))
	attrs.PutInt(AttrThreadID, int64(ev.TID))
	attrs.PutInt(AttrProcessParentPID, int64(ev.PPID))
	attrs.PutStr(AttrProcessExecutableName, ev.Comm)
	attrs.PutInt(AttrProcessUserID, int64(ev.UID))
	attrs.PutInt(AttrProcessGroupID, int64(ev.GID))
	if ev.StartNs != 0 {
		attrs.PutStr(AttrProcessCreationTime, m.creationTime(s, ev.StartNs))
	}
	if ev.Type == event.Fork && ev.ParentStartNs != 0 {
		attrs.PutStr(AttrParentCreationTime, m.creationTime(s, ev.ParentStartNs))
	}
	attrs.PutInt(AttrCgroupID, int64(ev.CgroupID))
	if cgroup != nil {
		attrs.PutStr(AttrProcessLinuxCgroup, cgroup.Cgroup)
	}
	attrs.PutInt(AttrCPU, int64(ev.CPU))

	switch ev.Type {
	case event.Exec:
		attrs.PutStr(AttrProcessExecutablePath, ev.Filename)
		if len(args) > 0 {
			s := attrs.PutEmptySlice(AttrProcessCommandArgs)
			s.EnsureCapacity(len(args))
			for _, a := range args {
				s.AppendEmpty().SetStr(a)
			}
		}
		PutFlag(attrs, AttrArgsRedacted, redacted)
		PutFlag(attrs, AttrArgsTruncated, ev.ArgsTruncated())
		PutFlag(attrs, AttrArgsUnreadable, ev.ArgsUnreadable())
		PutFlag(attrs, AttrFilenameTruncated, ev.FilenameTruncated())
		if ev.OldTID != ev.PID && ev.OldTID != 0 {
			attrs.PutInt(AttrExecOldTID, int64(ev.OldTID))
		}
	case event.Exit:
		if ev.Signaled() {
			attrs.PutInt(AttrProcessExitCode, int64(128+ev.Signal()))
			attrs.PutStr(AttrExitSignal, event.SignalName(ev.Signal()))
		} else {
			attrs.PutInt(AttrProcessExitCode, int64(ev.ExitCode()))
		}
		PutFlag(attrs, AttrExitCoreDumped, ev.CoreDumped())
	}
	if slots > 1 {
		// The next record's seq.number is this one's plus its tickets.
		attrs.PutInt(AttrSeqTickets, int64(slots))
	}
}

// AppendLost appends a seq.lost record for count tickets from firstTicket on,
// lost for reason (e.g. "lapped"); nothing when count is 0. It has no
// Timestamp: when the events happened is unknown.
func (m *Mapper) AppendLost(dst plog.LogRecordSlice, firstTicket, count uint64, reason string, observed time.Time) {
	if count == 0 {
		return
	}
	lr := dst.AppendEmpty()
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.SetEventName(EventNameLost)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")

	var buf [128]byte
	b := append(buf[:0], "lost "...)
	b = strconv.AppendUint(b, count, 10)
	if count == 1 {
		b = append(b, " event (ticket "...)
	} else {
		b = append(b, " events (tickets "...)
	}
	b = strconv.AppendUint(b, firstTicket, 10)
	if count > 1 {
		b = append(b, '-')
		b = strconv.AppendUint(b, firstTicket+count-1, 10)
	}
	if reason != "" {
		b = append(b, ", "...)
		b = append(b, reason...)
	}
	b = append(b, ')')
	lr.Body().SetStr(string(b))

	attrs := lr.Attributes()
	attrs.EnsureCapacity(3)
	attrs.PutInt(AttrSeqNumber, int64(firstTicket))
	attrs.PutInt(AttrLostCount, int64(count))
	attrs.PutStr(AttrLostReason, reason)
}

func eventName(t event.Type) string {
	switch t {
	case event.Fork:
		return EventNameFork
	case event.Exec:
		return EventNameExec
	case event.Exit:
		return EventNameExit
	case event.ThreadStart:
		return EventNameThreadStart
	case event.ThreadExit:
		return EventNameThreadExit
	case event.Synth:
		return EventNameSynth
	}
	return EventNameUnknown
}

// attrCount is how many attributes AppendEventSlots gives ev, whose argv
// has nargs arguments.
func attrCount(ev *event.Event, nargs int, redacted, cgroup, tickets bool) int {
	n := 9 + b2i(ev.StartNs != 0) + b2i(cgroup) + b2i(tickets) // seq.number to seq.cpu
	switch ev.Type {
	case event.Fork:
		n += b2i(ev.ParentStartNs != 0)
	case event.Exec:
		n += 1 + b2i(nargs > 0) + b2i(redacted) + b2i(ev.ArgsTruncated()) + b2i(ev.ArgsUnreadable()) +
			b2i(ev.FilenameTruncated()) + b2i(ev.OldTID != ev.PID && ev.OldTID != 0)
	case event.Exit:
		n += 1 + b2i(ev.Signaled()) + b2i(ev.CoreDumped())
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PutFlag sets attribute key to true when set; a flag that is not set is
// left out (the receiver's convention for boolean attributes).
func PutFlag(attrs pcommon.Map, key string, set bool) {
	if set {
		attrs.PutBool(key, true)
	}
}

// AppendRFC3339 appends time ns (since the Unix epoch) to b as
// time.RFC3339Nano in UTC: the same bytes as AppendFormat, several times
// faster. An int64 of ns ends in 2262, so the year has four digits.
func AppendRFC3339(b []byte, ns int64) []byte {
	if ns < 0 {
		return time.Unix(0, ns).UTC().AppendFormat(b, time.RFC3339Nano)
	}
	secs, frac := ns/1e9, ns%1e9
	// Civil date of a day count: H. Hinnant, "chrono-Compatible Low-Level Date Algorithms".
	z := secs/86400 + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day, month, year := doy-(153*mp+2)/5+1, mp+3, yoe+era*400
	if month > 12 {
		month -= 12
		year++
	}
	sod := secs % 86400
	b = append4(b, year)
	b = append(b, '-')
	b = append2(b, month)
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, sod/3600)
	b = append(b, ':')
	b = append2(b, sod/60%60)
	b = append(b, ':')
	b = append2(b, sod%60)
	if frac != 0 {
		b = append(b, '.')
		digits := 9
		for frac%10 == 0 {
			frac /= 10
			digits--
		}
		n := len(b)
		for range digits {
			b = append(b, '0')
		}
		for i := n + digits - 1; i >= n; i-- {
			b[i] = byte('0' + frac%10)
			frac /= 10
		}
	}
	return append(b, 'Z')
}

func append2(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

func append4(b []byte, v int64) []byte {
	return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// body appends the one-line summary of ev to b, e.g.
//
//	fork pid=123 ppid=100 comm=bash
//	exec pid=123 /usr/bin/ls ls -la /tmp
//	exit pid=123 code=3 comm=ls
//	exit pid=123 killed by SIGKILL (core dumped) comm=ls
//	thread_start pid=123 tid=130 comm=worker
//
// Values with spaces, quotes or control characters are quoted as in Go.
func body(b []byte, ev *event.Event, args []string) []byte {
	b = append(b, ev.Type.String()...)
	b = append(b, " pid="...)
	b = strconv.AppendUint(b, uint64(ev.PID), 10)
	switch ev.Type {
	case event.Fork:
		b = append(b, " ppid="...)
		b = strconv.AppendUint(b, uint64(ev.PPID), 10)
	case event.Exec:
		b = append(b, ' ')
		b = appendWord(b, ev.Filename)
		start := len(b)
		cut := ev.ArgsTruncated()
		for _, a := range args {
			if len(b)-start+len(a) > maxBodyArgs {
				cut = true
				break
			}
			b = append(b, ' ')
			b = appendWord(b, a)
		}
		switch {
		case cut:
			b = append(b, " (truncated)"...)
		case ev.ArgsUnreadable():
			b = append(b, " (args unreadable)"...)
		}
		return b
	case event.Exit:
		if ev.Signaled() {
			b = append(b, " killed by "...)
			b = append(b, event.SignalName(ev.Signal())...)
		} else {
			b = append(b, " code="...)
			b = strconv.AppendInt(b, int64(ev.ExitCode()), 10)
		}
		if ev.CoreDumped() {
			b = append(b, " (core dumped)"...)
		}
	default:
		b = append(b, " tid="...)
		b = strconv.AppendUint(b, uint64(ev.TID), 10)
	}
	b = append(b, " comm="...)
	return appendWord(b, ev.Comm)
}

// appendWord appends s, quoted when it is empty or has anything but printable
// ASCII other than '"' and '\\'.
func appendWord(b []byte, s string) []byte {
	if s == "" {
		return append(b, `""`...)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(b, s...)
}
