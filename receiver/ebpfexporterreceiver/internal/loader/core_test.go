// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// newerKernel are the configs whose programs need what a 6.1 kernel lacks:
// cgroup_tcp_bytes, sock:sock_send_length / sock_recv_length (Linux 6.3+).
var newerKernel = []string{"cgroup_tcp_bytes"}

// The fixtures and programs of each architecture (x86_64 beside their
// sources, arm64 in arm64/) against a kernel's BTF given as a file
// (OTELCOL_SEQ_CORE_BTF, as the grpc capture's TestCOREAgainstKernelBTF;
// skipped without it): every CO-RE relocation has its target, but in
// newerKernel's, which are only logged.
func TestCOREAgainstKernelBTF(t *testing.T) {
	for arch, kernel := range testutil.CoreKernels(t) {
		t.Run(arch, func(t *testing.T) {
			var objs []string
			for _, dir := range []string{"../../../../testdata/ebpf_exporter", "../../../../programs"} {
				if arch == "arm64" {
					dir = filepath.Join(dir, "arm64")
				}
				o, err := filepath.Glob(filepath.Join(dir, "*.bpf.o"))
				require.NoError(t, err)
				objs = append(objs, o...)
			}
			require.NotEmpty(t, objs)
			for _, o := range objs {
				bad := testutil.UnresolvedCORE(t, o, kernel)
				if name := strings.TrimSuffix(filepath.Base(o), ".bpf.o"); len(bad) > 0 && slices.Contains(newerKernel, name) {
					t.Logf("%s (needs a newer kernel): %d programs unresolved", name, len(bad))
					continue
				}
				assert.Empty(t, bad, "%s: CO-RE relocations without a target, by program", o)
			}
		})
	}
}
