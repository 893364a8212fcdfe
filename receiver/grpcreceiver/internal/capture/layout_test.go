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
	// A segment's header: off, len, then seq (H2_F_SEQ) in its last 4 bytes.
	var seg *btf.Struct
	require.NoError(t, spec.Types.TypeByName("h2_seg", &seg))
	offsets := map[string]btf.Bits{}
	for _, m := range seg.Members {
		offsets[m.Name] = m.Offset
	}
	require.Equal(t, map[string]btf.Bits{"off": 0, "len": 64, "seq": 96}, offsets)
	var flags *btf.Enum
	require.NoError(t, spec.Types.TypeByName("h2_rec_flags", &flags))
	values := map[string]uint64{}
	for _, v := range flags.Values {
		values[v.Name] = v.Value
	}
	require.Equal(t, map[string]uint64{"H2_F_SOFTIRQ": flagSoftirq, "H2_F_SEQ": flagSeq, "H2_F_ISN": flagISN,
		"H2_F_HTTP1": flagHTTP1, "H2_F_CALL_START": flagCallStart}, values)
	// A TLS open record's socket numbers (H2_F_ISN) at 92 and 96.
	var open *btf.Struct
	require.NoError(t, spec.Types.TypeByName("h2_open", &open))
	at := map[string]btf.Bits{}
	for _, m := range open.Members {
		at[m.Name] = m.Offset
	}
	require.Equal(t, btf.Bits(92*8), at["isn_snd"])
	require.Equal(t, btf.Bits(96*8), at["isn_rcv"])
}
