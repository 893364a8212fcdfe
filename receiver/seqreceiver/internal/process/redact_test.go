// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/event"
	"github.com/otelcol-seq/otelcol-seq/internal/redact"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// Spans and their exec events carry argv with its secrets replaced, and
// the cgroup resolved at the event even when it is gone by the build.
func TestRedactAndCgroup(t *testing.T) {
	rd, err := redact.New(redact.Config{})
	require.NoError(t, err)
	ctr := cgroups.Parse("/kubepods/besteffort/pod4f2e8a1c-3b5d-4e6f-9a7b-8c9d0e1f2a3b/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	known := map[uint64]*cgroups.Info{7: &ctr}
	r := newRunner(t, Config{Cgroups: func(id uint64) *cgroups.Info { return known[id] }})
	r.redact = rd
	app := pk{200, 9_000}
	r.apply(
		forkEv(9_000, app, sshd, "sshd", 50),
		execEv(9_100, app, sshd, "sh", "/bin/sh", "sh", "-c", "mysql -psecret db"),
		execEv(9_200, app, sshd, "mysql", "/usr/bin/mysql", "mysql", "--password=secret", "db"),
	)
	delete(known, 7) // the cgroup is removed before the span is built
	exit := exitEv(9_300, app, sshd, "mysql", 0)
	r.apply(exit)
	require.Equal(t, 1, r.drain())
	s := r.span(app)
	assert.Equal(t, []string{"mysql", "--password=REDACTED", "db"}, strs(attr(t, s.Attributes(), pdatamap.AttrProcessCommandArgs)))
	assert.True(t, attr(t, s.Attributes(), pdatamap.AttrArgsRedacted).Bool())
	assert.Equal(t, ctr.Cgroup, attr(t, s.Attributes(), pdatamap.AttrProcessLinuxCgroup).Str())
	require.Equal(t, 2, s.Events().Len())
	assert.Equal(t, []string{"sh", "-c", "mysql -pREDACTED db"}, strs(attr(t, s.Events().At(0).Attributes(), pdatamap.AttrProcessCommandArgs)))
	assert.True(t, attr(t, s.Events().At(0).Attributes(), pdatamap.AttrArgsRedacted).Bool())
	assert.Equal(t, uint64(2), r.m.Stats().Redacted)

	// Nothing secret: no flag; an unknown cgroup: no process.linux.cgroup.
	plain := pk{201, 9_500}
	r.apply(forkEv(9_500, plain, sshd, "sshd", 50), execEv(9_600, plain, sshd, "ls", "/bin/ls", "ls", "-l"), exitEv(9_700, plain, sshd, "ls", 0))
	r.drain()
	s = r.span(plain)
	_, ok := s.Attributes().Get(pdatamap.AttrArgsRedacted)
	assert.False(t, ok)
	_, ok = s.Attributes().Get(pdatamap.AttrProcessLinuxCgroup)
	assert.False(t, ok)
	_, ok = s.Events().At(0).Attributes().Get(pdatamap.AttrArgsRedacted)
	assert.False(t, ok)

	// Snapshot processes too.
	run := pk{202, 9_800}
	ev := snapEv(9_800, run, sshd, "app", 50)
	ev.Filename, ev.Args = "/usr/bin/app", []string{"app", "--token", "t0k"}
	Redact(rd, ev)
	require.True(t, r.m.AddRunning(ev))
	r.m.CloseAll(10_000)
	r.drain()
	assert.Equal(t, []string{"app", "--token", "REDACTED"}, strs(attr(t, r.span(run).Attributes(), pdatamap.AttrProcessCommandArgs)))
	assert.Equal(t, uint64(3), r.m.Stats().Redacted)
}

// The exec of a process the model evicted is mapped to a log record with
// its argv redacted (seq.args.redacted): its values are counted like any
// exec's, though the model keeps nothing of it.
func TestRedactedCountedForEvictedExec(t *testing.T) {
	rd, err := redact.New(redact.Config{})
	require.NoError(t, err)
	r := newRunner(t, Config{MaxProcesses: 1})
	r.redact = rd
	a, b := pk{300, 10_000}, pk{301, 10_100}
	r.apply(forkEv(10_000, a, sshd, "sh", 50), forkEv(10_100, b, sshd, "sh", 50)) // b evicts a
	require.Equal(t, uint64(1), r.m.Stats().Evicted)
	ev := execEv(10_200, a, sshd, "mysql", "/usr/bin/mysql", "mysql", "--password=s3cret", "-pX")
	r.apply(ev)
	require.Equal(t, uint64(1), r.m.Stats().AfterEviction)
	assert.Equal(t, []string{"mysql", "--password=REDACTED", "-pREDACTED"}, ev.Args, "the record's argv is redacted")
	assert.Equal(t, uint64(2), r.m.Stats().Redacted, "and its values counted")
}

// An argv cut at max_args_bytes (by the kernel at an exec, by the snapshot's
// read of /proc) may end inside a secret whose end is what marks it: the
// user info of a URL cut before its @, a token cut short. Its last argument
// is redacted as though the secret went on.
func TestRedactCutArgv(t *testing.T) {
	rd, err := redact.New(redact.Config{})
	require.NoError(t, err)
	for _, tc := range []struct{ last, want string }{
		{"https://bob:hunter2", "https://bob:REDACTED"},
		{"postgresql://app:PgUriPw", "postgresql://app:REDACTED"},
		{"https://tok9f8e7d6c5b4", "https://REDACTED"},
		{"--uri=mongodb+srv://backup:Mong", "--uri=mongodb+srv://backup:REDACTED"},
		{"ghp_abcdefghijklmnopqrst", "REDACTED"},
		{"ssh://git", "ssh://git"},                         // a login name, not a token
		{"https://host/path?q=1", "https://host/path?q=1"}, // the authority ended before the cut
	} {
		for _, typ := range []event.Type{event.Exec, event.Snapshot} {
			ev := execEv(9_000, pk{400, 9_000}, sshd, "git", "/usr/bin/git", "git", "clone", tc.last)
			ev.Type = typ
			ev.Flags |= event.FlagArgsTruncated
			Redact(rd, ev)
			assert.Equal(t, []string{"git", "clone", tc.want}, ev.Args, "%s cut at %q", typ, tc.last)
			assert.Equal(t, b2i(tc.want != tc.last), ev.Redacted, "%s cut at %q", typ, tc.last)
		}
	}
	// Whole, the same argument is an authority with a port: kept.
	ev := execEv(9_000, pk{400, 9_000}, sshd, "curl", "/usr/bin/curl", "curl", "https://host:8080")
	Redact(rd, ev)
	assert.Equal(t, []string{"curl", "https://host:8080"}, ev.Args)
	assert.Zero(t, ev.Redacted)
}
