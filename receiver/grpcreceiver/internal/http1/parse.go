// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"bytes"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// pstate is where a direction's parser is.
type pstate uint8

const (
	// psUnsynced: waiting for a call start with a plausible start line.
	psUnsynced pstate = iota
	// psHead: in a message head (start line, fields); line holds the
	// partial line.
	psHead
	// psBody: in a body of known length (remaining bytes).
	psBody
	// psChunkSize: in a chunk-size line.
	psChunkSize
	// psChunkData: in chunk data (remaining bytes), then its CRLF.
	psChunkData
	// psChunkEnd: the CRLF after chunk data.
	psChunkEnd
	// psTrailers: the trailer fields of a chunked body.
	psTrailers
	// psClose: a close-delimited response body.
	psClose
	// psChunkSeek: a chunked body whose framing fell in a hole: its end
	// (the last chunk, lastChunk) is searched for in the bytes that
	// follow.
	psChunkSeek
)

// head is what a message head says that matters here (the strings of a
// request go to its exchange, pend).
type head struct {
	started  bool // its first byte was seen
	startNs  uint64
	proc     h2.Proc
	off      uint64
	seq      uint32
	seqKnown bool
	lines    int // lines complete so far
	status   int
	// framing: contentLength (-1: none; clConflict: two that differ),
	// te (a Transfer-Encoding was seen) and chunked (its final coding is
	// chunked).
	contentLength int64
	clConflict    bool
	te, chunked   bool
}

// direction parses one direction of a connection.
type direction struct {
	known     bool   // pos is known
	pos       uint64 // the stream offset of the next byte
	st        pstate
	isReq     bool   // it carries requests (when synced)
	line      []byte // a line begun in an earlier chunk
	headBytes int    // bytes of the head (or trailers) so far
	remaining uint64 // of the body or chunk
	h         head
	pend      *exchange // the request whose head is being parsed
	// msg is the exchange whose body (request) or response is being
	// parsed (nil: none, or the response is skipped: skipping).
	msg      *exchange
	skipping bool
	lastNs   uint64 // the time of its latest chunk
	// seekTail: the last bytes seen in psChunkSeek (seekN of them), a
	// prefix of lastChunk that the next bytes may complete.
	seekTail [len(lastChunkS) - 1]byte
	seekN    int
}

// startAt makes d expect a message head at offset off.
func (d *direction) startAt(off uint64) {
	d.known, d.pos, d.st = true, off, psHead
	d.h = head{contentLength: -1}
	d.headBytes = 0
}

// feed parses a chunk of c.
func (t *Tracker) feed(c *conn, ch *h2.Chunk) {
	d := &c.dirs[ch.Dir]
	d.lastNs = max(d.lastNs, ch.TimeNs)
	data, off := ch.Data, ch.Offset
	if d.known && d.st != psUnsynced {
		end := off + uint64(len(data))
		if end <= d.pos {
			t.stats.ChunksStale++
			return
		}
		if off < d.pos {
			data, off = data[d.pos-off:], d.pos
		}
		if off > d.pos {
			t.hole(c, d, off-d.pos)
		}
		if d.st == psChunkSeek && ch.CallStart && off == ch.Offset && t.plausible(c, ch) {
			t.lose(c, d, LostHole) // the body ended in a hole
		}
	}
	if d.st == psUnsynced {
		if !t.resync(c, d, ch, off) {
			t.stats.ChunksUnsynced++
			return
		}
	}
	t.parse(c, d, ch, data)
}

// resync starts parsing d at ch when it begins a call with a plausible
// start line of d's kind (either kind when the connection's request
// direction is not known yet).
func (t *Tracker) resync(c *conn, d *direction, ch *h2.Chunk, off uint64) bool {
	if !ch.CallStart || off != ch.Offset || !t.plausible(c, ch) {
		return false
	}
	d.startAt(off)
	d.isReq = c.reqDir == int8(ch.Dir)
	t.stats.Resyncs++
	return true
}

// plausible says whether ch begins with a start line of its direction's
// kind (either kind, learning the connection's request direction, when
// it is not known yet).
func (t *Tracker) plausible(c *conn, ch *h2.Chunk) bool {
	dir := int8(ch.Dir)
	switch {
	case c.reqDir < 0 && plausibleRequest(ch.Data):
		c.reqDir = dir
	case c.reqDir < 0 && plausibleResponse(ch.Data):
		c.reqDir = 1 - dir
	case c.reqDir == dir:
		return plausibleRequest(ch.Data)
	case c.reqDir == 1-dir:
		return plausibleResponse(ch.Data)
	default:
		return false
	}
	return true
}

