// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"encoding/binary"
	"unsafe"
)

// parseState is where a direction's parser stands in its byte stream.
type parseState uint8

const (
	psUnsynced parseState = iota // framing unknown: waiting for a chunk that PlausibleStart accepts
	psPreface                    // inside the client preface
	psHeader                     // at or inside a frame header
	psPayload                    // inside a frame payload
)

const (
	// confirmFrames: the frame headers a resynchronisation must see pass
	// (the first one included) before the direction is trusted again.
	confirmFrames      = 3
	initialTableSize   = 4096 // SETTINGS_HEADER_TABLE_SIZE's initial value
	maxSettingsPayload = 64 * 6
	// shrinkBlockCap: a block buffer grown beyond it is freed after use, so
	// that idle connections hold small buffers only.
	shrinkBlockCap = 8 << 10
)

// direction is the reassembly, framing and HPACK state of one direction of a
// connection.
type direction struct {
	c   *conn
	dir Dir

	st   parseState
	next uint64 // offset of the next byte expected (stream position)
	// seqRef and seqOff: the TCP sequence number of offset seqOff, from the
	// latest chunk with a known one (seqKnown); offset o is at sequence
	// number seqRef + uint32(o-seqOff), modulo 2^32.
	seqRef   uint32
	seqOff   uint64
	seqKnown bool
	hdrOff   uint64 // offset of the first byte of the frame header being parsed

	prefN uint8 // preface bytes matched
	// firstFrame: the next frame is the first of this direction since its
	// start (it must be SETTINGS: the server preface, or the frame after the
	// client preface).
	firstFrame bool
	synced     bool // framing found at least once
	// tentative counts the frame headers still to be confirmed after a
	// resynchronisation (confirmFrames). Until then a frame has no effect
	// on streams, HPACK or settings, a header-block frame is not decoded,
	// and a chunk that lands strictly inside a payload the kernel does not
	// copy (it never sends such bytes) or a header that fails the resync
	// test means the resync was wrong: it is dropped (ResyncsRejected).
	tentative uint8
	fTent     bool // the current frame was parsed while tentative
	// pending are the effects of the frames parsed while tentative (DATA
	// and RST_STREAM headers, decoded HEADERS blocks), in wire order:
	// applied when the resynchronisation is confirmed, forgotten when it is
	// rejected. At most confirmFrames.
	pending []pendingFrame
	// strict: the HPACK table is known from the connection's start, so the
	// decoder follows the peer's SETTINGS_HEADER_TABLE_SIZE exactly; else it
	// accepts any size up to Config.MaxHeaderTableSize (always safe, see
	// doc.go).
	strict bool

	hdr  [FrameHeaderLen]byte
	hdrN uint8
	fh   FrameHeader
	got  uint32 // payload bytes of fh passed
	need uint32 // payload bytes of fh to collect
	// fstart is where the current header-block frame's payload starts in
	// block; ctl collects control frame payloads.
	fstart int
	ctl    []byte
	fTime  uint64
	fProc  Proc

	inBlock       bool // a header block waits for CONTINUATION frames
	blockType     uint8
	blockTooLarge bool
	blockTent     bool // the current header block began while tentative
	hblock             // the current header block's stream, flags, time and fields
	block         []byte

	// hp is the HPACK state (nil: an empty table of the initial size).
	hp        *hpackDecoder
	emit      func(name, value string)
	unknown   func(entry uint32)
	allowedTS uint32 // the table size the peer's decoder allows (its SETTINGS)
}

// hblock is a complete header block: its frames and what it says.
type hblock struct {
	blockStream uint32
	blockFlags  uint8
	blockWire   uint32 // payload bytes of the block's frames
	blockTime   uint64
	blockProc   Proc
	// blockSeq is the TCP sequence number of the first byte of the block's
	// HEADERS frame header (when blockSeqKnown).
	blockSeq      uint32
	blockSeqKnown bool
	fields        headerFields
}

