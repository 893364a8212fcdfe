// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package pdatamap

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

const (
	bootNs = uint64(3_600_000_000_000) // an hour after boot
	// bootedAt is when the test machine booted: 2023-11-14T22:13:20Z.
	bootedAt = int64(1_700_000_000_000_000_000)
)

var observed = time.Unix(0, bootedAt+int64(bootNs)+5_000_000).UTC()

// goldenEvents is a short session: bash forks 4242, which execs ls with a
// truncated argv, exits 7; a thread starts in 4243, then a gap, then 4243 is
// killed by SIGKILL and dumps core.
func goldenEvents() []event.Event {
	const bash, child = 4000, 4242
	bashStart, childStart := uint64(1_000_000_000), bootNs
	return []event.Event{
		{Ticket: 100, Type: event.Fork, KTime: bootNs, StartNs: childStart, ParentStartNs: bashStart,
			CgroupID: 7788, CPU: 2, PID: child, TID: child, PPID: bash, UID: 1000, GID: 1000, Comm: "bash"},
		{Ticket: 101, Type: event.Exec, Flags: event.FlagArgsTruncated, KTime: bootNs + 1_000_000,
			StartNs: childStart, ParentStartNs: bashStart, CgroupID: 7788, CPU: 2, PID: child, TID: child, PPID: bash,
			UID: 1000, GID: 1000, OldTID: child, Comm: "ls", Filename: "/usr/bin/ls",
			Args: []string{"ls", "-la", "/tmp/my dir", "/var/l"}},
		{Ticket: 102, Type: event.Exit, KTime: bootNs + 2_000_000, StartNs: childStart, ParentStartNs: bashStart,
			CgroupID: 7788, CPU: 3, PID: child, TID: child, PPID: bash, UID: 1000, GID: 1000, ExitStatus: 7 << 8, Comm: "ls"},
		{Ticket: 103, Type: event.ThreadStart, KTime: bootNs + 3_000_000, StartNs: bootNs + 3_000_000,
			ParentStartNs: bashStart, CgroupID: 7788, CPU: 0, PID: 4243, TID: 4250, PPID: bash, UID: 0, GID: 0, Comm: "worker"},
		{Ticket: 120, Type: event.Exit, KTime: bootNs + 9_000_000, StartNs: bootNs + 2_500_000, ParentStartNs: bashStart,
			CgroupID: 7788, CPU: 1, PID: 4243, TID: 4250, PPID: bash, UID: 0, GID: 0, ExitStatus: 9 | 0x80, Comm: "worker"},
	}
}

func goldenLogs(t testing.TB) plog.Logs {
	m := Mapper{BootOffset: bootedAt, IncludeThreads: true}
	logs := plog.NewLogs()
	sl := logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	sl.Scope().SetName("seq")
	recs := sl.LogRecords()
	evs := goldenEvents()
	for i := range evs {
		if i == 4 {
			m.AppendLost(recs, 104, 16, "lapped", observed)
		}
		require.True(t, m.AppendEvent(recs, &evs[i], observed))
	}
	return logs
}

func TestGolden(t *testing.T) {
	logs := goldenLogs(t)
	raw, err := (&plog.JSONMarshaler{}).MarshalLogs(logs)
	require.NoError(t, err)
	want := testutil.GoldenJSON(t, filepath.Join("testdata", "golden_logs.json"), raw)

	// The golden file reads back to the same logs.
	back, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(want)
	require.NoError(t, err)
	assert.Equal(t, logs, back)
}

// attrs returns the attributes of r as a Go map, for assertions.
func attrs(r plog.LogRecord) map[string]any { return r.Attributes().AsRaw() }

