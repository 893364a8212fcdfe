// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"errors"
	"unsafe"

	"golang.org/x/net/http2/hpack"
)

// hpackDecoder is the HPACK decoder of a direction, for both modes: the
// table known from the connection's start (strict: size updates up to the
// peer's SETTINGS_HEADER_TABLE_SIZE only) and a table partly unknown (a
// connection that predates capture, a gap, a lost block). Its table holds
// the entries inserted since it started, newest first like the peer's:
// every index it holds names the same entry as in the peer's table,
// whatever older entries the peer has (eviction only ever drops the
// oldest). It keeps decoding past what it cannot resolve:
//
//   - an indexed field beyond its table, or naming an entry whose name is
//     unknown, is skipped (an unknown field);
//   - a literal whose name index is unknown is skipped, and, when it is
//     inserted, its value is inserted under an unknown name, so that the
//     later indexes stay aligned with the peer's.
//
// An entry of unknown name is counted at the size of its value alone: the
// table may then keep entries longer than the peer's, which the encoder
// never references. What it decodes is therefore always right; what it
// cannot decode is reported (the block is incomplete). Malformed encoding
// (a truncated integer or string, bad Huffman, a size update above limit)
// and a block of more than maxFields fields stop the block and empty the
// table.
//
// The table's size is capped at capSize whatever the peer uses (a size
// update above it counts in capped): the table then holds the newest
// entries of the peer's, which is all the tolerant semantics need, and a
// reference past it is an unknown field. The table is a ring of entries:
// insertion and eviction of the oldest are O(1), so a block costs O(its
// fields) plus the entries it evicts, each evicted once (x/net's decoder
// copies the whole table at every eviction; see doc.go).
type hpackDecoder struct {
	ring      []hEntry // len a power of two (or 0); the oldest at head
	head, n   int
	size      uint32 // RFC 7541 size of the entries
	maxSize   uint32 // the table's size now (the peer's, capped)
	limit     uint32 // the largest size update accepted
	capSize   uint32 // the most table this decoder keeps
	maxFields int    // fields decoded per block
	strBytes  int    // bytes of the entries' strings
	ops       int    // work of the last block: fields and evictions
	capped    uint64 // size updates above capSize
	// ins counts the insertions since the decoder started (or was
	// emptied): dynamic index i (0 the newest) names the entry inserted
	// i-ins+1 entries before the start when i >= ins, a number that stays
	// the same while the peer keeps the entry, whatever it inserts since.
	ins uint64
	// unknown, when set, is told of each indexed field it cannot resolve:
	// the number of the entry before the start (1 the newest), 0 for any
	// other (an entry inserted since, of unknown name, or evicted).
	unknown func(entry uint32)
}

// maxEntryNumber bounds the numbers reported to unknown: no table holds
// more entries (4 GiB of 32-byte entries).
const maxEntryNumber = 1 << 27

type hEntry struct {
	name, value string
	nameKnown   bool
	size        uint32
}

// hEntryMem is the memory of a ring slot (two strings, a bool, a size).
const hEntryMem = int(unsafe.Sizeof(hEntry{}))

var (
	errMalformed     = errors.New("hpack: malformed block")
	errTooManyFields = errors.New("hpack: too many fields in a block")
)

// newHPACKDecoder returns a decoder of an empty table of the initial size
// (at most limit and capSize) that accepts size updates up to limit and
// keeps at most capSize bytes of table.
func newHPACKDecoder(limit, capSize uint32, maxFields int) *hpackDecoder {
	return &hpackDecoder{maxSize: min(initialTableSize, limit, capSize), limit: limit, capSize: capSize, maxFields: maxFields}
}

// mem is the decoder's memory, for the Tracker's budget.
func (t *hpackDecoder) mem() int {
	if t == nil {
		return 0
	}
	return hpackDecoderMem + len(t.ring)*hEntryMem + t.strBytes
}

const hpackDecoderMem = int(unsafe.Sizeof(hpackDecoder{}))

