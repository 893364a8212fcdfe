// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package event decodes the sequencer's records (bpf/seq/seq.h, struct seq_event
// followed by filename and argv) into Go values. It is the one decoder shared
// by every transport that hands records to the receiver.
package event

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sizes mirrored from bpf/seq/seq.h.
const (
	FixedSize   = 96   // sizeof(struct seq_event)
	MaxFilename = 256  // SEQ_MAX_FILENAME
	MaxArgs     = 4096 // SEQ_MAX_ARGS
	commSize    = 16
)

// Type is enum seq_event_type.
type Type uint16

// Event types, as in bpf/seq/seq.h.
const (
	Fork        Type = 1 // a new process (fork/clone without CLONE_THREAD)
	Exec        Type = 2
	Exit        Type = 3 // the last thread of a process exited
	ThreadStart Type = 4 // clone with CLONE_THREAD
	ThreadExit  Type = 5 // a thread exited, its process lives on
	Synth       Type = 6 // bench-only synthetic producer
	Snapshot    Type = 7 // a process alive when the receiver started (task iterator)

	// NumTypes is SEQ_EV_MAX: arrays indexed by Type (the kernel's per-type
	// counters) have this many entries.
	NumTypes = 8
)

// String returns the short lower-case name of t, e.g. "fork" or "thread_exit".
func (t Type) String() string {
	switch t {
	case Fork:
		return "fork"
	case Exec:
		return "exec"
	case Exit:
		return "exit"
	case ThreadStart:
		return "thread_start"
	case ThreadExit:
		return "thread_exit"
	case Synth:
		return "synth"
	case Snapshot:
		return "snapshot"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Valid reports whether t is one of the known types.
func (t Type) Valid() bool { return t >= Fork && t <= Snapshot }

// Flags is enum seq_event_flags.
type Flags uint16

// Event flags, as in bpf/seq/seq.h.
const (
	FlagArgsTruncated     Flags = 1 << 0 // argv cut at MaxArgs, possibly mid-argument
	FlagFilenameTruncated Flags = 1 << 1 // filename cut at MaxFilename
	FlagArgsUnreadable    Flags = 1 << 2 // argv pages not resident: args left empty
)

// Event is one decoded record. Times are CLOCK_BOOTTIME nanoseconds.
type Event struct {
	Ticket        uint64 // seq.number: the event's place in the global order
	Type          Type
	Flags         Flags
	KTime         uint64 // when it happened
	StartNs       uint64 // the task's start time; for process events the group leader's
	ParentStartNs uint64 // the real parent's group leader start time
	CgroupID      uint64
	CPU           uint32
	PID           uint32 // tgid; for Fork the child
	TID           uint32
	PPID          uint32 // real parent's tgid
	UID           uint32
	GID           uint32
	ExitStatus    uint32 // raw wait status: (code << 8) | core(0x80) | signal
	OldTID        uint32 // Exec: the tid that called execve
	SID           uint32 // session id: the process leads its session when SID == PID
	Comm          string
	Filename      string   // Exec only
	Args          []string // Exec only: argv, argv[0] included
	// Redacted is how many values of Args a redactor replaced: 0 as
	// decoded; the seq receiver redacts Args once (process.Redact) before
	// its process model and its log records read them.
	Redacted int
}

// ExitCode is the exit code of a process that exited normally: (status>>8)&0xff.
func (e *Event) ExitCode() int { return int(e.ExitStatus>>8) & 0xff }

// Signal is the number of the signal that killed the process, 0 if none.
func (e *Event) Signal() int { return int(e.ExitStatus & 0x7f) }

// Signaled reports whether the process was killed by a signal.
func (e *Event) Signaled() bool { return e.Signal() != 0 }

// CoreDumped reports whether the process dumped core.
func (e *Event) CoreDumped() bool { return e.ExitStatus&0x80 != 0 }

// ArgsTruncated reports whether argv was cut; the last argument may be partial.
func (e *Event) ArgsTruncated() bool { return e.Flags&FlagArgsTruncated != 0 }

// FilenameTruncated reports whether the filename was cut.
func (e *Event) FilenameTruncated() bool { return e.Flags&FlagFilenameTruncated != 0 }

// ArgsUnreadable reports whether argv could not be read (Args is then empty).
func (e *Event) ArgsUnreadable() bool { return e.Flags&FlagArgsUnreadable != 0 }

// IsThread reports whether the event is about a thread rather than a process.
func (e *Event) IsThread() bool { return e.Type == ThreadStart || e.Type == ThreadExit }

// Decode errors; the errors Decode returns wrap one of them.
var (
	ErrShort       = errors.New("short record")
	ErrLength      = errors.New("lengths exceed the record")
	ErrTrailing    = errors.New("trailing bytes after the record")
	ErrUnknownType = errors.New("unknown event type")
)

// Trim cuts b, a record with room to spare after its event (a ring buffer
// record padded by its transport, a fixed-size filename array), to the
// event's own length: FixedSize and the filename and argv lengths at 68 and
// 70. A record too short for them is returned as it is, for Decode to refuse.
func Trim(b []byte) []byte {
	if len(b) < FixedSize {
		return b
	}
	n := FixedSize + int(binary.LittleEndian.Uint16(b[68:])) + int(binary.LittleEndian.Uint16(b[70:]))
	if n <= len(b) {
		return b[:n]
	}
	return b
}

// Decode decodes record b, which carries ticket, into ev. b is only read
// during the call: the strings of ev are copies. ev is overwritten entirely;
// the capacity of ev.Args is reused, and ev.Comm and ev.Filename are kept (no
// allocation) when they equal the new values. The record must be exactly
// FixedSize+filename_len+args_len bytes long.
func Decode(ticket uint64, b []byte, ev *Event) error {
	return decode(ticket, b, ev, nil)
}

// DecodeInterned is Decode taking comm, filename and short argument lists
// from in when they were seen lately, rather than allocating them again: a
// fork storm or a build repeats a few names thousands of times.
func DecodeInterned(ticket uint64, b []byte, ev *Event, in *Interner) error {
	return decode(ticket, b, ev, in)
}

func decode(ticket uint64, b []byte, ev *Event, in *Interner) error {
	if len(b) < FixedSize {
		return fmt.Errorf("event: ticket %d: %w: %d bytes, want at least %d", ticket, ErrShort, len(b), FixedSize)
	}
	le := binary.LittleEndian
	typ := Type(le.Uint16(b[32:]))
	if !typ.Valid() {
		return fmt.Errorf("event: ticket %d: %w %d", ticket, ErrUnknownType, uint16(typ))
	}
	fl, al := int(le.Uint16(b[68:])), int(le.Uint16(b[70:]))
	if n := FixedSize + fl + al; n != len(b) {
		err := ErrLength
		if n < len(b) {
			err = ErrTrailing
		}
		return fmt.Errorf("event: ticket %d: %w: %d+%d+%d bytes, record is %d", ticket, err, FixedSize, fl, al, len(b))
	}

	ev.Ticket = ticket
	ev.Redacted = 0
	ev.KTime = le.Uint64(b[0:])
	ev.StartNs = le.Uint64(b[8:])
	ev.ParentStartNs = le.Uint64(b[16:])
	ev.CgroupID = le.Uint64(b[24:])
	ev.Type = typ
	ev.Flags = Flags(le.Uint16(b[34:]))
	ev.CPU = le.Uint32(b[36:])
	ev.PID = le.Uint32(b[40:])
	ev.TID = le.Uint32(b[44:])
	ev.PPID = le.Uint32(b[48:])
	ev.UID = le.Uint32(b[52:])
	ev.GID = le.Uint32(b[56:])
	ev.ExitStatus = le.Uint32(b[60:])
	ev.OldTID = le.Uint32(b[64:])
	ev.SID = le.Uint32(b[88:])

	comm := b[72 : 72+commSize]
	if i := indexNUL(comm); i >= 0 {
		comm = comm[:i]
	}
	if in == nil {
		setString(&ev.Comm, comm)
		setString(&ev.Filename, b[FixedSize:FixedSize+fl])
		ev.Args = splitArgs(ev.Args[:0], b[FixedSize+fl:], "")
		return nil
	}
	in.set(&ev.Comm, comm)
	in.set(&ev.Filename, b[FixedSize:FixedSize+fl])
	args := b[FixedSize+fl:]
	var s string
	if len(args) > 0 && len(args) <= maxInternArgs {
		s = in.get(args) // whole, NULs included: the split strings share it
	}
	ev.Args = splitArgs(ev.Args[:0], args, s)
	return nil
}

// An Interner remembers the strings DecodeInterned made lately, to hand
// them out again when the same bytes come back. It belongs to one goroutine
// at a time; its zero value is ready. Its strings are immutable and may be
// shared by any number of events.
type Interner struct {
	seed maphash.Seed
	tab  []string
}

const (
	internSize    = 1024 // entries, a power of 2
	maxInternArgs = 512  // longer argument lists are not interned
)

// get returns string(b), valid UTF-8, reusing the one made last time the
// same bytes came.
func (in *Interner) get(b []byte) string {
	if in.tab == nil {
		in.seed = maphash.MakeSeed()
		in.tab = make([]string, internSize)
	}
	e := &in.tab[maphash.Bytes(in.seed, b)&(internSize-1)]
	if *e != string(b) { // no allocation for the comparison
		if !utf8.Valid(b) {
			return strings.ToValidUTF8(string(b), "\uFFFD")
		}
		*e = string(b)
	}
	return *e
}

// set sets *s to get(b), keeping *s when it is equal already.
func (in *Interner) set(s *string, b []byte) {
	if len(b) == 0 {
		*s = ""
		return
	}
	if *s != string(b) {
		*s = in.get(b)
	}
}

// setString sets *s to string(b), allocating only when the value changes.
// setString sets *s to b, made valid UTF-8: kernel strings are bytes, and a
// cut can split a character, while OTLP strings must be UTF-8 (invalid
// sequences become U+FFFD).
func setString(s *string, b []byte) {
	if !utf8.Valid(b) {
		*s = strings.ToValidUTF8(string(b), "\uFFFD")
		return
	}
	if *s != string(b) { // no allocation for the comparison
		*s = string(b)
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// splitArgs appends the NUL-separated arguments of b to dst. One trailing NUL
// ends the last argument; without it the last argument was cut. All arguments
// share one allocated string: whole, when not empty, is string(b) made valid
// UTF-8 already.
func splitArgs(dst []string, b []byte, whole string) []string {
	if len(b) == 0 {
		return dst
	}
	s := whole
	if s == "" {
		s = string(b)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
	}
	if b[len(b)-1] == 0 {
		s = s[:len(s)-1]
	}
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}

// Encode returns the record of ev, laid out as in bpf/seq/seq.h: the mirror of
// Decode, used by tests and the Go producer model. Comm is cut at 16 bytes,
// the filename and argv at 65535. Every argument
// is NUL-terminated, except the last one when FlagArgsTruncated is set and it
// is not empty (the producer cut it mid-argument).
func Encode(ev *Event) []byte {
	fn := ev.Filename
	if len(fn) > 0xffff {
		fn = fn[:0xffff]
	}
	args := make([]byte, 0, argsLen(ev.Args))
	for i, a := range ev.Args {
		args = append(args, a...)
		if i < len(ev.Args)-1 || !ev.ArgsTruncated() || a == "" {
			args = append(args, 0)
		}
	}
	if len(args) > 0xffff {
		args = args[:0xffff]
	}

	b := make([]byte, FixedSize, FixedSize+len(fn)+len(args))
	le := binary.LittleEndian
	le.PutUint64(b[0:], ev.KTime)
	le.PutUint64(b[8:], ev.StartNs)
	le.PutUint64(b[16:], ev.ParentStartNs)
	le.PutUint64(b[24:], ev.CgroupID)
	le.PutUint16(b[32:], uint16(ev.Type))
	le.PutUint16(b[34:], uint16(ev.Flags))
	le.PutUint32(b[36:], ev.CPU)
	le.PutUint32(b[40:], ev.PID)
	le.PutUint32(b[44:], ev.TID)
	le.PutUint32(b[48:], ev.PPID)
	le.PutUint32(b[52:], ev.UID)
	le.PutUint32(b[56:], ev.GID)
	le.PutUint32(b[60:], ev.ExitStatus)
	le.PutUint32(b[64:], ev.OldTID)
	le.PutUint16(b[68:], uint16(len(fn)))
	le.PutUint16(b[70:], uint16(len(args)))
	copy(b[72:72+commSize], ev.Comm)
	le.PutUint32(b[88:], ev.SID)
	b = append(b, fn...)
	return append(b, args...)
}

func argsLen(args []string) int {
	n := len(args)
	for _, a := range args {
		n += len(a)
	}
	return n
}
