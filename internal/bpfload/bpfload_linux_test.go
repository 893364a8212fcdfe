// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfload

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

func spec(insns asm.Instructions) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"prog": {Name: "prog", Type: ebpf.SocketFilter, License: "GPL", Instructions: insns},
	}}
}

func TestLoads(t *testing.T) {
	testutil.RequireRoot(t)
	coll, err := NewCollection(spec(asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}))
	require.NoError(t, err)
	defer coll.Close()
	assert.NotNil(t, coll.Programs["prog"])
}

// A program the verifier refuses: the error says why, from its log.
func TestRefusedLoadCarriesTheVerifierLog(t *testing.T) {
	testutil.RequireRoot(t)
	// R2 is never written: reading it is what the verifier refuses.
	_, err := NewCollection(spec(asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()}))
	require.Error(t, err)
	var verr *ebpf.VerifierError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, err.Error(), "R2 !read_ok")
	assert.NotEmpty(t, verr.Log)
}
