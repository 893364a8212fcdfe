// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

var le = binary.LittleEndian

// header builds a struct h2_rec.
func header(kind, dir uint8, nseg uint16) []byte {
	b := make([]byte, RecHeaderSize)
	le.PutUint64(b[0:], 7)    // conn
	le.PutUint64(b[8:], 1000) // time
	le.PutUint64(b[16:], 555) // start_ns
	le.PutUint32(b[24:], 42)  // pid
	le.PutUint32(b[28:], 43)  // tid
	b[32], b[33] = kind, dir
	le.PutUint16(b[34:], nseg)
	return b
}

// dataRecord builds an H2_REC_DATA record of the segments: with H2_F_SEQ
// when one of them has SeqKnown (each segment's Seq is written either way).
func dataRecord(dir uint8, segs ...h2.Chunk) []byte {
	b := header(KindData, dir, uint16(len(segs)))
	for _, s := range segs {
		for len(b)%8 != 0 {
			b = append(b, 0xee)
		}
		var g [SegHeaderSize]byte
		le.PutUint64(g[0:], s.Offset)
		le.PutUint32(g[8:], uint32(len(s.Data)))
		le.PutUint32(g[12:], s.Seq)
		b = append(append(b, g[:]...), s.Data...)
		if s.SeqKnown {
			le.PutUint32(b[36:], le.Uint32(b[36:])|flagSeq)
		}
	}
	return b
}

func TestDecodeData(t *testing.T) {
	rec := newRecorder()
	d := NewDecoder(rec)
	b := dataRecord(1, h2.Chunk{Offset: 24, Data: []byte{0, 0, 4, 4, 0, 0, 0, 0, 0}}, h2.Chunk{Offset: 100, Data: []byte("abc")})
	d.Item(&ring.Item{Kind: ring.Record, Data: b})
	got := rec.chunks[7][h2.Ingress]
	require.Len(t, got, 2)
	assert.Equal(t, h2.Chunk{Conn: 7, Dir: h2.Ingress, Offset: 24, Data: []byte{0, 0, 4, 4, 0, 0, 0, 0, 0}, TimeNs: 1000, Proc: h2.Proc{PID: 42, TID: 43, StartNs: 555}}, got[0])
	assert.Equal(t, uint64(100), got[1].Offset)
	assert.Equal(t, "abc", string(got[1].Data))
	assert.Equal(t, DecodeStats{Records: 1, Chunks: 2, Bytes: 12}, d.Stats())
}

// H2_F_HTTP1 and H2_F_CALL_START: an HTTP/1.x record's chunks say so, and
// only its first segment starts a call (the second is the call's tail).
func TestDecodeHTTP1(t *testing.T) {
	rec := newRecorder()
	d := NewDecoder(rec)
	b := dataRecord(0, h2.Chunk{Offset: 0, Data: []byte("GET / HTTP/1.1\r\n")}, h2.Chunk{Offset: 900, Data: []byte("\r\n\r\n")})
	le.PutUint32(b[36:], flagHTTP1|flagCallStart)
	require.NoError(t, d.Record(b))
	got := rec.chunks[7][h2.Egress]
	require.Len(t, got, 2)
	assert.True(t, got[0].HTTP1 && got[0].CallStart)
	assert.True(t, got[1].HTTP1)
	assert.False(t, got[1].CallStart, "the tail does not start a call")
	// A record that continues a call's head: HTTP/1.x, no call start.
	le.PutUint32(b[36:], flagHTTP1)
	require.NoError(t, d.Record(b))
	got = rec.chunks[7][h2.Egress]
	assert.False(t, got[2].CallStart)
	assert.True(t, got[2].HTTP1)
	// Its open record.
	o := openRecord()
	le.PutUint32(o[36:], flagHTTP1)
	require.NoError(t, d.Record(o))
	assert.True(t, rec.opens[7].HTTP1)
	assert.False(t, rec.opens[7].TLS, "a socket's connection")
}

// H2_F_SEQ: each segment's seq is its first byte's TCP sequence number;
// without it (TLS) the field is not one, whatever it holds.
func TestDecodeDataSeq(t *testing.T) {
	rec := newRecorder()
	d := NewDecoder(rec)
	b := dataRecord(0, h2.Chunk{Offset: 0, Data: []byte("PRI *"), Seq: 0xfffffffe, SeqKnown: true}, h2.Chunk{Offset: 40, Data: []byte("xy"), Seq: 38, SeqKnown: true})
	require.Equal(t, uint32(flagSeq), le.Uint32(b[36:]))
	require.NoError(t, d.Record(b))
	got := rec.chunks[7][h2.Egress]
	require.Len(t, got, 2)
	assert.Equal(t, h2.Chunk{Conn: 7, Dir: h2.Egress, Offset: 0, Data: []byte("PRI *"), TimeNs: 1000, Proc: h2.Proc{PID: 42, TID: 43, StartNs: 555}, Seq: 0xfffffffe, SeqKnown: true}, got[0])
	assert.Equal(t, uint32(38), got[1].Seq)
	assert.True(t, got[1].SeqKnown)

	le.PutUint32(b[36:], flagSoftirq) // the same segments, the flag cleared
	require.NoError(t, d.Record(b))
	got = rec.chunks[7][h2.Egress][2:]
	require.Len(t, got, 2)
	for _, c := range got {
		assert.False(t, c.SeqKnown)
		assert.Zero(t, c.Seq)
	}
	assert.Equal(t, "PRI *", string(got[0].Data))
	assert.Equal(t, "xy", string(got[1].Data))
	assert.Equal(t, DecodeStats{Records: 2, Chunks: 4, Bytes: 14}, d.Stats())
}