// pendingFrame is a frame parsed while tentative whose effect waits for
// the confirmation: a DATA or RST_STREAM (fh, time, code), or a HEADERS
// block (block).
type pendingFrame struct {
	fh    FrameHeader
	time  uint64
	code  uint32
	block hblock
}

// pendingFrameMem is the memory of a slot of direction.pending (the
// strings of its fields are added).
const pendingFrameMem = int(unsafe.Sizeof(pendingFrame{}))

// reset makes d a direction that has not been seen yet. fromStart says
// whether offset 0 is the direction's first byte; preface whether it begins
// with the client preface.
func (d *direction) reset(c *conn, dir Dir, fromStart, preface bool) {
	*d = direction{c: c, dir: dir, ctl: d.ctl[:0], block: d.block[:0], allowedTS: initialTableSize}
	if fromStart {
		d.synced = true
		d.strict = true
		d.firstFrame = true
		d.st = psHeader
		if preface {
			d.st = psPreface
		}
	}
}

// decode decodes the block with the direction's HPACK state into
// d.fields. It returns whether every field was decoded; the fields before
// or around what was not are right. A malformed block, or one of more than
// MaxFieldsPerBlock fields, leaves the table unknown.
func (d *direction) decode(t *Tracker) bool {
	if d.hp == nil {
		d.hp = newHPACKDecoder(d.allowedSize(t), t.cfg.MaxHeaderTableSize, t.cfg.MaxFieldsPerBlock)
	}
	if d.emit == nil {
		d.emit, d.unknown = d.fields.add, d.fields.unknown
	}
	d.hp.unknown = d.unknown
	capped := d.hp.capped
	complete, err := d.hp.decode(d.block, d.emit)
	t.stats.HPACKTableCapped += d.hp.capped - capped
	if err == nil {
		return complete
	}
	if err == errTooManyFields {
		t.stats.HeaderBlocksTooManyFields++
	}
	d.unknownTable()
	return false
}

// unknownTable forgets the HPACK table: the next block is decoded from an
// empty table, accepting any size update up to Config.MaxHeaderTableSize
// (or the peer's SETTINGS when larger).
func (d *direction) unknownTable() {
	d.hp, d.strict = nil, false
}

// allowedSize is the largest size update accepted: the peer's SETTINGS
// exactly while the table is known from the start, else also anything up
// to MaxHeaderTableSize (always safe, see doc.go). Either way the table
// kept is at most MaxHeaderTableSize.
func (d *direction) allowedSize(t *Tracker) uint32 {
	if d.strict {
		return d.allowedTS
	}
	return max(d.allowedTS, t.cfg.MaxHeaderTableSize)
}

// seqAt is the TCP sequence number of offset off, when known: offsets
// differ from sequence numbers by a constant, modulo 2^32 (uint64
// subtraction wraps, and so does the conversion).
func (d *direction) seqAt(off uint64) (uint32, bool) {
	if !d.seqKnown {
		return 0, false
	}
	return d.seqRef + uint32(off-d.seqOff), true
}

// chunk feeds the bytes of ch to the direction.
func (d *direction) chunk(t *Tracker, ch *Chunk) {
	data, off := ch.Data, ch.Offset
	if len(data) == 0 {
		return
	}
	if ch.SeqKnown {
		d.seqRef, d.seqOff, d.seqKnown = ch.Seq, off, true
	}
	end := off + uint64(len(data))
	if end <= d.next {
		t.stats.ChunksStale++
		return
	}
	if d.st == psUnsynced {
		if off < d.next || !d.resync(t, data) {
			t.stats.ChunksUnsynced++
			d.c.failedSyncs++
			d.next = max(d.next, end)
			return
		}
		d.next = off
	}
	if off < d.next { // overlap: the bytes before next were seen
		data = data[d.next-off:]
		off = d.next
	}
	if off > d.next {
		if r, ok := d.hole(t, off-d.next); !ok {
			if r == gapTentative {
				t.stats.ResyncsRejected++
				d.desync(t)
			} else {
				d.gap(t, r)
			}
			if !d.resync(t, data) {
				t.stats.ChunksUnsynced++
				d.next = end
				return
			}
		}
		d.next = off
	}
	t.stats.BytesReassembled += uint64(len(data))
	d.next = end
	d.parse(t, data, ch)
}

