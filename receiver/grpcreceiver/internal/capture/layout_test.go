// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

// The Go constants against the C structs, from the BTF of the committed object.
func TestLayoutMatchesBPF(t *testing.T) {
	spec, err := loadH2()
	require.NoError(t, err)
	for name, size := range map[string]int{"h2_rec": RecHeaderSize, "h2_open": OpenSize, "h2_close": CloseSize, "h2_seg": SegHeaderSize} {
		var s *btf.Struct
		require.NoError(t, spec.Types.TypeByName(name, &s), name)
		require.Equal(t, uint32(size), s.Size, name)
	}
}