// hole handles n bytes missing before the next chunk of d: skipped inside
// a body of known length or in a close-delimited one; in a chunked body's
// framing the body's end is searched for after it (psChunkSeek); anywhere
// else the sync is lost.
func (t *Tracker) hole(c *conn, d *direction, n uint64) {
	switch d.st {
	case psBody, psChunkData:
		if n <= d.remaining {
			t.stats.BytesHoles += n
			d.pos += n
			d.remaining -= n
			if d.remaining == 0 {
				t.bodyPart(c, d, d.lastNs)
			}
			return
		}
		if d.st == psBody {
			break
		}
		fallthrough
	case psChunkSize, psChunkEnd, psTrailers, psChunkSeek:
		if d.st != psChunkSeek {
			t.stats.ChunkedSeeks++
		}
		t.stats.BytesHoles += n
		d.st, d.pos, d.seekN, d.line = psChunkSeek, d.pos+n, 0, d.line[:0]
		return
	case psClose:
		t.stats.BytesHoles += n
		d.pos += n
		t.addData(d, n)
		return
	}
	t.lose(c, d, LostHole)
}

// lastChunk ends a chunked body: the last chunk and an empty trailer
// section, after the previous chunk's CRLF.
const lastChunkS = "\r\n0\r\n\r\n"

var lastChunk = []byte(lastChunkS)

// seek consumes data in psChunkSeek up to the end of the chunked body
// when it is there (with the bytes kept from before), and returns the
// bytes after it.
func (t *Tracker) seek(c *conn, d *direction, ch *h2.Chunk, data []byte) []byte {
	end := -1
	if d.seekN > 0 { // an end begun before data
		var w [2 * len(lastChunkS)]byte
		k := copy(w[:], d.seekTail[:d.seekN])
		k += copy(w[k:], data[:min(len(data), len(lastChunk)-1)])
		if i := bytes.Index(w[:k], lastChunk); i >= 0 {
			end = i + len(lastChunk) - d.seekN
		}
	}
	if end < 0 {
		if i := bytes.Index(data, lastChunk); i >= 0 {
			end = i + len(lastChunk)
		}
	}
	if end < 0 {
		t.stats.BytesParsed += uint64(len(data))
		d.pos += uint64(len(data))
		if len(data) >= len(d.seekTail) {
			d.seekN = copy(d.seekTail[:], data[len(data)-len(d.seekTail):])
		} else { // keep the last bytes of both
			var w [2 * len(lastChunkS)]byte
			k := copy(w[:], d.seekTail[:d.seekN])
			k += copy(w[k:], data)
			d.seekN = copy(d.seekTail[:], w[max(0, k-len(d.seekTail)):k])
		}
		return nil
	}
	t.stats.BytesParsed += uint64(end)
	t.stats.ChunkedEndsFound++
	d.pos += uint64(end)
	t.bodyDone(c, d, ch.TimeNs)
	return data[end:]
}

// parse consumes data, the bytes of ch from d.pos on.
func (t *Tracker) parse(c *conn, d *direction, ch *h2.Chunk, data []byte) {
	for len(data) > 0 && d.st != psUnsynced && !c.tunnel {
		switch d.st {
		case psHead, psChunkSize, psChunkEnd, psTrailers:
			if d.st == psHead && !d.h.started {
				if data[0] == '\r' || data[0] == '\n' { // empty lines before a message
					if d.headBytes++; d.headBytes > t.cfg.MaxHeaderBytes {
						t.lose(c, d, LostHeadTooLarge)
						break
					}
					d.pos++
					data = data[1:]
					continue
				}
				t.headStart(d, ch)
			}
			data = t.lineBytes(c, d, ch, data)
		case psBody, psChunkData:
			n := min(d.remaining, uint64(len(data)))
			t.stats.BytesParsed += n
			d.remaining -= n
			d.pos += n
			data = data[n:]
			if d.remaining == 0 {
				t.bodyPart(c, d, ch.TimeNs)
			}
		case psChunkSeek:
			data = t.seek(c, d, ch, data)
		case psClose:
			n := uint64(len(data))
			t.stats.BytesParsed += n
			d.pos += n
			t.addData(d, n)
			data = nil
		}
	}
	if len(data) > 0 && c.tunnel {
		t.stats.BytesTunnelled += uint64(len(data))
	}
}

// headStart records the first byte of a head, at d.pos in ch.
func (t *Tracker) headStart(d *direction, ch *h2.Chunk) {
	h := &d.h
	h.started, h.startNs, h.proc, h.off = true, ch.TimeNs, ch.Proc, d.pos
	if ch.SeqKnown {
		h.seq, h.seqKnown = ch.Seq+uint32(d.pos-ch.Offset), true
	}
	if d.isReq {
		d.pend = &exchange{}
	}
}