// hole skips n bytes that were not captured, when they lie inside a frame
// payload the parser does not need; otherwise it names the gap.
func (d *direction) hole(t *Tracker, n uint64) (GapReason, bool) {
	switch d.st {
	case psPreface:
		return GapPreface, false
	case psHeader:
		return GapFrameHeader, false
	}
	if d.got < d.need {
		if isBlockFrame(d.fh.Type) {
			return GapHeaderBlock, false
		}
		return GapControl, false
	}
	if n > uint64(d.fh.Length-d.got) {
		return GapFrameHeader, false
	}
	if d.tentative > 0 && n < uint64(d.fh.Length-d.got) {
		return gapTentative, false
	}
	t.stats.BytesHoles += n
	d.got += uint32(n)
	if d.got == d.fh.Length {
		d.endFrame(t)
	}
	return 0, true
}

func isBlockFrame(typ uint8) bool {
	return typ == FrameHeaders || typ == FrameContinuation || typ == FramePushPromise
}

// gap records that the direction's framing is lost.
func (d *direction) gap(t *Tracker, r GapReason) {
	t.stats.Gaps[r]++
	d.desync(t)
}

// desync drops the framing and the HPACK table of the direction and flags
// the connection's open streams (through conn.gaps: no walk).
func (d *direction) desync(t *Tracker) {
	d.st = psUnsynced
	d.tentative = 0
	d.hdrN = 0
	d.inBlock = false
	d.blockTooLarge = false
	d.block = d.block[:0]
	d.unknownTable()
	d.firstFrame = false
	clear(d.pending)
	d.pending = d.pending[:0]
	d.c.gaps++ // the streams open now are flagged FlagGap when they end
}

// resync tries data, the start of a chunk, as a frame boundary (or the
// start of the client preface).
func (d *direction) resync(t *Tracker, data []byte) bool {
	if len(data) >= len(Preface) && string(data[:len(Preface)]) == Preface {
		d.st, d.prefN = psPreface, 0
		d.firstFrame = true
	} else if PlausibleStart(data, t.cfg.ResyncMaxFrameSize) {
		d.st = psHeader
		d.tentative = confirmFrames
	} else {
		return false
	}
	d.hdrN = 0
	d.unknownTable()
	d.synced = true
	t.stats.Resyncs++
	return true
}

// parse runs the frame parser over data, bytes that continue the stream.
func (d *direction) parse(t *Tracker, data []byte, ch *Chunk) {
	for len(data) > 0 {
		switch d.st {
		case psUnsynced:
			return
		case psPreface:
			n := min(len(data), len(Preface)-int(d.prefN))
			if string(data[:n]) != Preface[d.prefN:int(d.prefN)+n] {
				t.notHTTP2(d.c)
				return
			}
			d.prefN += uint8(n)
			data = data[n:]
			if int(d.prefN) == len(Preface) {
				d.st = psHeader
				d.c.learnReqDir(d.dir)
			}
		case psHeader:
			if d.hdrN == 0 {
				d.hdrOff = d.next - uint64(len(data))
			}
			if d.hdrN == 0 && len(data) >= FrameHeaderLen {
				d.fh = ParseFrameHeader(data)
				data = data[FrameHeaderLen:]
			} else {
				n := copy(d.hdr[d.hdrN:], data)
				d.hdrN += uint8(n)
				data = data[n:]
				if d.hdrN < FrameHeaderLen {
					return
				}
				d.hdrN = 0
				d.fh = ParseFrameHeader(d.hdr[:])
			}
			d.fTime, d.fProc = ch.TimeNs, ch.Proc
			if !d.beginFrame(t) {
				return
			}
		case psPayload:
			n := uint32(min(uint64(len(data)), uint64(d.fh.Length-d.got)))
			if d.got < d.need {
				k := min(n, d.need-d.got)
				if isBlockFrame(d.fh.Type) {
					d.block = append(d.block, data[:k]...)
				} else {
					d.ctl = append(d.ctl, data[:k]...)
				}
			}
			d.got += n
			data = data[n:]
			if d.got == d.fh.Length {
				d.endFrame(t)
			}
		}
	}
}

