// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package ebpfexporter

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/test/parity"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// TestParityKprobeFentry compares the kprobe and fentry fixtures with
// Cloudflare's ebpf_exporter v2.5.1, both running at once, series by series
// (test/parity), where the kernel runs them: in the kernel matrix's
// guests (test/kernels/run.sh passes $EBPF_EXPORTER_BIN, the binary
// `make ebpf-exporter` builds; the guests read the host's files). The host of
// this project has no kprobes and refuses fentry: there those cases skip,
// and ebpfx_attach (tp_btf, raw_tp) runs the same comparison so that its
// path is checked everywhere. The side-by-side test of every other fixture
// is test/e2e/ebpfexporter_parity_test.go.
func TestParityKprobeFentry(t *testing.T) {
	testutil.RequireRoot(t)
	bin := os.Getenv("EBPF_EXPORTER_BIN")
	if bin == "" {
		t.Skip("EBPF_EXPORTER_BIN is not set: no ebpf_exporter to compare with (make ebpf-exporter builds it; " +
			"test/kernels/run.sh passes it to the guests)")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "EBPF_EXPORTER_BIN")
	dir, err := filepath.Abs(fixturesDir)
	require.NoError(t, err)
	pid := os.Getpid()
	const n = 29
	for _, c := range []struct {
		name  string
		probe func(*testing.T) error
	}{
		{"ebpfx_kprobe", probeKprobe},
		{"ebpfx_fentry", probeFentry},
		{"ebpfx_attach", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.probe != nil {
				if err := c.probe(t); err != nil {
					t.Skipf("this kernel refuses %s (%v): compared in the kernel matrix's guests", c.name, err)
				}
			}
			ref := parity.StartReference(t, bin, dir, []string{c.name})
			e := startExporter(t, dir, c.name)
			ours := func() parity.Snapshot { return parity.FromOTLP(e.Collect()) }
			base := ref.Round(t, ours)
			comm := "ebpfx-q" + strconv.Itoa(pid)
			onThread(t, comm, func() {
				for range n {
					getpriority()      // kprobe, fentry: __x64_sys_getpriority
					_ = unix.Getppid() // attach: sys_enter getppid
				}
			})
			r := parity.Check(t, base, ref.Round(t, ours), parity.Options{
				Exact:   func(s *parity.Series) bool { return s.Labels["pid"] == strconv.Itoa(pid) },
				RefOnly: parity.RefOnly,
				Ignore:  parity.IgnoreNonEbpfExporter,
			}, c.name)
			var own int
			for _, x := range r.Exact {
				if x.Labels == `comm="`+comm+`",pid="`+strconv.Itoa(pid)+`"` || c.name == "ebpfx_attach" {
					own++
					assert.Equal(t, float64(n), x.Ours, "%s %s", x.Family, x.Labels)
				}
			}
			assert.Positive(t, own, "the test's own series compared: %v", r.Exact)
		})
	}
}
