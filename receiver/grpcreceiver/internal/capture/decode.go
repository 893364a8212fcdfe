// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// The record layout of bpf/h2/h2.h, byte for byte (little-endian, as the BPF
// programs store it on the machines they run on).
const (
	RecHeaderSize = 40  // sizeof(struct h2_rec)
	OpenSize      = 104 // sizeof(struct h2_open)
	CloseSize     = 56  // sizeof(struct h2_close)
	SegHeaderSize = 16  // sizeof(struct h2_seg)

	KindOpen  = 1 // H2_REC_OPEN
	KindData  = 2 // H2_REC_DATA
	KindClose = 3 // H2_REC_CLOSE

	flagSoftirq = 1 // H2_F_SOFTIRQ
	flagSeq     = 2 // H2_F_SEQ: a DATA record's segments carry TCP sequence numbers
	flagISN     = 4 // H2_F_ISN: a TLS session's open record carries its TCP socket's numbers
	flagHTTP1   = 8 // H2_F_HTTP1: the connection speaks HTTP/1.x
	// flagCallStart (H2_F_CALL_START): an HTTP/1.x data record's first
	// segment starts at its system call's first byte.
	flagCallStart = 16

	afInet  = 2
	afInet6 = 10
)

// Sink takes the decoded records, in ticket order: *h2.Tracker is one (the
// receiver's sink hands HTTP/1.x connections, ConnOpen.HTTP1 and
// Chunk.HTTP1, to the HTTP/1 tracker).
// The values passed are valid only during the call.
type Sink interface {
	ConnOpen(*h2.ConnOpen)
	Chunk(*h2.Chunk)
	ConnClose(*h2.ConnClose)
	Lost(*h2.Lost)
}

// DecodeStats count what the decoder saw.
type DecodeStats struct {
	Records   uint64 // records decoded
	Opens     uint64
	Chunks    uint64 // segments handed out as h2.Chunk
	Closes    uint64
	Bytes     uint64 // captured bytes handed out
	Malformed uint64 // records that did not parse (counted, skipped; the tracker sees a gap on that connection)
	Lost      uint64 // ring tickets lost (reported to the sink as h2.Lost)
}

// Decoder turns ring items into Sink calls. One goroutine.
type Decoder struct {
	sink  Sink
	stats DecodeStats
	// reused for every call
	open  h2.ConnOpen
	chunk h2.Chunk
	close h2.ConnClose
	lost  h2.Lost
}

// NewDecoder returns a decoder that feeds sink.
func NewDecoder(sink Sink) *Decoder { return &Decoder{sink: sink} }

// Stats returns the running totals.
func (d *Decoder) Stats() DecodeStats { return d.stats }

// Item decodes one ring item: a record, or a gap reported as h2.Lost.
func (d *Decoder) Item(it *ring.Item) {
	if it.Kind == ring.Gap {
		d.stats.Lost += it.Lost
		d.lost = h2.Lost{Count: it.Lost}
		d.sink.Lost(&d.lost)
		return
	}
	if err := d.Record(it.Data); err != nil {
		d.stats.Malformed++
	}
}

type recHeader struct {
	conn    h2.ConnID
	timeNs  uint64
	proc    h2.Proc
	kind    uint8
	dir     uint8
	nseg    uint16
	softirq bool
	seq     bool // the segments' seq fields are TCP sequence numbers
	isn     bool // an open record's isn_snd, isn_rcv are set
	http1   bool // the connection speaks HTTP/1.x
	start   bool // an HTTP/1.x data record's first segment starts a system call
}

func parseHeader(b []byte) recHeader {
	le := binary.LittleEndian
	return recHeader{
		conn:    h2.ConnID(le.Uint64(b[0:])),
		timeNs:  le.Uint64(b[8:]),
		proc:    h2.Proc{StartNs: le.Uint64(b[16:]), PID: le.Uint32(b[24:]), TID: le.Uint32(b[28:])},
		kind:    b[32],
		dir:     b[33],
		nseg:    le.Uint16(b[34:]),
		softirq: le.Uint32(b[36:])&flagSoftirq != 0,
		seq:     le.Uint32(b[36:])&flagSeq != 0,
		isn:     le.Uint32(b[36:])&flagISN != 0,
		http1:   le.Uint32(b[36:])&flagHTTP1 != 0,
		start:   le.Uint32(b[36:])&flagCallStart != 0,
	}
}

