// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2/hpack"
)

func TestStaticTableMatchesXNet(t *testing.T) {
	for i := 1; i <= len(staticTable); i++ {
		fs, err := hpack.NewDecoder(4096, nil).DecodeFull([]byte{0x80 | byte(i)})
		require.NoError(t, err)
		require.Len(t, fs, 1)
		assert.Equal(t, staticTable[i-1], [2]string{fs[0].Name, fs[0].Value}, "index %d", i)
	}
}

type kv = [2]string

func decodeAll(d *hpackDecoder, blk []byte) ([]kv, bool, error) {
	var got []kv
	ok, err := d.decode(blk, func(n, v string) { got = append(got, kv{n, v}) })
	return got, ok, err
}

// TestTolerantDecoder joins an encoder's stream at every block: what the
// tolerant decoder emits is always what was encoded, and once the table
// churns it decodes :path again. (x-id stays unknown: each block names it
// by the previous x-id entry, back to one from before the join.)
func TestTolerantDecoder(t *testing.T) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	var blocks [][]byte
	var lists [][]kv
	for i := 0; i < 60; i++ {
		buf.Reset()
		l := []kv{
			{":method", "POST"}, {":path", "/pkg.Svc/M" + strconv.Itoa(i%3)}, {"content-type", "application/grpc"},
			{"x-id", strconv.Itoa(i) + strings.Repeat("v", 300)},
		}
		if i%7 == 0 {
			enc.SetMaxDynamicTableSize(uint32(2048 + 1024*(i%3)))
		}
		for _, f := range l {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		blocks = append(blocks, append([]byte(nil), buf.Bytes()...))
		lists = append(lists, l)
	}
	for join := 0; join < len(blocks); join++ {
		d := newHPACKDecoder(1<<16, 1<<16, 1<<10)
		paths := 0
		for i := join; i < len(blocks); i++ {
			got, ok, err := decodeAll(d, blocks[i])
			require.NoError(t, err)
			for _, f := range got {
				assert.Contains(t, lists[i], f, "join %d block %d", join, i)
				if f[0] == ":path" {
					paths++
				}
			}
			if ok {
				assert.Equal(t, lists[i], got)
			}
		}
		if join < len(blocks)-20 {
			assert.Greater(t, paths, 10, "join %d", join)
		}
	}
	// from the start: identical to x/net
	d := newHPACKDecoder(4096, 1<<16, 1<<10)
	for i := range blocks {
		got, ok, err := decodeAll(d, blocks[i])
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, lists[i], got)
	}
}

func TestTolerantDecoderMalformed(t *testing.T) {
	d := newHPACKDecoder(4096, 1<<16, 1<<10)
	_, _, err := decodeAll(d, []byte{0x40, 0x03, 'a', 'b', 'c', 0x01, 'x'}) // literal, inserted
	require.NoError(t, err)
	assert.Equal(t, 1, d.n)
	for _, b := range [][]byte{
		{0x80},                   // index 0
		{0xff},                   // truncated integer
		{0x40, 0x05, 'a'},        // truncated string
		{0x3f, 0xff, 0x7f},       // size update above the limit
		{0x40, 0x81, 0xff, 0x00}, // bad Huffman
	} {
		_, ok, err := decodeAll(d, b)
		assert.False(t, ok)
		assert.ErrorIs(t, err, errMalformed, "%x", b)
		assert.Zero(t, d.n)
	}
	// an entry too large for the table empties it
	d = newHPACKDecoder(4096, 1<<16, 1<<10)
	_, _, _ = decodeAll(d, []byte{0x40, 0x01, 'a', 0x01, 'b'})
	big := append([]byte{0x40, 0x01, 'a', 0x7f, 0x81, 0x20}, bytes.Repeat([]byte{'x'}, 4224)...)
	_, ok, err := decodeAll(d, big)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, d.n)
}
