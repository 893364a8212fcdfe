// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// fuzzConfig bounds FuzzTracker's tracker.
var fuzzConfig = Config{MaxConns: 4, MaxProbationConns: 3, MaxPipelined: 4, MaxHeaderBytes: 512, MaxFieldBytes: 32, MemoryBudget: 8 << 10}

// FuzzTracker runs random sequences of ConnOpen, Chunk (any bytes, any
// offsets, holes, call starts or not), ConnClose and Expire (see
// trackerOps) on a tracker of small bounds: after every call the
// accounted memory is within the budget and equals what the connections
// hold, the bounds hold, every call emitted is well-formed and no byte is
// parsed twice.
func FuzzTracker(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	} {
		for _, op := range []byte{0x05, 0x21, 0x25} { // a chunk of connection 2, of either direction
			b := []byte{0x04, op, 0x01 | 0x04}
			b = binary.LittleEndian.AppendUint16(b, uint16(len(seed)))
			f.Add(append(b, seed...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var emitted uint64
		tr := NewTracker(fuzzConfig, func(c *h2.Call) {
			emitted++
			checkEmitted(t, c)
		}, nil)
		fed := trackerOps(tr, data, func() { checkTracker(t, tr, emitted) })
		for id := range tr.conns {
			tr.ConnClose(&h2.ConnClose{Conn: id})
		}
		checkTracker(t, tr, emitted)
		if st := tr.Stats(); tr.MemoryUsed() != 0 || st.BytesParsed > fed {
			t.Fatalf("%d bytes accounted with no connection; %d parsed of %d", tr.MemoryUsed(), st.BytesParsed, fed)
		}
	})
}

// checkEmitted checks a call's bounds.
func checkEmitted(t *testing.T, c *h2.Call) {
	t.Helper()
	if c.EndNs < c.StartNs || c.Protocol != h2.ProtoHTTP1 || (c.Version != "1.0" && c.Version != "1.1") ||
		c.Method == "" || len(c.Method) > maxMethodLen || c.Path == "" {
		t.Fatalf("call %+v", c)
	}
	for _, s := range []string{c.Path, c.Authority, c.UserAgent, c.ContentType} {
		if len(s) > fuzzConfig.MaxFieldBytes {
			t.Fatalf("a field of %d bytes: %+v", len(s), c)
		}
	}
}

// trackerOps decodes data into calls on tr, calling check after each, and
// returns the bytes fed. A byte k: connection 1+(k>>2)&7, and by k&3:
// ConnOpen (role (k>>5)%3), Chunk (then a byte: direction bit 0, a call's
// start bit 2, a hole of bits 3-7 times 37 when bit 1; then a 2-byte
// length, then the bytes), ConnClose, Expire (k>>5 minutes later).
func trackerOps(tr *Tracker, data []byte, check func()) uint64 {
	offs := map[h2.ConnID]*[2]uint64{}
	var now, fed uint64
	for len(data) > 0 {
		k := data[0]
		data = data[1:]
		id := h2.ConnID(1 + (k>>2)&7)
		now += uint64(time.Millisecond)
		if offs[id] == nil {
			offs[id] = &[2]uint64{}
		}
		switch k & 3 {
		case 0:
			*offs[id] = [2]uint64{}
			tr.ConnOpen(&h2.ConnOpen{Conn: id, TimeNs: now, Role: h2.Role((k >> 5) % 3), HTTP1: true})
		case 1:
			if len(data) < 3 {
				return fed
			}
			fl, n := data[0], min(int(binary.LittleEndian.Uint16(data[1:])), len(data)-3)
			d := h2.Dir(fl & 1)
			if fl&2 != 0 {
				offs[id][d] += uint64(fl>>3) * 37
			}
			tr.Chunk(&h2.Chunk{Conn: id, Dir: d, Offset: offs[id][d], Data: data[3 : 3+n], TimeNs: now, HTTP1: true, CallStart: fl&4 != 0})
			offs[id][d] += uint64(n)
			fed += uint64(n)
			data = data[3+n:]
		case 2:
			*offs[id] = [2]uint64{}
			tr.ConnClose(&h2.ConnClose{Conn: id, TimeNs: now})
		case 3:
			now += uint64(k>>5) * uint64(time.Minute)
			tr.Expire(now)
		}
		check()
	}
	return fed
}

// checkTracker checks the bounds and the account after a call: the
// accounted memory is within the budget and equals a recount of what the
// connections hold.
func checkTracker(t testing.TB, tr *Tracker, emitted uint64) {
	t.Helper()
	st := tr.Stats()
	est := tr.est.Len() + tr.heavy.Len()
	if tr.MemoryUsed() > tr.cfg.MemoryBudget || est > tr.cfg.MaxConns || tr.prob.Len() > tr.cfg.MaxProbationConns ||
		est+tr.prob.Len() != len(tr.conns) {
		t.Fatalf("%d bytes (budget %d), %d connections (%d, %d on probation)", tr.MemoryUsed(), tr.cfg.MemoryBudget, len(tr.conns), est, tr.prob.Len())
	}
	sum := 0
	for _, c := range tr.conns {
		want := connMem + cap(c.queue)*ptrMem
		for i := range c.dirs {
			d := &c.dirs[i]
			want += cap(d.line)
			if d.pend != nil {
				want += exchMem + strMem(&d.pend.call)
			}
			if len(d.line) > max(tr.cfg.MaxHeaderBytes, maxChunkLine) {
				t.Fatalf("connection %d: a line of %d bytes held", c.id, len(d.line))
			}
		}
		for _, e := range c.queue {
			want += exchMem + strMem(&e.call)
			if e.mem != exchMem+strMem(&e.call) {
				t.Fatalf("connection %d: a request charged %d, holds %d", c.id, e.mem, exchMem+strMem(&e.call))
			}
		}
		if c.mem != want || c.removed || len(c.queue) > tr.cfg.MaxPipelined || c.elem == nil || c.elem.Value.(*conn) != c ||
			c.heavy != (c.promoted && c.mem > tr.fair) {
			t.Fatalf("connection %d: accounted %d, holds %d; %d queued", c.id, c.mem, want, len(c.queue))
		}
		sum += c.mem
	}
	if sum != tr.MemoryUsed() || st.MemoryUsed != uint64(sum) || st.ConnsLive != uint64(len(tr.conns)) || st.CallsEmitted != emitted {
		t.Fatalf("account %d, connections hold %d; stats %+v; %d emitted", tr.MemoryUsed(), sum, st, emitted)
	}
}