// setLimit changes the largest size update accepted (the peer's SETTINGS).
func (t *hpackDecoder) setLimit(limit uint32) { t.limit = limit }

// decode decodes block, calling emit for each field it can resolve. It
// returns whether every field was resolved, and errMalformed or
// errTooManyFields (the table is then emptied).
func (t *hpackDecoder) decode(block []byte, emit func(name, value string)) (bool, error) {
	complete := true
	t.ops = 0
	for fields := 0; len(block) > 0; fields++ {
		if fields >= t.maxFields {
			t.fail()
			return false, errTooManyFields
		}
		t.ops++
		var ok bool
		var err error
		if block, ok, err = t.field(block, emit); err != nil {
			t.fail()
			return false, err
		}
		complete = complete && ok
	}
	return complete, nil
}

// field decodes the field (or size update) that block begins with.
func (t *hpackDecoder) field(block []byte, emit func(name, value string)) ([]byte, bool, error) {
	b := block[0]
	var err error
	switch {
	case b&0x80 != 0: // indexed field
		var idx uint64
		if idx, block, err = readInt(block, 7); err != nil || idx == 0 {
			return block, false, errMalformed
		}
		n, v, ok := t.lookup(idx)
		if ok {
			emit(n, v)
		} else if t.unknown != nil {
			t.unknown(t.entryNumber(idx))
		}
		return block, ok, nil
	case b&0xe0 == 0x20: // dynamic table size update
		var sz uint64
		if sz, block, err = readInt(block, 5); err != nil || sz > uint64(t.limit) {
			return block, false, errMalformed
		}
		if sz > uint64(t.capSize) {
			t.capped++
			sz = uint64(t.capSize)
		}
		t.maxSize = uint32(sz)
		t.evict(0)
		return block, true, nil
	}
	return t.literal(block, emit)
}

// literal decodes a literal field, inserting it when it is indexed.
func (t *hpackDecoder) literal(block []byte, emit func(name, value string)) ([]byte, bool, error) {
	prefix, insert := uint8(4), false
	if block[0]&0xc0 == 0x40 {
		prefix, insert = 6, true
	}
	idx, block, err := readInt(block, prefix)
	if err != nil {
		return block, false, err
	}
	name, nameKnown := "", true
	if idx == 0 {
		if name, block, err = readString(block); err != nil {
			return block, false, err
		}
	} else {
		name, _, nameKnown = t.lookup(idx)
	}
	var value string
	if value, block, err = readString(block); err != nil {
		return block, false, err
	}
	if nameKnown {
		emit(name, value)
	}
	if insert {
		t.insert(hEntry{name: name, value: value, nameKnown: nameKnown})
	}
	return block, nameKnown, nil
}

// entryNumber is the number of the entry that idx (not resolved) names
// when it was inserted before the decoder started (1 the newest), else 0.
func (t *hpackDecoder) entryNumber(idx uint64) uint32 {
	i := idx - uint64(len(staticTable)) - 1
	if idx <= uint64(len(staticTable)) || i < t.ins || i-t.ins >= maxEntryNumber {
		return 0
	}
	return uint32(i-t.ins) + 1
}

// fail empties the table: the decoder starts again.
func (t *hpackDecoder) fail() {
	t.ops += t.n
	t.ring, t.head, t.n, t.size, t.strBytes, t.ins = nil, 0, 0, 0, 0, 0
}

// lookup resolves a full index.
func (t *hpackDecoder) lookup(idx uint64) (string, string, bool) {
	if idx <= uint64(len(staticTable)) {
		e := staticTable[idx-1]
		return e[0], e[1], true
	}
	i := idx - uint64(len(staticTable)) - 1
	if i >= uint64(t.n) {
		return "", "", false
	}
	e := &t.ring[(t.head+t.n-1-int(i))&(len(t.ring)-1)]
	return e.name, e.value, e.nameKnown
}