func TestDecodeOpenClose(t *testing.T) {
	rec := newRecorder()
	d := NewDecoder(rec)
	o := append(header(KindOpen, 0, 0), make([]byte, OpenSize-RecHeaderSize)...)
	le.PutUint64(o[40:], 900) // established
	copy(o[48:], []byte{127, 0, 0, 1})
	copy(o[64:], []byte{127, 0, 0, 2})
	le.PutUint16(o[80:], 5000)
	le.PutUint16(o[82:], 443)
	o[84], o[85] = afInet, uint8(h2.RoleClient)
	le.PutUint32(o[88:], 4026531840) // the socket's network namespace
	d.Item(&ring.Item{Kind: ring.Record, Data: o})
	require.Contains(t, rec.opens, h2.ConnID(7))
	assert.Equal(t, h2.ConnOpen{
		Conn: 7, TimeNs: 900, Proc: h2.Proc{PID: 42, TID: 43, StartNs: 555},
		Local:  h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.1"), Port: 5000},
		Remote: h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.2"), Port: 443},
		Role:   h2.RoleClient,
		NetNS:  4026531840,
	}, rec.opens[7])

	// IPv6, v4-mapped addresses unmapped.
	o6 := append([]byte(nil), o...)
	o6[84] = afInet6
	copy(o6[48:64], netip.MustParseAddr("::ffff:10.0.0.1").AsSlice())
	copy(o6[64:80], netip.MustParseAddr("2001:db8::1").AsSlice())
	require.NoError(t, d.Record(o6))
	assert.Equal(t, "10.0.0.1", rec.opens[7].Local.Addr.String())
	assert.Equal(t, "2001:db8::1", rec.opens[7].Remote.Addr.String())

	// TLS: no socket, the endpoints unknown.
	ot := append([]byte(nil), o...)
	ot[84] = 0
	le.PutUint32(ot[88:], 0)
	require.NoError(t, d.Record(ot))
	assert.Zero(t, rec.opens[7].NetNS)
	assert.False(t, rec.opens[7].Local.Addr.IsValid())
	assert.False(t, rec.opens[7].Remote.Addr.IsValid())
	assert.False(t, rec.opens[7].ISN.Known, "no H2_F_ISN")
	assert.True(t, rec.opens[7].TLS, "no socket: a TLS session")

	// TLS with its TCP socket found: the socket's numbers.
	le.PutUint32(ot[36:], flagISN)
	le.PutUint32(ot[92:], 0x6cdc97b)
	le.PutUint32(ot[96:], 0x6b2ee9b2)
	require.NoError(t, d.Record(ot))
	assert.Equal(t, h2.SockISN{Snd: 0x6cdc97b, Rcv: 0x6b2ee9b2, Known: true}, rec.opens[7].ISN)
	assert.True(t, rec.opens[7].TLS)

	c := append(header(KindClose, 0, 0), make([]byte, 16)...)
	le.PutUint64(c[40:], 123)
	le.PutUint64(c[48:], 456)
	require.NoError(t, d.Record(c))
	assert.Equal(t, h2.ConnClose{Conn: 7, TimeNs: 1000, Total: [2]uint64{123, 456}}, rec.closes[7])
}

func TestDecodeGapIsLost(t *testing.T) {
	rec := newRecorder()
	d := NewDecoder(rec)
	d.Item(&ring.Item{Kind: ring.Gap, Lost: 5, Reason: ring.Lapped})
	assert.Equal(t, uint64(5), rec.lost)
	assert.Equal(t, uint64(5), d.Stats().Lost)
}

func TestDecodeMalformed(t *testing.T) {
	good := dataRecord(0, h2.Chunk{Offset: 0, Data: []byte("0123456789")})
	for name, b := range map[string][]byte{
		"short":         good[:10],
		"unknown kind":  append(header(9, 0, 0), 0),
		"bad dir":       dataRecord(2),
		"segment past":  dataRecord(0, h2.Chunk{})[:RecHeaderSize+4],
		"data past end": good[:len(good)-1],
		"short open":    header(KindOpen, 0, 0),
		"open without isn": func() []byte {
			o := append(header(KindOpen, 0, 0), make([]byte, OpenSize-RecHeaderSize-8)...) // the 96-byte open before the TLS socket numbers
			o[84] = afInet
			return o
		}(),
		"short close": header(KindClose, 0, 0),
		"bad family": func() []byte {
			o := append(header(KindOpen, 0, 0), make([]byte, OpenSize-RecHeaderSize)...)
			o[84] = 7
			return o
		}(),
		"bad role": func() []byte {
			o := append(header(KindOpen, 0, 0), make([]byte, OpenSize-RecHeaderSize)...)
			o[84], o[85] = afInet, 9
			return o
		}(),
		"more segs claimed": func() []byte { b := append([]byte(nil), good...); le.PutUint16(b[34:], 2); return b }(),
	} {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(newRecorder())
			d.Item(&ring.Item{Kind: ring.Record, Data: b})
			assert.Equal(t, uint64(1), d.Stats().Malformed)
		})
	}
}