// Record decodes one record (struct h2_rec and what follows) into Sink
// calls. A malformed record is an error; the segments before the fault have
// been handed out.
func (d *Decoder) Record(b []byte) error {
	if len(b) < RecHeaderSize {
		return fmt.Errorf("capture record of %d bytes, shorter than its %d-byte header", len(b), RecHeaderSize)
	}
	h := parseHeader(b)
	le := binary.LittleEndian
	switch h.kind {
	case KindOpen:
		if len(b) < OpenSize {
			return fmt.Errorf("open record of %d bytes, need %d", len(b), OpenSize)
		}
		family, role := b[84], b[85]
		if role > uint8(h2.RoleServer) {
			return fmt.Errorf("open record with unknown role %d", role)
		}
		local, remote, err := endpoints(family, b[48:64], b[64:80], le.Uint16(b[80:]), le.Uint16(b[82:]))
		if err != nil {
			return err
		}
		d.open = h2.ConnOpen{
			Conn: h.conn, TimeNs: h.timeNs, Proc: h.proc, Local: local, Remote: remote, Role: h2.Role(role),
			NetNS: le.Uint32(b[88:]), HTTP1: h.http1, TLS: h.isn || family == 0,
		}
		if h.isn {
			d.open.ISN = h2.SockISN{Snd: le.Uint32(b[92:]), Rcv: le.Uint32(b[96:]), Known: true}
		}
		if est := le.Uint64(b[40:]); est != 0 {
			d.open.TimeNs = est
		}
		d.stats.Records++
		d.stats.Opens++
		d.sink.ConnOpen(&d.open)
	case KindClose:
		if len(b) < CloseSize {
			return fmt.Errorf("close record of %d bytes, need %d", len(b), CloseSize)
		}
		d.close = h2.ConnClose{Conn: h.conn, TimeNs: h.timeNs, Total: [2]uint64{le.Uint64(b[40:]), le.Uint64(b[48:])}}
		d.stats.Records++
		d.stats.Closes++
		d.sink.ConnClose(&d.close)
	case KindData:
		if h.dir > uint8(h2.Ingress) {
			return fmt.Errorf("data record with unknown direction %d", h.dir)
		}
		d.stats.Records++
		off := RecHeaderSize
		for i := 0; i < int(h.nseg); i++ {
			off = (off + 7) &^ 7
			if off+SegHeaderSize > len(b) {
				return fmt.Errorf("data record: segment %d of %d starts at %d, past its %d bytes", i, h.nseg, off, len(b))
			}
			so := le.Uint64(b[off:])
			n := int(le.Uint32(b[off+8:]))
			off += SegHeaderSize
			if n > len(b)-off {
				return fmt.Errorf("data record: segment %d of %d has %d bytes, %d left", i, h.nseg, n, len(b)-off)
			}
			d.chunk = h2.Chunk{
				Conn: h.conn, Dir: h2.Dir(h.dir), Offset: so, Data: b[off : off+n], TimeNs: h.timeNs, Proc: h.proc,
				HTTP1: h.http1, CallStart: h.start && i == 0,
			}
			if h.seq {
				d.chunk.Seq, d.chunk.SeqKnown = le.Uint32(b[off-4:]), true
			}
			d.stats.Chunks++
			d.stats.Bytes += uint64(n)
			d.sink.Chunk(&d.chunk)
			off += n
		}
	default:
		return fmt.Errorf("capture record of unknown kind %d", h.kind)
	}
	return nil
}

func endpoints(family uint8, laddr, raddr []byte, lport, rport uint16) (l, r h2.Endpoint, err error) {
	switch family {
	case 0: // TLS: the endpoints are not known
		return l, r, nil
	case afInet:
		l.Addr = netip.AddrFrom4([4]byte(laddr[:4]))
		r.Addr = netip.AddrFrom4([4]byte(raddr[:4]))
	case afInet6:
		l.Addr = netip.AddrFrom16([16]byte(laddr)).Unmap()
		r.Addr = netip.AddrFrom16([16]byte(raddr)).Unmap()
	default:
		return l, r, fmt.Errorf("open record with address family %d, not AF_INET, AF_INET6 or 0 (TLS)", family)
	}
	l.Port, r.Port = lport, rport
	return l, r, nil
}