func TestSemantics(t *testing.T) {
	recs := goldenLogs(t).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 6, recs.Len())

	// Order of records is the order of input, the gap where it was found.
	var names []string
	var seqs []int64
	for _, r := range recs.All() {
		names = append(names, r.EventName())
		v, _ := r.Attributes().Get(AttrSeqNumber)
		seqs = append(seqs, v.Int())
	}
	assert.Equal(t, []string{EventNameFork, EventNameExec, EventNameExit, EventNameThreadStart, EventNameLost, EventNameExit}, names)
	assert.Equal(t, []int64{100, 101, 102, 103, 104, 120}, seqs)

	// A fork names the child in process.pid and the forking process in process.parent_pid.
	fork := attrs(recs.At(0))
	assert.Equal(t, int64(4242), fork[AttrProcessPID])
	assert.Equal(t, int64(4000), fork[AttrProcessParentPID])
	assert.Equal(t, "fork pid=4242 ppid=4000 comm=bash", recs.At(0).Body().Str())

	// Timestamps: boot clock converted to wall clock; observed as given.
	assert.Equal(t, time.Date(2023, 11, 14, 23, 13, 20, 0, time.UTC), recs.At(0).Timestamp().AsTime())
	assert.Equal(t, time.Date(2023, 11, 14, 23, 13, 20, 1_000_000, time.UTC), recs.At(1).Timestamp().AsTime())
	assert.Equal(t, pcommon.NewTimestampFromTime(observed), recs.At(0).ObservedTimestamp())
	assert.Equal(t, "2023-11-14T23:13:20Z", fork[AttrProcessCreationTime])
	assert.Equal(t, "2023-11-14T22:13:21Z", fork[AttrParentCreationTime])

	exec := attrs(recs.At(1))
	assert.Equal(t, "/usr/bin/ls", exec[AttrProcessExecutablePath])
	assert.Equal(t, []any{"ls", "-la", "/tmp/my dir", "/var/l"}, exec[AttrProcessCommandArgs])
	assert.Equal(t, true, exec[AttrArgsTruncated])
	assert.NotContains(t, exec, AttrExecOldTID, "old_tid equals pid")
	assert.Equal(t, `exec pid=4242 /usr/bin/ls ls -la "/tmp/my dir" /var/l (truncated)`, recs.At(1).Body().Str())

	exit := attrs(recs.At(2))
	assert.Equal(t, int64(7), exit[AttrProcessExitCode])
	assert.NotContains(t, exit, AttrExitSignal)
	assert.NotContains(t, exit, AttrExitCoreDumped)
	assert.Equal(t, plog.SeverityNumberWarn, recs.At(2).SeverityNumber())

	lost := recs.At(4)
	assert.Equal(t, map[string]any{AttrSeqNumber: int64(104), AttrLostCount: int64(16), AttrLostReason: "lapped"}, attrs(lost))
	assert.Equal(t, "lost 16 events (tickets 104-119, lapped)", lost.Body().Str())
	assert.Zero(t, lost.Timestamp())
	assert.Equal(t, plog.SeverityNumberWarn, lost.SeverityNumber())

	killed := attrs(recs.At(5))
	assert.Equal(t, "SIGKILL", killed[AttrExitSignal])
	assert.Equal(t, true, killed[AttrExitCoreDumped])
	assert.Equal(t, int64(128+9), killed[AttrProcessExitCode])
	assert.Equal(t, int64(4250), killed[AttrThreadID])
	assert.Equal(t, "exit pid=4243 killed by SIGKILL (core dumped) comm=worker", recs.At(5).Body().Str())
}

func TestBootToWall(t *testing.T) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	m := Mapper{BootToWall: func(ns uint64) time.Time { return base.Add(time.Duration(ns)) }, BootOffset: 12345}
	recs := plog.NewLogRecordSlice()
	m.AppendEvent(recs, &event.Event{Type: event.Fork, KTime: 1500, StartNs: 1000}, base)
	assert.Equal(t, base.Add(1500), recs.At(0).Timestamp().AsTime())
	assert.Equal(t, "2025-01-02T03:04:05.000001Z", attrs(recs.At(0))[AttrProcessCreationTime])
	assert.NotContains(t, attrs(recs.At(0)), AttrParentCreationTime, "unknown parent start")

	recs = plog.NewLogRecordSlice()
	(&Mapper{BootOffset: -500}).AppendEvent(recs, &event.Event{Type: event.Fork, KTime: 1500}, base)
	assert.Equal(t, pcommon.Timestamp(1000), recs.At(0).Timestamp())
}

