// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ringmap

import (
	"bytes"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// ringMaps creates the maps of bpf/ring/producer.h for a ring of slots slots.
func ringMaps(t *testing.T, slots int) *ebpf.Collection {
	t.Helper()
	testutil.RequireRoot(t)
	coll, err := ebpf.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"ring_control":  {Name: "ring_control", Type: ebpf.Array, KeySize: 4, ValueSize: ring.CtlSize, MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE},
		"ring_slots":    {Name: "ring_slots", Type: ebpf.Array, KeySize: 4, ValueSize: ring.SlotSize, MaxEntries: uint32(slots), Flags: unix.BPF_F_MMAPABLE},
		"ring_doorbell": {Name: "ring_doorbell", Type: ebpf.RingBuf, MaxEntries: 4096},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { coll.Close() })
	return coll
}

// Map shows the maps' contents: what the kernel side writes, the reader sees.
func TestMapShowsTheMaps(t *testing.T) {
	const slots = 64
	coll := ringMaps(t, slots)
	r, err := Map(coll, slots)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()

	require.Len(t, r.Control(), ring.CtlSize)
	require.Len(t, r.Slots(), slots*ring.SlotSize, "exactly the ring, not the page-rounded mapping")

	ctl := bytes.Repeat([]byte{7}, ring.CtlSize)
	require.NoError(t, coll.Maps["ring_control"].Update(uint32(0), ctl, ebpf.UpdateAny))
	assert.Equal(t, ctl, r.Control())
	slot := bytes.Repeat([]byte{9}, ring.SlotSize)
	require.NoError(t, coll.Maps["ring_slots"].Update(uint32(3), slot, ebpf.UpdateAny))
	assert.Equal(t, slot, r.Slots()[3*ring.SlotSize:4*ring.SlotSize])

	// The control block is the reader's to write (the parked flag).
	r.Control()[ring.ParkedOffset] = 1
	var got []byte
	require.NoError(t, coll.Maps["ring_control"].Lookup(uint32(0), &got))
	assert.Equal(t, byte(1), got[ring.ParkedOffset])

	// Nobody rings: Wait times out; Interrupt ends a Wait at once.
	woke, err := r.Wait(10 * time.Millisecond)
	assert.False(t, woke)
	assert.NoError(t, err)
	r.Interrupt()
	start := time.Now()
	woke, err = r.Wait(10 * time.Second)
	assert.False(t, woke)
	assert.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "Interrupt did not end the Wait")
}

// With no slots only the control block is mapped: the ring buffer and perf
// transports keep their head and parked flag there.
func TestMapControlAlone(t *testing.T) {
	coll := ringMaps(t, 8)
	r, err := Map(coll, 0)
	require.NoError(t, err)
	assert.Len(t, r.Control(), ring.CtlSize)
	assert.Nil(t, r.Slots())
	r.Interrupt() // no doorbell: nothing to interrupt, and no panic
	require.NoError(t, r.Close())
}

// A map that cannot be mapped fails Map, naming it, and leaves nothing mapped.
func TestMapFails(t *testing.T) {
	testutil.RequireRoot(t)
	coll, err := ebpf.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"ring_control": {Name: "ring_control", Type: ebpf.Array, KeySize: 4, ValueSize: ring.CtlSize, MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE},
		"ring_slots":   {Name: "ring_slots", Type: ebpf.Array, KeySize: 4, ValueSize: ring.SlotSize, MaxEntries: 8}, // not BPF_F_MMAPABLE
	}})
	require.NoError(t, err)
	defer coll.Close()
	_, err = Map(coll, 8)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mmap")
	assert.Contains(t, err.Error(), "ring_slots")
}