// beginFrame starts the frame d.fh. It returns false when the frame header
// cannot be right (the framing was lost) or the connection is not HTTP/2.
func (d *direction) beginFrame(t *Tracker) bool {
	fh := &d.fh
	first := d.firstFrame
	d.firstFrame = false
	ok := fh.Valid(t.cfg.MaxFrameSize, true) && (fh.Type == FrameContinuation) == d.inBlock &&
		(!d.inBlock || fh.StreamID == d.blockStream)
	if first && (!ok || fh.Type != FrameSettings || fh.Flags&FlagAck != 0) {
		t.notHTTP2(d.c)
		return false
	}
	d.fTent = d.tentative > 0
	if d.fTent {
		if !ok || !fh.Valid(t.cfg.ResyncMaxFrameSize, false) {
			t.stats.ResyncsRejected++
			d.desync(t)
			return false
		}
		d.tentative--
	}
	if !ok {
		d.gap(t, GapBadFrame)
		return false
	}
	t.stats.FramesParsed++
	d.got = 0
	d.need = needed(*fh)
	switch fh.Type {
	case FrameData:
		if d.fTent {
			d.pending = append(d.pending, pendingFrame{fh: *fh, time: d.fTime})
		} else {
			t.onData(d, fh)
		}
	case FrameHeaders, FramePushPromise, FrameContinuation:
		if fh.Type != FrameContinuation {
			d.inBlock = true
			d.blockStream, d.blockType, d.blockFlags = fh.StreamID, fh.Type, fh.Flags
			d.blockTent = d.fTent
			d.blockTooLarge = false
			d.blockWire = 0
			d.blockTime, d.blockProc = d.fTime, d.fProc
			d.blockSeq, d.blockSeqKnown = d.seqAt(d.hdrOff)
			d.block = d.block[:0]
		}
		d.blockWire += fh.Length
		if d.blockTooLarge || len(d.block)+int(fh.Length) > t.cfg.MaxHeaderBlock {
			d.blockTooLarge = true
			d.need = 0
		}
		d.fstart = len(d.block)
	case FrameSettings:
		d.need = min(d.need, maxSettingsPayload)
		d.ctl = d.ctl[:0]
	default:
		d.ctl = d.ctl[:0]
	}
	if fh.Length == 0 {
		d.endFrame(t)
	} else {
		d.st = psPayload
	}
	return true
}

// endFrame handles the frame d.fh once its payload has passed.
func (d *direction) endFrame(t *Tracker) {
	d.st = psHeader
	fh := &d.fh
	switch fh.Type {
	case FrameHeaders, FramePushPromise, FrameContinuation:
		if !d.blockTooLarge && !d.stripFrame() {
			d.gap(t, GapBadFrame)
			return
		}
		if fh.Flags&FlagEndHeaders != 0 {
			d.inBlock = false
			d.endBlock(t)
		}
	case FrameSettings:
		if fh.Flags&FlagAck == 0 && !d.fTent {
			d.settings(t)
		}
	case FrameRSTStream:
		t.stats.Resets++
		code := binary.BigEndian.Uint32(d.ctl[:4])
		if d.fTent {
			d.pending = append(d.pending, pendingFrame{fh: *fh, time: d.fTime, code: code})
		} else {
			t.onReset(d, fh.StreamID, code)
		}
	case FrameGoAway:
		t.stats.GoAways++
		if !d.fTent {
			t.onGoAway(d, binary.BigEndian.Uint32(d.ctl[:4])&0x7fffffff)
		}
	}
	if len(d.pending) > 0 && d.tentative == 0 && !d.inBlock && d.st == psHeader {
		d.confirm(t)
	}
}