// lineBytes takes data's bytes up to the end of a line (all of them when
// none ends in data) and handles the line when complete. It returns the
// bytes after it.
func (t *Tracker) lineBytes(c *conn, d *direction, ch *h2.Chunk, data []byte) []byte {
	i := bytes.IndexByte(data, '\n')
	n := len(data)
	if i >= 0 {
		n = i + 1
	}
	if d.st == psHead || d.st == psTrailers {
		if d.headBytes += n; d.headBytes > t.cfg.MaxHeaderBytes {
			t.lose(c, d, LostHeadTooLarge)
			return nil
		}
	} else if len(d.line)+n > maxChunkLine {
		t.lose(c, d, LostBadChunk)
		return nil
	}
	t.stats.BytesParsed += uint64(n)
	d.pos += uint64(n)
	if i < 0 {
		d.line = append(d.line, data...)
		return nil
	}
	line := data[:i]
	if len(d.line) > 0 {
		d.line = append(d.line, line...)
		line = d.line
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	t.onLine(c, d, ch, line)
	if cap(d.line) > 256 {
		d.line = nil // a long line's buffer is not kept
	} else {
		d.line = d.line[:0]
	}
	return data[n:]
}

// onLine handles a complete line (without its end) in d's state.
func (t *Tracker) onLine(c *conn, d *direction, ch *h2.Chunk, line []byte) {
	switch d.st {
	case psHead:
		h := &d.h
		h.lines++
		switch {
		case h.lines == 1 && d.isReq:
			t.requestLine(c, d, line)
		case h.lines == 1:
			t.statusLine(c, d, line)
		case len(line) == 0:
			t.headDone(c, d, ch)
		default:
			t.field(c, d, line)
		}
	case psChunkSize:
		size, ok := parseChunkSize(line)
		if !ok {
			t.lose(c, d, LostBadChunk)
			return
		}
		t.addData(d, size)
		if size == 0 {
			d.st, d.headBytes = psTrailers, 0
			return
		}
		d.st, d.remaining = psChunkData, size
	case psChunkEnd:
		if len(line) != 0 {
			t.lose(c, d, LostBadChunk)
			return
		}
		d.st = psChunkSize
	case psTrailers:
		if len(line) == 0 {
			t.bodyDone(c, d, ch.TimeNs)
		}
	}
}

// bodyPart handles the end of a body of known length or of chunk data.
func (t *Tracker) bodyPart(c *conn, d *direction, nowNs uint64) {
	if d.st == psChunkData {
		d.st = psChunkEnd
		return
	}
	t.bodyDone(c, d, nowNs)
}

// addData counts n body bytes of d's message.
func (t *Tracker) addData(d *direction, n uint64) {
	if d.msg == nil {
		return
	}
	if d.isReq {
		d.msg.call.ReqDataBytes += n
	} else {
		d.msg.call.RespDataBytes += n
	}
}

// bodyDone ends d's message (its last byte in a chunk of time nowNs).
func (t *Tracker) bodyDone(c *conn, d *direction, nowNs uint64) {
	e := d.msg
	d.msg, d.skipping = nil, false
	d.startAt(d.pos)
	if e == nil {
		return
	}
	if d.isReq {
		e.call.Flags |= h2.FlagRequestEnded
		return
	}
	t.finish(c, nowNs, 0)
}

// lose makes d lose its sync (see the package doc for what it does to the
// requests queued).
func (t *Tracker) lose(c *conn, d *direction, r LostReason) {
	t.stats.SyncLost[r]++
	if d.isReq {
		c.reqLost++
		if d.msg != nil {
			d.msg.call.Flags |= h2.FlagGap
		}
	} else if d.known && d.st != psUnsynced {
		t.loseResponses(c, d)
	}
	d.st, d.msg, d.pend, d.skipping, d.line = psUnsynced, nil, nil, false, nil
}

// loseResponses handles a loss of the response direction d: the oldest
// request queued, whose response began in the hole (or before), is
// emitted with FlagGap, its status when its head was seen. One request
// queued after it stays queued when no request was lost since: its
// response is the next one, as a client that waits for each response
// before its next request sends them. Others (several queued, requests
// lost or not tracked) are emitted with FlagGap: which of their responses
// the hole held is not known.
func (t *Tracker) loseResponses(c *conn, d *direction) {
	if len(c.queue) > 0 {
		c.queue[0].call.Flags |= h2.FlagGap
		t.finish(c, d.lastNs, 0)
	}
	keep := c.respSkip == 0 && len(c.queue) == 1 && c.queue[0].reqLost == c.reqLost &&
		c.dirs[c.reqDir].st != psUnsynced
	c.respSkip = 0
	for !keep && len(c.queue) > 0 {
		c.queue[0].call.Flags |= h2.FlagGap
		t.finish(c, d.lastNs, 0)
	}
}
