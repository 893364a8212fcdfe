// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Caps of the capture's first bytes of a call (bpf/h2): a call that starts
// with what looks like a start line, and any other.
const (
	startCap = 16 << 10
	otherCap = 1 << 10
	tailCap  = 64
)

// looksLikeStart is the capture's test of a call's first bytes: a status
// line, or an upper-case token and a space.
func looksLikeStart(b []byte) bool {
	if bytes.HasPrefix(b, []byte("HTTP/1.")) {
		return true
	}
	i := 0
	for i < len(b) && i < 16 && b[i] >= 'A' && b[i] <= 'Z' {
		i++
	}
	return i > 0 && i < len(b) && b[i] == ' '
}

// capture imitates the kernel side for one connection: of each system
// call it hands the tracker the first bytes (up to a cap) and the last
// ones, the rest a hole.
type capture struct {
	t     testing.TB
	tr    *Tracker
	id    h2.ConnID
	off   [2]uint64
	seq   [2]uint32
	now   *uint64
	proc  h2.Proc
	whole bool // copy every byte (no holes)
}

func newCapture(t testing.TB, tr *Tracker, id h2.ConnID, now *uint64, role h2.Role) *capture {
	c := &capture{t: t, tr: tr, id: id, now: now, seq: [2]uint32{1000 * uint32(id), 5000 * uint32(id)}, proc: h2.Proc{PID: 7, TID: 7}}
	*now += 100
	tr.ConnOpen(&h2.ConnOpen{Conn: id, TimeNs: *now, Role: role, Proc: c.proc, HTTP1: true})
	return c
}

// call is one system call of direction d carrying b.
func (c *capture) call(d h2.Dir, b []byte) {
	*c.now += 1000
	limit := otherCap
	if looksLikeStart(b) {
		limit = startCap
	}
	if c.whole {
		limit = len(b)
	}
	head := b[:min(len(b), limit)]
	c.chunk(d, 0, head, true)
	if len(b) > len(head) {
		from := max(len(head), len(b)-tailCap)
		c.chunk(d, from, b[from:], false)
	}
	c.off[d] += uint64(len(b))
}

func (c *capture) chunk(d h2.Dir, at int, b []byte, start bool) {
	off := c.off[d] + uint64(at)
	data := append([]byte(nil), b...)
	c.tr.Chunk(&h2.Chunk{
		Conn: c.id, Dir: d, Offset: off, Data: data, TimeNs: *c.now, Proc: c.proc,
		Seq: c.seq[d] + uint32(off), SeqKnown: true, HTTP1: true, CallStart: start,
	})
	for i := range data { // Data is valid during the call only
		data[i] = 0xee
	}
}

// calls splits b into system calls of at most n bytes.
func (c *capture) calls(d h2.Dir, b []byte, n int) {
	for len(b) > 0 {
		k := min(n, len(b))
		c.call(d, b[:k])
		b = b[k:]
	}
}

func (c *capture) close() {
	*c.now += 1000
	c.tr.ConnClose(&h2.ConnClose{Conn: c.id, TimeNs: *c.now})
}

// recorder collects the calls a Tracker emits (copies).
type recorder struct{ calls []h2.Call }

func (r *recorder) emit(c *h2.Call) { r.calls = append(r.calls, *c) }