func TestThreads(t *testing.T) {
	recs := plog.NewLogRecordSlice()
	var m Mapper
	assert.False(t, m.AppendEvent(recs, &event.Event{Type: event.ThreadStart}, observed))
	assert.False(t, m.AppendEvent(recs, &event.Event{Type: event.ThreadExit}, observed))
	assert.Equal(t, 0, recs.Len())

	m.IncludeThreads = true
	assert.True(t, m.AppendEvent(recs, &event.Event{Type: event.ThreadExit, PID: 10, TID: 12, Comm: "w"}, observed))
	require.Equal(t, 1, recs.Len())
	r := recs.At(0)
	assert.Equal(t, EventNameThreadExit, r.EventName())
	assert.Equal(t, "thread_exit pid=10 tid=12 comm=w", r.Body().Str())
	assert.Equal(t, int64(12), attrs(r)[AttrThreadID])
	assert.NotContains(t, attrs(r), AttrProcessExitCode)
}

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		status   uint32
		body     string
		severity plog.SeverityNumber
		code     int64
	}{
		{0, "exit pid=1 code=0 comm=ls", plog.SeverityNumberInfo, 0},
		{3 << 8, "exit pid=1 code=3 comm=ls", plog.SeverityNumberWarn, 3},
		{15, "exit pid=1 killed by SIGTERM comm=ls", plog.SeverityNumberWarn, 143},
		{11 | 0x80, "exit pid=1 killed by SIGSEGV (core dumped) comm=ls", plog.SeverityNumberWarn, 139},
		{40, "exit pid=1 killed by SIG40 comm=ls", plog.SeverityNumberWarn, 168},
	} {
		recs := plog.NewLogRecordSlice()
		(&Mapper{}).AppendEvent(recs, &event.Event{Type: event.Exit, PID: 1, ExitStatus: tc.status, Comm: "ls"}, observed)
		r := recs.At(0)
		assert.Equal(t, tc.body, r.Body().Str())
		assert.Equal(t, tc.severity, r.SeverityNumber(), tc.body)
		assert.Equal(t, tc.severity.String(), map[string]string{"INFO": "Info", "WARN": "Warn"}[r.SeverityText()])
		assert.Equal(t, tc.code, attrs(r)[AttrProcessExitCode], tc.body)
	}
}

func TestExecBody(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 200))
	for _, tc := range []struct {
		name string
		ev   event.Event
		want string
	}{
		{"plain", event.Event{Filename: "/bin/ls", Args: []string{"ls", "-l"}}, "exec pid=9 /bin/ls ls -l"},
		{"quoted", event.Event{Filename: "/bin/sh", Args: []string{"sh", "-c", `echo "hi"`, "", "a\nb", "ü"}},
			`exec pid=9 /bin/sh sh -c "echo \"hi\"" "" "a\nb" "ü"`},
		{"no args", event.Event{Filename: "/bin/true"}, "exec pid=9 /bin/true"},
		{"unreadable", event.Event{Filename: "/bin/ls", Flags: event.FlagArgsUnreadable}, "exec pid=9 /bin/ls (args unreadable)"},
		{"long", event.Event{Filename: "/bin/echo", Args: []string{"echo", long, long}}, "exec pid=9 /bin/echo echo " + long + " (truncated)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.Type, tc.ev.PID, tc.ev.OldTID = event.Exec, 9, 11
			recs := plog.NewLogRecordSlice()
			(&Mapper{}).AppendEvent(recs, &tc.ev, observed)
			assert.Equal(t, tc.want, recs.At(0).Body().Str())
			assert.Equal(t, int64(11), attrs(recs.At(0))[AttrExecOldTID])
			assert.Equal(t, tc.ev.ArgsUnreadable(), attrs(recs.At(0))[AttrArgsUnreadable] == true)
		})
	}
}

func TestLost(t *testing.T) {
	recs := plog.NewLogRecordSlice()
	m := Mapper{}
	m.AppendLost(recs, 5, 0, "lapped", observed)
	assert.Equal(t, 0, recs.Len(), "nothing lost, no record")
	m.AppendLost(recs, 5, 1, "", observed)
	assert.Equal(t, "lost 1 event (ticket 5)", recs.At(0).Body().Str())
	assert.Equal(t, pcommon.NewTimestampFromTime(observed), recs.At(0).ObservedTimestamp())
}