// confirm applies the effects of the frames parsed while tentative, in
// wire order, once the resynchronisation is confirmed (confirmFrames frame
// headers passed and the last of them ended): a call whose request HEADERS
// came right after the capture started (or a gap) is not lost.
func (d *direction) confirm(t *Tracker) {
	t.stats.TentativeFramesApplied += uint64(len(d.pending))
	fTime := d.fTime
	for i := range d.pending {
		p := &d.pending[i]
		d.fTime = p.time
		switch p.fh.Type {
		case FrameData:
			t.onData(d, &p.fh)
		case FrameRSTStream:
			t.onReset(d, p.fh.StreamID, p.code)
		case FrameHeaders:
			t.onHeaders(d, &p.block)
		}
		*p = pendingFrame{}
	}
	d.fTime = fTime
	d.pending = d.pending[:0]
}

// stripFrame removes the padding, priority and promised stream id of the
// header-block frame just collected at d.block[d.fstart:].
func (d *direction) stripFrame() bool {
	p := d.block[d.fstart:]
	pad := 0
	if d.fh.Type != FrameContinuation && d.fh.Flags&FlagPadded != 0 {
		if len(p) < 1 {
			return false
		}
		pad = int(p[0])
		p = p[1:]
	}
	skip := 0
	if d.fh.Type == FrameHeaders && d.fh.Flags&FlagPriority != 0 {
		skip = 5
	} else if d.fh.Type == FramePushPromise {
		skip = 4
	}
	if len(p) < skip+pad {
		return false
	}
	p = p[skip : len(p)-pad]
	d.block = d.block[:d.fstart+copy(d.block[d.fstart:], p)]
	return true
}

// settings applies a SETTINGS frame: SETTINGS_HEADER_TABLE_SIZE is the
// size the sender's HPACK decoder allows, so it bounds the dynamic table
// of the blocks that travel the other way.
func (d *direction) settings(t *Tracker) {
	for p := d.ctl; len(p) >= 6; p = p[6:] {
		if binary.BigEndian.Uint16(p) != settingHeaderTableSize {
			continue
		}
		v := binary.BigEndian.Uint32(p[2:])
		o := &d.c.dirs[1-d.dir]
		o.allowedTS = v
		if o.hp != nil {
			o.hp.setLimit(o.allowedSize(t))
		}
	}
}

// endBlock decodes a complete header block (every block, in wire order:
// the HPACK table depends on all of them) and hands it to the stream logic.
func (d *direction) endBlock(t *Tracker) {
	t.stats.HeaderBlocks++
	d.fields = headerFields{}
	if d.blockTent {
		// perhaps not a header block at all: decoded into the table (a
		// rejection forgets it with the framing), its effect held until the
		// resync is confirmed
		t.stats.HeaderBlocksUnverified++
	}
	if d.blockTooLarge {
		t.stats.HeaderBlocksTooLarge++
		d.unknownTable() // its insertions are lost
	} else if !d.decode(t) {
		t.stats.HPACKErrors++
	}
	if cap(d.block) > shrinkBlockCap {
		d.block = nil
	}
	if d.blockType == FrameHeaders {
		if d.blockTent {
			d.pending = append(d.pending, pendingFrame{fh: FrameHeader{Type: FrameHeaders}, block: d.hblock})
		} else {
			t.onHeaders(d, &d.hblock)
		}
	}
	d.fields = headerFields{}
}
