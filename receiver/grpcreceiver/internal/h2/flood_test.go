// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// floodBlockLen is the size of one flood header block.
const floodBlockLen = 16 << 10

// floodBlock is a header block of tiny literal insertions (5 bytes each,
// 34 bytes of table each) filling about n bytes; sizeUpdate, when set,
// first raises the dynamic table size to it.
func floodBlock(n int, sizeUpdate uint32) []byte {
	var b []byte
	if sizeUpdate > 0 {
		b = appendInt(b, 0x20, 5, uint64(sizeUpdate))
	}
	for len(b)+5 <= n {
		b = append(b, 0x40, 1, 'a', 1, 'b')
	}
	return b
}

// appendInt appends an HPACK integer of an n-bit prefix with first-byte
// bits pre.
func appendInt(b []byte, pre byte, n uint8, v uint64) []byte {
	mask := uint64(1)<<n - 1
	if v < mask {
		return append(b, pre|byte(v))
	}
	b = append(b, pre|byte(mask))
	for v -= mask; v >= 0x80; v >>= 7 {
		b = append(b, byte(v)|0x80)
	}
	return append(b, byte(v))
}

// floodConv is a connection whose client announces the largest
// SETTINGS_HEADER_TABLE_SIZE and whose server then raises its table to it.
func floodConv(t testing.TB, cfg Config, size uint32) (*conv, *wire) {
	v := &conv{id: 7, now: 1_000}
	v.tr = NewTracker(cfg, func(*Call) {}, nil)
	v.tr.ConnOpen(&ConnOpen{Conn: v.id, TimeNs: v.now, Role: RoleClient})
	c, s := newWire(true), newWire(false)
	v.send(Egress, c.settings(settingHeaderTableSize, 1<<32-1).take())
	v.send(Ingress, s.settings().headerBlock(2, false, 0, floodBlock(floodBlockLen, size)).take())
	return v, s
}

func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHPACKFloodBounded: a peer that announces a 4 GiB table and sends 30
// MB of tiny insertions cannot grow the heap beyond the table cap.
func TestHPACKFloodBounded(t *testing.T) {
	t.Run("default", func(t *testing.T) { testFlood(t, Config{}) })
	t.Run("fields-uncapped", func(t *testing.T) { testFlood(t, Config{MaxFieldsPerBlock: floodBlockLen}) })
}

func testFlood(t *testing.T, cfg Config) {
	before := heapNow()
	v, s := floodConv(t, cfg, 1<<32-1)
	blk := floodBlock(floodBlockLen, 0)
	fields := min(len(blk)/5, v.tr.cfg.MaxFieldsPerBlock)
	for sent := 0; sent < 30<<20; sent += len(blk) {
		v.send(Ingress, s.headerBlock(2, false, 0, blk).take())
		// the work of a block: its fields and the evictions, each O(1)
		if hp := v.tr.conns[v.id].dirs[Ingress].hp; hp != nil {
			require.LessOrEqual(t, hp.ops, 2*fields+1)
			require.LessOrEqual(t, hp.size, v.tr.cfg.MaxHeaderTableSize)
		}
	}
	after := heapNow()
	grown := int64(after) - int64(before)
	t.Logf("heap grown by %d KiB", grown>>10)
	if grown > 16<<20 {
		t.Fatalf("heap grew by %d MiB", grown>>20)
	}
	st := v.stats()
	if cfg.MaxFieldsPerBlock > 0 {
		require.Positive(t, st.HPACKTableCapped)
		require.Zero(t, st.HPACKErrors)
	} else {
		require.Positive(t, st.HeaderBlocksTooManyFields)
	}
	runtime.KeepAlive(v)
}

// BenchmarkHPACKFlood: the cost of one 16 KiB block of tiny insertions into
// a full table, the peer's table raised to 1 MiB or 4 GiB (capped at
// MaxHeaderTableSize), every field decoded (MaxFieldsPerBlock raised) or
// the default.
func BenchmarkHPACKFlood(b *testing.B) {
	all := Config{MaxFieldsPerBlock: floodBlockLen}
	b.Run("table=1MiB", func(b *testing.B) { benchFlood(b, all, 1<<20) })
	b.Run("table=4GiB", func(b *testing.B) { benchFlood(b, all, 1<<32-1) })
	b.Run("table=1MiB/default", func(b *testing.B) { benchFlood(b, Config{}, 1<<20) })
}

func benchFlood(b *testing.B, cfg Config, size uint32) {
	v, s := floodConv(b, cfg, size)
	blk := floodBlock(floodBlockLen, 0)
	for range 400 { // fill the table (at 1 MiB and at any cap)
		v.send(Ingress, s.headerBlock(2, false, 0, blk).take())
	}
	b.SetBytes(int64(len(blk)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		v.send(Ingress, s.headerBlock(2, false, 0, blk).take())
	}
}