// The keys that the receiver, its docs and its users rely on.
func TestAttributeKeys(t *testing.T) {
	assert.Equal(t, []string{
		"seq.number", "process.pid", "process.parent_pid", "process.executable.name",
		"process.executable.path", "process.command_args", "process.exit.code", "process.user.id",
		"process.group.id", "process.creation.time", "thread.id",
	}, []string{
		AttrSeqNumber, AttrProcessPID, AttrProcessParentPID, AttrProcessExecutableName,
		AttrProcessExecutablePath, AttrProcessCommandArgs, AttrProcessExitCode, AttrProcessUserID,
		AttrProcessGroupID, AttrProcessCreationTime, AttrThreadID,
	})
}

// benchEvents is a mix as the ring sees it: fork, exec (5 args), exit.
func benchEvents() []event.Event {
	return []event.Event{
		{Ticket: 1, Type: event.Fork, KTime: bootNs, StartNs: bootNs, ParentStartNs: 1e9, CgroupID: 7788, CPU: 2,
			PID: 4242, TID: 4242, PPID: 4000, UID: 1000, GID: 1000, Comm: "bash"},
		{Ticket: 2, Type: event.Exec, KTime: bootNs + 1000, StartNs: bootNs, ParentStartNs: 1e9, CgroupID: 7788, CPU: 2,
			PID: 4242, TID: 4242, PPID: 4000, UID: 1000, GID: 1000, OldTID: 4242, Comm: "grep", Filename: "/usr/bin/grep",
			Args: []string{"grep", "-r", "--color=auto", "needle", "/var/log"}},
		{Ticket: 3, Type: event.Exit, KTime: bootNs + 2000, StartNs: bootNs, ParentStartNs: 1e9, CgroupID: 7788, CPU: 3,
			PID: 4242, TID: 4242, PPID: 4000, UID: 1000, GID: 1000, ExitStatus: 1 << 8, Comm: "grep"},
	}
}

// batch is how many records go into one plog.Logs, as the receiver batches them.
const batch = 1024

func newBatch() plog.LogRecordSlice {
	logs := plog.NewLogs()
	recs := logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	recs.EnsureCapacity(batch)
	return recs
}

// AppendEventWith, reusing a Scratch, gives the records AppendEvent gives,
// whatever the cache holds: the same processes again, a changed boot offset,
// times that collide in the cache.
func TestScratchSameRecords(t *testing.T) {
	evs := append(goldenEvents(), benchEvents()...)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		ev := evs[rng.IntN(len(evs))]
		switch rng.IntN(3) {
		case 0:
			ev.StartNs = uint64(rng.IntN(1 << 12)) // collisions, 0 included
		case 1:
			ev.ParentStartNs = rng.Uint64() >> 2
		}
		evs = append(evs, ev)
	}
	var s Scratch
	for _, off := range []int64{bootedAt, bootedAt + 1, 0, bootedAt} {
		m := Mapper{BootOffset: off, IncludeThreads: true}
		want, got := newBatch(), newBatch()
		for i := range evs {
			assert.Equal(t, m.AppendEvent(want, &evs[i], observed), m.AppendEventWith(got, &evs[i], observed, &s))
		}
		require.Equal(t, want.Len(), got.Len())
		for i := range want.Len() {
			require.Equal(t, want.At(i).Attributes().AsRaw(), got.At(i).Attributes().AsRaw(), "record %d, offset %d", i, off)
			require.Equal(t, want.At(i).Body().Str(), got.At(i).Body().Str())
		}
	}
}

// BenchmarkAppendEvent: mapping as the receiver does it, with a Scratch.
func BenchmarkAppendEvent(b *testing.B) { benchAppend(b, &Mapper{BootOffset: bootedAt}) }

// BenchmarkAppendEventCgroup: BenchmarkAppendEvent with process.linux.cgroup
// resolved, as the agent resolves it.
func BenchmarkAppendEventCgroup(b *testing.B) {
	info := cgroups.Parse("/user.slice/user-1000.slice/session-2.scope")
	benchAppend(b, &Mapper{BootOffset: bootedAt, Cgroups: func(uint64) *cgroups.Info { return &info }})
}