// insert adds e as the newest entry, evicting the oldest ones to make room.
func (t *hpackDecoder) insert(e hEntry) {
	e.size = uint32(len(e.name)+len(e.value)) + 32
	t.ins++
	if e.size > t.maxSize {
		t.fail() // RFC 7541 4.4: the table is emptied
		return
	}
	t.evict(e.size)
	if t.n == len(t.ring) {
		t.grow()
	}
	t.ring[(t.head+t.n)&(len(t.ring)-1)] = e
	t.n++
	t.size += e.size
	t.strBytes += len(e.name) + len(e.value)
}

// grow doubles the ring (every entry is at least 32 bytes, so it never
// holds more than maxSize/32 of them).
func (t *hpackDecoder) grow() {
	r := make([]hEntry, max(16, 2*len(t.ring)))
	for i := 0; i < t.n; i++ {
		r[i] = t.ring[(t.head+i)&(len(t.ring)-1)]
	}
	t.ring, t.head = r, 0
}

// evict drops the oldest entries until room more bytes fit.
func (t *hpackDecoder) evict(room uint32) {
	for t.n > 0 && t.size+room > t.maxSize {
		e := &t.ring[t.head]
		t.size -= e.size
		t.strBytes -= len(e.name) + len(e.value)
		*e = hEntry{}
		t.head = (t.head + 1) & (len(t.ring) - 1)
		t.n--
		t.ops++
	}
}

// readInt reads an HPACK integer of an n-bit prefix (RFC 7541 5.1).
func readInt(b []byte, n uint8) (uint64, []byte, error) {
	if len(b) == 0 {
		return 0, b, errMalformed
	}
	mask := uint64(1)<<n - 1
	v := uint64(b[0]) & mask
	b = b[1:]
	if v < mask {
		return v, b, nil
	}
	for m := uint(0); m < 63; m += 7 {
		if len(b) == 0 {
			return 0, b, errMalformed
		}
		c := b[0]
		b = b[1:]
		v += uint64(c&0x7f) << m
		if c&0x80 == 0 {
			return v, b, nil
		}
	}
	return 0, b, errMalformed
}

// readString reads an HPACK string literal (RFC 7541 5.2).
func readString(b []byte) (string, []byte, error) {
	if len(b) == 0 {
		return "", b, errMalformed
	}
	huff := b[0]&0x80 != 0
	n, b, err := readInt(b, 7)
	if err != nil || n > uint64(len(b)) {
		return "", b, errMalformed
	}
	raw := b[:n]
	b = b[n:]
	if !huff {
		return string(raw), b, nil
	}
	s, err := hpack.HuffmanDecodeToString(raw)
	if err != nil {
		return "", b, errMalformed
	}
	return s, b, nil
}

// staticTable is RFC 7541 Appendix A.
var staticTable = [...][2]string{
	{":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"},
	{":path", "/index.html"}, {":scheme", "http"}, {":scheme", "https"}, {":status", "200"},
	{":status", "204"}, {":status", "206"}, {":status", "304"}, {":status", "400"},
	{":status", "404"}, {":status", "500"}, {"accept-charset", ""}, {"accept-encoding", "gzip, deflate"},
	{"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""}, {"access-control-allow-origin", ""},
	{"age", ""}, {"allow", ""}, {"authorization", ""}, {"cache-control", ""},
	{"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
	{"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""},
	{"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""},
	{"from", ""}, {"host", ""}, {"if-match", ""}, {"if-modified-since", ""},
	{"if-none-match", ""}, {"if-range", ""}, {"if-unmodified-since", ""}, {"last-modified", ""},
	{"link", ""}, {"location", ""}, {"max-forwards", ""}, {"proxy-authenticate", ""},
	{"proxy-authorization", ""}, {"range", ""}, {"referer", ""}, {"refresh", ""},
	{"retry-after", ""}, {"server", ""}, {"set-cookie", ""}, {"strict-transport-security", ""},
	{"transfer-encoding", ""}, {"user-agent", ""}, {"vary", ""}, {"via", ""},
	{"www-authenticate", ""},
}
