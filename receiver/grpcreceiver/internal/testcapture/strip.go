// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testcapture

import (
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// DefaultPayloadCap is the payload bytes Strip keeps of a frame whose
// payload it copies, like the BPF program's size cap.
const DefaultPayloadCap = 16 << 10

// walker follows the frames of one direction from its first byte.
type walker struct {
	preface int // client preface bytes still to come
	hdr     [h2.FrameHeaderLen]byte
	hdrN    int
	rem     uint32 // payload bytes of the current frame still to come
	keep    uint32 // of which the first keep are copied
	inFrame bool
}

func copiesPayload(typ uint8) bool {
	switch typ {
	case h2.FrameHeaders, h2.FrameContinuation, h2.FramePushPromise,
		h2.FrameSettings, h2.FrameRSTStream, h2.FrameGoAway:
		return true
	}
	return false
}

// walk returns the runs [from, to) of b (relative to b) the kernel copies.
func (w *walker) walk(b []byte, payloadCap uint32, runs [][2]int) [][2]int {
	add := func(from, to int) {
		if n := len(runs); n > 0 && runs[n-1][1] == from {
			runs[n-1][1] = to
			return
		}
		runs = append(runs, [2]int{from, to})
	}
	i := 0
	for i < len(b) {
		switch {
		case w.preface > 0:
			n := min(w.preface, len(b)-i)
			add(i, i+n)
			w.preface -= n
			i += n
		case w.inFrame:
			n := int(min(uint64(w.rem), uint64(len(b)-i)))
			if w.keep > 0 {
				k := int(min(uint32(n), w.keep))
				add(i, i+k)
				w.keep -= uint32(k)
			}
			w.rem -= uint32(n)
			i += n
			if w.rem == 0 {
				w.inFrame = false
			}
		default:
			n := min(h2.FrameHeaderLen-w.hdrN, len(b)-i)
			copy(w.hdr[w.hdrN:], b[i:i+n])
			add(i, i+n)
			w.hdrN += n
			i += n
			if w.hdrN == h2.FrameHeaderLen {
				w.hdrN = 0
				fh := h2.ParseFrameHeader(w.hdr[:])
				w.rem, w.keep, w.inFrame = fh.Length, 0, fh.Length > 0
				if copiesPayload(fh.Type) {
					w.keep = min(fh.Length, payloadCap)
				}
			}
		}
	}
	return runs
}

// Strip emulates the kernel's capture of events: each chunk becomes the
// chunks of the runs the BPF program copies. The frame walk of a direction
// starts at offset 0 (the client preface first on the client's Egress and
// the server's Ingress); a direction whose first chunk is not at offset 0
// is passed through whole. payloadCap 0 is DefaultPayloadCap.
func Strip(events []Event, payloadCap uint32) []Event {
	if payloadCap == 0 {
		payloadCap = DefaultPayloadCap
	}
	type key struct {
		c h2.ConnID
		d h2.Dir
	}
	walkers := map[key]*walker{}
	roles := map[h2.ConnID]h2.Role{}
	var out []Event
	var runs [][2]int
	for _, e := range events {
		if e.Open != nil {
			roles[e.Open.Conn] = e.Open.Role
		}
		ch := e.Chunk
		if ch == nil {
			out = append(out, e)
			continue
		}
		k := key{ch.Conn, ch.Dir}
		w := walkers[k]
		if w == nil {
			if ch.Offset != 0 {
				out = append(out, e)
				continue
			}
			w = &walker{}
			r := roles[ch.Conn]
			if (r == h2.RoleClient && ch.Dir == h2.Egress) || (r == h2.RoleServer && ch.Dir == h2.Ingress) {
				w.preface = len(h2.Preface)
			}
			walkers[k] = w
		}
		runs = w.walk(ch.Data, payloadCap, runs[:0])
		for _, r := range runs {
			c := *ch
			c.Offset = ch.Offset + uint64(r[0])
			c.Data = ch.Data[r[0]:r[1]]
			out = append(out, Event{Chunk: &c})
		}
	}
	return out
}

// Feed hands events to t in order.
func Feed(t *h2.Tracker, events []Event) {
	for _, e := range events {
		switch {
		case e.Open != nil:
			t.ConnOpen(e.Open)
		case e.Chunk != nil:
			t.Chunk(e.Chunk)
		case e.Close != nil:
			t.ConnClose(e.Close)
		}
	}
}
