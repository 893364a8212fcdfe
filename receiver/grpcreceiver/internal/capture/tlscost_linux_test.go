// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
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

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// What the capture's BPF programs cost per TLS RPC, every program summed
// (the TLS probes and the socket hook, which also sees the ciphertext and,
// with TLS on, looks for an OpenSSL call of its thread): a grpc-go TLS
// client and server in one process (grpctls, 1 call at a time) and a
// Python client over OpenSSL (py_h2_tls.py) against a grpc-go TLS server
// in this process. TLSCOST_ROUNDS rounds (1); medians logged. Run it on two
// builds to compare them (BENCHMARKS.md: the socket under a TLS session).
func TestTLSCallBPFCost(t *testing.T) {
	testutil.RequireRoot(t)
	rounds := 1
	if s := os.Getenv("TLSCOST_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err, "TLSCOST_ROUNDS=%q", s)
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(t, err)
	defer stats.Close()
	bin := buildGRPCTLS(t)
	py := grpctest.PythonGRPC(t, filepath.Join("..", "..", "..", ".."))
	srv, err := grpctest.StartTLS()
	require.NoError(t, err)
	defer srv.Stop()

	// total returns the programs' summed run time and runs, and adds each
	// program's to per (the socket hook's runs include every other
	// process's socket calls meanwhile: the host's load shows there).
	type prog struct {
		d time.Duration
		n uint64
	}
	per := map[string]*prog{}
	total := func(c *Capture, run string) (time.Duration, uint64) {
		var d time.Duration
		var n uint64
		for name, p := range c.coll.Programs {
			st, err := p.Stats()
			require.NoError(t, err)
			d += st.Runtime
			n += st.RunCount
			k := run + " " + name
			if per[k] == nil {
				per[k] = &prog{}
			}
			per[k].d += st.Runtime
			per[k].n += st.RunCount
		}
		return d, n
	}
	const goCalls, pyCalls = 2000, 300
	var goNs, pyNs []float64
	for range rounds {
		c := mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384, TLS: true, ProbeSelf: true, GoBinaries: []string{bin}})
		res := runGRPCTLS(t, bin, "-calls", fmt.Sprint(goCalls), "-workers", "1")
		d, n := total(c, "grpc-go")
		require.Positive(t, n)
		goNs = append(goNs, float64(d.Nanoseconds())/float64(res.Calls))
		require.NoError(t, c.Close())

		c = mustOpen(t, Options{Hook: HookAuto, RingSlots: 1 << 16, MaxConns: 4096, HeaderCap: 16384, TLS: true, ProbeSelf: true})
		out, err := exec.Command(py, "../../../../testdata/grpc/py_h2_tls.py", srv.Addr, fmt.Sprint(pyCalls)).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, strings.Repeat("0 ", pyCalls)+"5\n", string(out))
		d, n = total(c, "python")
		require.Positive(t, n)
		pyNs = append(pyNs, float64(d.Nanoseconds())/float64(pyCalls+1))
		require.NoError(t, c.Close())
	}
	names := slices.Sorted(maps.Keys(per))
	for _, k := range names {
		if p := per[k]; p.n > 0 {
			t.Logf("%s: %d runs, %.0f ns/run", k, p.n, float64(p.d.Nanoseconds())/float64(p.n))
		}
	}
	t.Logf("BPF run time per RPC, both ends, all programs: grpc-go TLS %.0f ns (rounds %.0f), Python OpenSSL client + grpc-go TLS server %.0f ns (rounds %.0f)",
		median(goNs), goNs, median(pyNs), pyNs)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