// openRecord builds a struct h2_open: IPv4 127.0.0.1:5000 -> 127.0.0.2:443,
// a client, in network namespace 4026531840.
func openRecord() []byte {
	o := append(header(KindOpen, 0, 0), make([]byte, OpenSize-RecHeaderSize)...)
	le.PutUint64(o[40:], 900)
	copy(o[48:], []byte{127, 0, 0, 1})
	copy(o[64:], []byte{127, 0, 0, 2})
	le.PutUint16(o[80:], 5000)
	le.PutUint16(o[82:], 443)
	o[84], o[85] = afInet, uint8(h2.RoleClient)
	le.PutUint32(o[88:], 4026531840)
	return o
}

// countingSink sums what it is handed, allocating nothing.
type countingSink struct {
	opens, chunks, closes int
	seqKnown              int // chunks with SeqKnown
	bytes                 uint64
}

func (s *countingSink) ConnOpen(*h2.ConnOpen) { s.opens++ }
func (s *countingSink) Chunk(c *h2.Chunk) {
	s.chunks++
	s.bytes += uint64(len(c.Data))
	if c.SeqKnown {
		s.seqKnown++
	}
}
func (s *countingSink) ConnClose(*h2.ConnClose) { s.closes++ }
func (s *countingSink) Lost(*h2.Lost)           {}

// maxDecodeAllocs bounds the allocations of one Record call, whatever its
// input: none for a good record, an error's for a malformed one.
const maxDecodeAllocs = 8

// The record decoder on any bytes (a BPF program's record is only as
// trustworthy as the kernel's copy of it): no panic, no more bytes handed to
// the sink than the record holds, at most one open or close, and a bounded
// number of allocations, not growing with the record or its segment count.
// H2_F_SEQ (and the segments' seq) decides SeqKnown and nothing else: the
// record with the flag flipped hands out the same chunks and bytes.
// Seeds: testdata/fuzz/FuzzDecodeRecord (the fixtures' records).
func FuzzDecodeRecord(f *testing.F) {
	f.Add(dataRecord(0, h2.Chunk{Offset: 3, Data: []byte("xyz")}))
	f.Add(dataRecord(1, h2.Chunk{Offset: 3, Data: []byte("xyz"), Seq: 1 << 31, SeqKnown: true}, h2.Chunk{Offset: 9, Data: []byte("a"), Seq: 7, SeqKnown: true}))
	f.Add(header(KindClose, 0, 0))
	f.Add(openRecord())
	f.Fuzz(func(t *testing.T, b []byte) {
		sink := &countingSink{}
		d := NewDecoder(sink)
		err := d.Record(b)
		st := d.Stats()
		if sink.bytes > uint64(len(b)) {
			t.Fatalf("%d bytes handed out from a %d-byte record", sink.bytes, len(b))
		}
		if st.Bytes != sink.bytes || st.Chunks != uint64(sink.chunks) {
			t.Fatalf("stats %+v, sink %+v", st, sink)
		}
		if sink.opens+sink.closes > 1 || (sink.opens+sink.closes == 1 && (err != nil || sink.chunks > 0)) {
			t.Fatalf("sink %+v, err %v", sink, err)
		}
		if len(b) >= RecHeaderSize && sink.chunks > int(le.Uint16(b[34:])) {
			t.Fatalf("%d chunks from %d segments", sink.chunks, le.Uint16(b[34:]))
		}
		if len(b) >= RecHeaderSize {
			if le.Uint32(b[36:])&flagSeq != 0 {
				if sink.seqKnown != sink.chunks {
					t.Fatalf("%d of %d chunks with SeqKnown, H2_F_SEQ set", sink.seqKnown, sink.chunks)
				}
			} else if sink.seqKnown != 0 {
				t.Fatalf("%d chunks with SeqKnown, H2_F_SEQ clear", sink.seqKnown)
			}
			flipped := append([]byte(nil), b...)
			le.PutUint32(flipped[36:], le.Uint32(flipped[36:])^flagSeq)
			fs := &countingSink{}
			ferr := NewDecoder(fs).Record(flipped)
			if fs.chunks != sink.chunks || fs.bytes != sink.bytes || (ferr == nil) != (err == nil) {
				t.Fatalf("H2_F_SEQ flipped: sink %+v err %v, was %+v err %v", fs, ferr, sink, err)
			}
		}
		if allocs := testing.AllocsPerRun(1, func() { _ = d.Record(b) }); allocs > maxDecodeAllocs {
			t.Fatalf("%v allocations decoding %d bytes (err %v)", allocs, len(b), err)
		}
	})
}
