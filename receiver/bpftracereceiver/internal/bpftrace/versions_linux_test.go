// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpftrace

// The bpftrace version matrix: the same scripts under the receiver's runner
// on each bpftrace of $BPFTRACE_VERSIONS (make test-bpftrace-versions sets it
// to Debian 12's, 13's and unstable's, the latter two in the chroots of
// scripts/bpftrace-chroot.sh); without it, on the bpftrace on PATH. Root.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// matrixCalls: getppid calls the live self-printing script counts.
const matrixCalls = 2000

// matrixOpens: marker opens and kills the snoop tools must each report.
const matrixOpens = 5

// liveSelfPrint prints its own count, hist and stats maps every 200ms, with
// no maps: section: they must arrive as metrics all the same.
const liveSelfPrint = `BEGIN { printf("matrix start\n"); }
tracepoint:syscalls:sys_enter_getppid /pid == $1/ {
  @calls = count(); @lat = hist(5); @s = stats(10); @bycomm[comm] = count();
}
interval:ms:200 { print(@calls); print(@lat); print(@s); print(@bycomm); }
`

// matrixVersion is one bpftrace of the matrix.
type matrixVersion struct {
	name, bin string
	root      string // the filesystem its package's tools are under ("/" for the host)
}

// matrixVersions parses $BPFTRACE_VERSIONS: name=binary,... A binary beside
// a root/ directory (a chroot wrapper) has its tools there.
func matrixVersions(t *testing.T) []matrixVersion {
	spec := os.Getenv("BPFTRACE_VERSIONS")
	if spec == "" {
		spec = "host=bpftrace"
	}
	var out []matrixVersion
	for _, item := range strings.Split(spec, ",") {
		name, bin, ok := strings.Cut(item, "=")
		require.True(t, ok, "BPFTRACE_VERSIONS: %q is not name=binary", item)
		v := matrixVersion{name: name, bin: bin, root: "/"}
		if root := filepath.Join(filepath.Dir(bin), "root"); filepath.IsAbs(bin) {
			if fi, err := os.Stat(root); err == nil && fi.IsDir() {
				v.root = root
			}
		}
		out = append(out, v)
	}
	return out
}

// matrixRow is what one script gave on one version.
type matrixRow struct {
	script  string
	records int      // log records (snoop tools: the lines of the test's own opens/kills)
	metrics []string // metric names
	values  string   // the final values that must agree
}

// TestVersionMatrix runs, on each bpftrace version, a script that prints its
// own maps (no maps: entry) and Debian's opensnoop.bt and killsnoop.bt of
// that version's package, and checks that each version gives the same
// records and metrics; it prints the table (and writes it to
// $BPFTRACE_MATRIX_OUT when set).
func TestVersionMatrix(t *testing.T) {
	testutil.RequireRoot(t)
	versions := matrixVersions(t)
	var names []string
	results := map[string][]matrixRow{}
	for _, v := range versions {
		version, err := exec.Command(v.bin, "--version").Output()
		require.NoError(t, err, "%s --version", v.bin)
		name := v.name + " (" + strings.TrimSpace(string(version)) + ")"
		rows := make([]matrixRow, 3)
		// The three scripts run side by side; t.Run returns when all have.
		t.Run(v.name, func(t *testing.T) {
			for i, script := range []struct {
				name string
				run  func(*testing.T, matrixVersion) matrixRow
			}{{"selfprint", matrixSelfPrint}, {"opensnoop", matrixOpensnoop}, {"killsnoop", matrixKillsnoop}} {
				t.Run(script.name, func(t *testing.T) {
					t.Parallel()
					rows[i] = script.run(t, v)
				})
			}
		})
		names = append(names, name)
		results[name] = rows
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| bpftrace | script | log records | metrics | values |\n|---|---|---|---|---|\n")
	for _, name := range names {
		for _, r := range results[name] {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", name, r.script, r.records, len(r.metrics), r.values)
		}
	}
	fmt.Print(b.String())
	if out := os.Getenv("BPFTRACE_MATRIX_OUT"); out != "" {
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))
	}
	// The same scripts mean the same on every version: the same rows.
	for i := 1; i < len(names); i++ {
		assert.Equal(t, results[names[0]], results[names[i]], "%s gives what %s gives", names[i], names[0])
	}
}

// startMatrix starts one script on v's bpftrace; it is stopped at the end
// of the test.
func startMatrix(t *testing.T, v matrixVersion, sc ScriptConfig) (*Runner, *sink) {
	t.Helper()
	out := &sink{}
	r, err := New(Config{Binary: v.bin, Scripts: []ScriptConfig{sc}}, zap.NewNop(), out)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		assert.NoError(t, r.Shutdown(ctx))
	})
	return r, out
}

