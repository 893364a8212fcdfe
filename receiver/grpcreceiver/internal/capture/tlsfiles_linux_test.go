// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls"
	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// A running Go program whose symbol table says crypto/tls.(*Conn).Write is
// 2^62 bytes long does not bring the capture down (it did: makeslice
// panicked in gotls.Find): it is skipped, with why, and counted.
func TestTLSHostileExecutable(t *testing.T) {
	testutil.RequireRoot(t)
	bad := filepath.Join(t.TempDir(), "grpctls-hostile")
	testutil.CopyFile(t, buildGRPCTLS(t), bad, 0o755)
	require.NoError(t, grpctest.PatchFileSymbolSize(bad, gotls.WriteSym, 1<<62))
	p, err := grpctest.StartTLSProgram(bad, "-wait")
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true})
	defer c.Close()
	var why string
	for _, s := range c.GoSkipped() {
		if strings.HasPrefix(s, bad+":") {
			why = s
		}
	}
	require.NotEmpty(t, why, "skipped: %v", c.GoSkipped())
	assert.Contains(t, why, gotls.WriteSym)
	assert.Contains(t, why, gotls.ErrMalformed.Error())
	assert.Positive(t, c.TLSFilesFailed())
	cnt, err := c.Counters()
	require.NoError(t, err)
	assert.Contains(t, cnt.Named(), NamedCounter{"tls_files_failed", c.TLSFilesFailed()})
}

// A path inside a process's root is resolved inside it: an absolute
// symlink there points into the root, never at the host's file.
func TestOpenInRootSymlink(t *testing.T) {
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host"), 0o644))
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "usr/lib/libssl.so.3")))
	_, err := openInRoot(root, "/usr/lib/libssl.so.3")
	require.ErrorIs(t, err, os.ErrNotExist, "followed out of the root")
	// The same absolute path inside the root is what it reaches.
	require.NoError(t, os.MkdirAll(filepath.Join(root, host), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, secret), []byte("root"), 0o644))
	f, err := openInRoot(root, "/usr/lib/libssl.so.3")
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 8)
	n, _ := f.Read(b)
	assert.Equal(t, "root", string(b[:n]))
	// Magic links (/proc/self/root/...) are refused.
	require.NoError(t, os.Symlink("/proc/self/root"+secret, filepath.Join(root, "magic")))
	_, err = openInRoot(root, "/magic")
	require.Error(t, err)
}

// The file probed is the one parsed: a Go executable opened, then replaced
// at its path (as a process exec'ing another program would change what
// /proc/<pid>/exe names) is still the one probed, by its descriptor.
func TestTLSProbesTheFileParsed(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "prog")
	testutil.CopyFile(t, buildGRPCTLS(t), path, 0o755)
	// TLS on (its programs loaded), no running process included.
	c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 12, MaxConns: 1024, HeaderCap: 16384, TLS: true,
		Filter: ProcFilter{IncludeExecutables: []string{"/nothing"}}})
	defer c.Close()
	require.Empty(t, c.GoBinaries())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	id, err := idOf(f)
	require.NoError(t, err)
	// Another file (not Go) takes its path.
	sh := filepath.Join(dir, "sh")
	testutil.CopyFile(t, "/bin/sh", sh, 0o755)
	require.NoError(t, os.Rename(sh, path))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	require.NotEqual(t, id[1], st.Ino)

	require.NoError(t, c.attachGoBinary(f, id, path))
	bins := c.GoBinaries()
	require.Len(t, bins, 1)
	assert.Equal(t, id, fileID{bins[0].Dev, bins[0].Ino}, "the probes are in the file parsed")
	assert.Greater(t, bins[0].Probes, 3)
}

// The collector never probes its own executable (the test binary stands
// in for it); an excluded executable gets no probes, an included one does.
func TestTLSSelfAndFilters(t *testing.T) {
	testutil.RequireRoot(t)
	paths := startTLSCopies(t, 2)
	self, err := os.Open("/proc/self/exe")
	require.NoError(t, err)
	selfID, err := idOf(self)
	require.NoError(t, err)
	_ = self.Close()
	probed := func(o Options) map[string]bool {
		o.Hook, o.RingSlots, o.MaxConns, o.HeaderCap, o.TLS = HookAuto, 1<<12, 1024, 16384, true
		c := mustOpen(t, o)
		defer c.Close()
		out := map[string]bool{}
		for _, b := range c.GoBinaries() {
			out[b.Path] = true
			assert.NotEqual(t, selfID, fileID{b.Dev, b.Ino}, "the collector's own executable probed: %+v", b)
		}
		return out
	}
	all := probed(Options{})
	assert.True(t, all[paths[0]] && all[paths[1]], "%v", all)
	got := probed(Options{Filter: ProcFilter{ExcludeExecutables: []string{paths[0]}}})
	assert.False(t, got[paths[0]], "excluded")
	assert.True(t, got[paths[1]])
	got = probed(Options{Filter: ProcFilter{IncludeExecutables: []string{filepath.Join(filepath.Dir(paths[1]), "*")}}})
	assert.Equal(t, map[string]bool{paths[1]: true}, got, "only the included one")
	got = probed(Options{Filter: ProcFilter{IncludeExecutables: []string{"/*/*/*/grpctls-*"}, ExcludeExecutables: []string{paths[1]}}})
	assert.False(t, got[paths[1]], "exclusion wins")
	got = probed(Options{Filter: ProcFilter{ExcludeCgroups: []string{cgroupOf("self")}}})
	assert.False(t, got[paths[0]] || got[paths[1]], "the test's cgroup excluded: %v", got)
}

// The files seen but not probed are bounded: past maxFiles they are
// forgotten (counted); the probed ones are kept (their uprobes are on them:
// a file probed twice would fire twice).
func TestSeenFilesBounded(t *testing.T) {
	c := &Capture{maxFiles: 100}
	set := files{}
	for i := range 10 {
		require.True(t, c.seen(set, fileID{1, uint64(i)}))
		set[fileID{1, uint64(i)}] = true // probed
	}
	for i := range 10_000 {
		c.seen(set, fileID{2, uint64(i)})
		require.LessOrEqual(t, len(set), 100)
	}
	for i := range 10 {
		assert.True(t, set[fileID{1, uint64(i)}], "probed file %d kept", i)
		assert.False(t, c.seen(set, fileID{1, uint64(i)}), "probed file %d not new", i)
	}
	assert.Greater(t, c.tlsForgotten.Load(), uint64(9_000))
	assert.False(t, c.seen(set, fileID{2, 9_999}), "the last seen is remembered")
}
