// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"errors"

	"golang.org/x/net/http2/hpack"
)

// tolerantDecoder is the HPACK decoder of a direction whose dynamic table
// is partly unknown (a connection that predates capture, a gap, a lost
// block). Its table holds the entries inserted since it started, newest
// first like the peer's: every index it holds names the same entry as in
// the peer's table, whatever older entries the peer has (eviction only ever
// drops the oldest). It keeps decoding past what it cannot resolve:
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
// (a truncated integer or string, bad Huffman) stops the block and empties
// the table.
type tolerantDecoder struct {
	ents    []tEntry // oldest first
	size    uint32
	maxSize uint32
	limit   uint32 // the largest size update accepted
}

type tEntry struct {
	name, value string
	nameKnown   bool
	size        uint32
}

var errMalformed = errors.New("hpack: malformed block")

func newTolerantDecoder(limit uint32) *tolerantDecoder {
	return &tolerantDecoder{maxSize: min(initialTableSize, limit), limit: limit}
}

// decode decodes block, calling emit for each field it can resolve. It
// returns whether every field was resolved, and errMalformed (the table is
// then emptied).
func (t *tolerantDecoder) decode(block []byte, emit func(name, value string)) (bool, error) {
	complete := true
	for len(block) > 0 {
		b := block[0]
		var err error
		switch {
		case b&0x80 != 0: // indexed field
			var idx uint64
			if idx, block, err = readInt(block, 7); err != nil || idx == 0 {
				return false, t.fail()
			}
			if n, v, ok := t.lookup(idx); ok {
				emit(n, v)
			} else {
				complete = false
			}
		case b&0xe0 == 0x20: // dynamic table size update
			var sz uint64
			if sz, block, err = readInt(block, 5); err != nil || sz > uint64(t.limit) {
				return false, t.fail()
			}
			t.maxSize = uint32(sz)
			t.evict(0)
		default:
			prefix, insert := uint8(4), false
			if b&0xc0 == 0x40 {
				prefix, insert = 6, true
			}
			var idx uint64
			if idx, block, err = readInt(block, prefix); err != nil {
				return false, t.fail()
			}
			name, nameKnown := "", true
			if idx == 0 {
				if name, block, err = readString(block); err != nil {
					return false, t.fail()
				}
			} else if name, _, nameKnown = t.lookup(idx); !nameKnown {
				complete = false
			}
			var value string
			if value, block, err = readString(block); err != nil {
				return false, t.fail()
			}
			if nameKnown {
				emit(name, value)
			}
			if insert {
				t.insert(tEntry{name: name, value: value, nameKnown: nameKnown})
			}
		}
	}
	return complete, nil
}

func (t *tolerantDecoder) fail() error {
	t.ents, t.size = t.ents[:0], 0
	return errMalformed
}

// lookup resolves a full index.
func (t *tolerantDecoder) lookup(idx uint64) (string, string, bool) {
	if idx <= uint64(len(staticTable)) {
		e := staticTable[idx-1]
		return e[0], e[1], true
	}
	i := idx - uint64(len(staticTable)) - 1
	if i >= uint64(len(t.ents)) {
		return "", "", false
	}
	e := t.ents[len(t.ents)-1-int(i)]
	return e.name, e.value, e.nameKnown
}

func (t *tolerantDecoder) insert(e tEntry) {
	e.size = uint32(len(e.name)+len(e.value)) + 32
	if e.size > t.maxSize {
		t.ents, t.size = t.ents[:0], 0 // RFC 7541 4.4: the table is emptied
		return
	}
	t.evict(e.size)
	t.ents = append(t.ents, e)
	t.size += e.size
}

// evict drops the oldest entries until room more bytes fit.
func (t *tolerantDecoder) evict(room uint32) {
	n := 0
	for n < len(t.ents) && t.size+room > t.maxSize {
		t.size -= t.ents[n].size
		n++
	}
	if n > 0 {
		t.ents = append(t.ents[:0], t.ents[n:]...)
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