func matrixSelfPrint(t *testing.T, v matrixVersion) matrixRow {
	r, out := startMatrix(t, v, ScriptConfig{Name: "selfprint", Program: liveSelfPrint, Args: []string{strconv.Itoa(os.Getpid())}})
	// The first print: the probes are attached.
	eventually(t, waitLong, func() bool { return len(out.metricsNamed("bpftrace.selfprint.calls")) > 0 }, "%s: the first print of @calls", v.name)
	getppid(matrixCalls)
	want := strconv.Itoa(matrixCalls)
	eventually(t, 10*time.Second, func() bool {
		o := outcomeOf(out)
		return o.series["bpftrace.selfprint.calls MonotonicSum map[]"] == want &&
			o.series["bpftrace.selfprint.s.count MonotonicSum map[]"] == want &&
			strings.HasPrefix(o.series["bpftrace.selfprint.lat Histogram map[]"], "count="+want+" ")
	}, "%s: %d calls counted in @calls, @s and @lat", v.name, matrixCalls)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, r.Shutdown(ctx)) // bpftrace prints its maps at exit
	o := outcomeOf(out)
	assert.Empty(t, r.Counters()["selfprint"].Unmapped)
	var values []string
	for _, k := range slices.Sorted(maps.Keys(o.series)) {
		values = append(values, strings.TrimPrefix(k, "bpftrace.selfprint.")+"="+o.series[k])
	}
	var lines []string
	for _, l := range o.logs {
		if strings.HasPrefix(l, "INFO : ") {
			lines = append(lines, l)
		}
	}
	assert.Equal(t, []string{"INFO : matrix start"}, lines)
	return matrixRow{script: "selfprint (interval print(), no maps:)", records: len(lines), metrics: o.metricNames(), values: strings.Join(values, "; ")}
}

// matrixSnoop runs a tool of v's package, repeats act until a line with
// marker shows up (the probes are attached), then acts matrixOpens more
// times and counts their lines.
func matrixSnoop(t *testing.T, v matrixVersion, tool, marker string, act func()) matrixRow {
	path := filepath.Join(v.root, "usr/sbin", tool+".bt")
	if _, err := os.Stat(path); err != nil {
		return matrixRow{script: tool + ".bt (absent)"}
	}
	r, out := startMatrix(t, v, ScriptConfig{Path: path})
	count := func() int {
		n := 0
		for _, rec := range out.records() {
			if rec.attrs[AttrStream] == streamStdout && slices.Contains(strings.Fields(rec.body), marker) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(waitLong)
	for count() == 0 && time.Now().Before(deadline) {
		act()
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, 5*time.Second, func() bool { return count() > 0 }, "%s %s: a line for %s", v.name, tool, marker)
	time.Sleep(500 * time.Millisecond) // the warm-up's lines
	before := count()
	for i := 0; i < matrixOpens; i++ {
		act()
	}
	eventually(t, 10*time.Second, func() bool { return count() >= before+matrixOpens }, "%s %s: %d more lines for %s", v.name, tool, matrixOpens, marker)
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, r.Shutdown(ctx))
	o := outcomeOf(out)
	c := r.Counters()[tool]
	assert.Zero(t, c.ParseErrors, "%s %s", v.name, tool)
	assert.Empty(t, c.Unmapped, "%s %s", v.name, tool)
	return matrixRow{script: tool + ".bt", records: count() - before, metrics: o.metricNames(), values: fmt.Sprintf("lines for the test's %d %s", matrixOpens, tool)}
}

func matrixOpensnoop(t *testing.T, v matrixVersion) matrixRow {
	// A short path: bpftrace 0.17 reads at most 64 bytes of a string.
	f, err := os.CreateTemp("", "otm")
	require.NoError(t, err)
	marker := f.Name()
	require.NoError(t, f.Close())
	t.Cleanup(func() { os.Remove(marker) })
	return matrixSnoop(t, v, "opensnoop", marker, func() {
		if f, err := os.Open(marker); err == nil {
			f.Close()
		}
	})
}

func matrixKillsnoop(t *testing.T, v matrixVersion) matrixRow {
	child := exec.Command("sleep", "120")
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	pid := child.Process.Pid
	return matrixSnoop(t, v, "killsnoop", strconv.Itoa(pid), func() { _ = unix.Kill(pid, 0) })
}