func benchAppend(b *testing.B, m *Mapper) {
	evs := benchEvents()
	now := time.Now()
	recs := newBatch()
	var s Scratch
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if recs.Len() == batch {
			recs = newBatch()
		}
		m.AppendEventWith(recs, &evs[i%len(evs)], now, &s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendEventNoScratch: AppendEvent alone, nothing reused.
func BenchmarkAppendEventNoScratch(b *testing.B) {
	evs := benchEvents()
	m := Mapper{BootOffset: bootedAt}
	now := time.Now()
	recs := newBatch()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if recs.Len() == batch {
			recs = newBatch()
		}
		m.AppendEvent(recs, &evs[i%len(evs)], now)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkDecodeAndMap(b *testing.B) {
	var recs [][]byte
	for _, ev := range benchEvents() {
		recs = append(recs, event.Encode(&ev))
	}
	m := Mapper{BootOffset: bootedAt}
	now := time.Now()
	out := newBatch()
	var (
		ev event.Event
		in event.Interner
		s  Scratch
	)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if out.Len() == batch {
			out = newBatch()
		}
		if err := event.DecodeInterned(uint64(i), recs[i%len(recs)], &ev, &in); err != nil {
			b.Fatal(err)
		}
		m.AppendEventWith(out, &ev, now, &s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func TestAppendRFC3339(t *testing.T) {
	cases := []int64{0, 1, 999_999_999, 1e9, 951_782_400e9 /* 2000-02-29 */, 4_107_542_399_999_999_999, 1<<63 - 1, -1, -1e18}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ns := rng.Int64()
		switch rng.IntN(3) {
		case 0:
			ns -= ns % 1e9 // whole seconds
		case 1:
			ns -= ns % 1e6 // ms
		}
		cases = append(cases, ns)
	}
	for _, ns := range cases {
		want := time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		if got := string(AppendRFC3339(nil, ns)); got != want {
			t.Fatalf("AppendRFC3339(%d) = %s, want %s", ns, got, want)
		}
	}
}

func TestRedactAndCgroup(t *testing.T) {
	rd, err := redact.New(redact.Config{})
	require.NoError(t, err)
	info := cgroups.Parse("/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope")
	m := Mapper{Cgroups: func(id uint64) *cgroups.Info {
		if id == 42 {
			return &info
		}
		return nil
	}}
	recs := plog.NewLogRecordSlice()
	ev := event.Event{Type: event.Exec, PID: 9, CgroupID: 42, Filename: "/usr/bin/curl",
		Args: []string{"curl", "-H", "Authorization: Bearer abc123", "https://bob:pw@example.com/"}}
	ev.Args, ev.Redacted = rd.Args(ev.Args) // the receiver's process.Redact
	require.True(t, m.AppendEvent(recs, &ev, observed))
	a := attrs(recs.At(0))
	assert.Equal(t, []any{"curl", "-H", "Authorization: Bearer REDACTED", "https://bob:REDACTED@example.com/"}, a[AttrProcessCommandArgs])
	assert.Equal(t, true, a[AttrArgsRedacted])
	assert.Equal(t, `exec pid=9 /usr/bin/curl curl -H "Authorization: Bearer REDACTED" https://bob:REDACTED@example.com/`, recs.At(0).Body().Str())
	assert.Equal(t, "0::"+info.Path, a[AttrProcessLinuxCgroup])

	ev = event.Event{Type: event.Exit, PID: 9, CgroupID: 43}
	require.True(t, m.AppendEvent(recs, &ev, observed))
	a = attrs(recs.At(1))
	assert.NotContains(t, a, AttrProcessLinuxCgroup)
	assert.NotContains(t, a, AttrArgsRedacted)
}

// The attribute map is sized exactly: attrCount counts what AppendEventSlots
// puts, with and without a cgroup, a redaction and seq.tickets.
func TestAttrCountExact(t *testing.T) {
	rd, err := redact.New(redact.Config{})
	require.NoError(t, err)
	info := cgroups.Parse("/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope")
	evs := append(goldenEvents(), benchEvents()...)
	evs = append(evs,
		event.Event{Type: event.Exec, PID: 9, OldTID: 10, Flags: event.FlagArgsUnreadable | event.FlagFilenameTruncated,
			Filename: "/usr/bin/curl", Args: []string{"curl", "https://bob:pw@example.com/"}},
		event.Event{Type: event.Exec, PID: 9, Filename: "/bin/true"},
		event.Event{Type: event.Exit, PID: 9, ExitStatus: 11 | 0x80},
		event.Event{Type: event.Fork, PID: 9})
	for i := range evs {
		if evs[i].Type == event.Exec { // the receiver's process.Redact
			evs[i].Args, evs[i].Redacted = rd.Args(evs[i].Args)
		}
	}
	for _, withCgroup := range []bool{false, true} {
		m := Mapper{BootOffset: bootedAt, IncludeThreads: true}
		if withCgroup {
			m.Cgroups = func(uint64) *cgroups.Info { return &info }
		}
		for _, slots := range []int{1, 3} {
			for i := range evs {
				ev := &evs[i]
				recs := plog.NewLogRecordSlice()
				require.True(t, m.AppendEventSlots(recs, ev, observed, nil, slots))
				got := recs.At(0).Attributes()
				assert.Equal(t, attrCount(ev, len(ev.Args), ev.Redacted > 0, withCgroup, slots > 1), got.Len(),
					"event %d (%s), cgroup %v, slots %d: %v", i, ev.Type, withCgroup, slots, got.AsRaw())
				v, ok := got.Get(AttrSeqTickets)
				assert.Equal(t, slots > 1, ok)
				if ok {
					assert.Equal(t, int64(slots), v.Int())
				}
			}
		}
	}
}

// BenchmarkAttrsCopyTo compares, in one run, the two ways to give records
// a process's attributes: put one by one (putAttrs, as AppendEventSlots
// does) or copied from a map prepared once (Map.CopyTo), as a per-process
// template would, at best (nothing set after the copy). Records of the
// bench fork event, n at a time each way; put-ns/rec, copyto-ns/rec and
// copyto/put report the mean cost per record and their ratio.
func BenchmarkAttrsCopyTo(b *testing.B) {
	ev := benchEvents()[0]
	m := Mapper{BootOffset: bootedAt}
	var s Scratch
	template := pcommon.NewMap()
	m.putAttrs(template, &ev, nil, false, &s, 1)
	const n = 256
	var put, cp time.Duration
	ways := [2]func(recs plog.LogRecordSlice) *time.Duration{
		func(recs plog.LogRecordSlice) *time.Duration {
			for range n {
				m.putAttrs(recs.AppendEmpty().Attributes(), &ev, nil, false, &s, 1)
			}
			return &put
		},
		func(recs plog.LogRecordSlice) *time.Duration {
			for range n {
				template.CopyTo(recs.AppendEmpty().Attributes())
			}
			return &cp
		},
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		recs := plog.NewLogRecordSlice()
		recs.EnsureCapacity(2 * n)
		for j := range 2 { // each way first every other time
			start := time.Now()
			*ways[(i+j)%2](recs) += time.Since(start)
		}
		if last := recs.Len() - 1; !assert.ObjectsAreEqual(recs.At(0).Attributes().AsRaw(), recs.At(last).Attributes().AsRaw()) {
			b.Fatal("the copy differs from the Puts")
		}
	}
	recs := float64(b.N) * n
	b.ReportMetric(float64(put.Nanoseconds())/recs, "put-ns/rec")
	b.ReportMetric(float64(cp.Nanoseconds())/recs, "copyto-ns/rec")
	b.ReportMetric(float64(cp)/float64(put), "copyto/put")
}

// TestMaxArgs: one record's argv is cut at MaxArgs, marked truncated; the
// event is left as it was.
func TestMaxArgs(t *testing.T) {
	m := Mapper{MaxArgs: 3}
	ev := event.Event{Type: event.Exec, PID: 10, Filename: "/bin/x", Args: []string{"x", "a", "b", "c", "d"}}
	recs := plog.NewLogRecordSlice()
	require.True(t, m.AppendEvent(recs, &ev, time.Unix(1, 0)))
	attrs := recs.At(0).Attributes()
	v, ok := attrs.Get(AttrProcessCommandArgs)
	require.True(t, ok)
	assert.Equal(t, []any{"x", "a", "b"}, v.Slice().AsRaw())
	tr, ok := attrs.Get(AttrArgsTruncated)
	assert.True(t, ok && tr.Bool())
	assert.False(t, ev.ArgsTruncated())
	assert.Len(t, ev.Args, 5)
}
