// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpctest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
)

// HPACKFlood makes an HTTP/2 connection pair on loopback whose server
// announces SETTINGS_HEADER_TABLE_SIZE 2^32-1 and whose client then sends
// up to size bytes of HEADERS blocks, each a table size update to 1 GiB and
// 4-byte literals with incremental indexing (one 33-byte table entry each).
// It returns the header block bytes sent.
func HPACKFlood(ctx context.Context, size int64) int64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		settings := frame(nil, 4, 0, 0, binary.BigEndian.AppendUint32([]byte{0, 1}, 0xffffffff))
		_, _ = s.Write(settings)
		accepted <- s
		_, _ = io.Copy(io.Discard, s)
	}()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0
	}
	defer cl.Close()
	s := <-accepted
	if s == nil {
		return 0
	}
	defer s.Close()
	// read the server's SETTINGS first: its size bounds the client's blocks
	if _, err := io.ReadFull(cl, make([]byte, 15)); err != nil {
		return 0
	}
	msg := frame([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 4, 0, 0, nil)
	block := append([]byte{0x3f}, hpackInt(1<<30-31)...) // size update, 5-bit prefix
	for i := 0; len(block) < 16000; i++ {
		block = append(block, 0x40, 1, byte('a'+i%26), 0)
	}
	var sent int64
	for sid := uint32(1); sent < size && ctx.Err() == nil; sid += 2 {
		msg = frame(msg, 1, 0x5, sid, block) // HEADERS, END_STREAM|END_HEADERS
		if len(msg) >= 256<<10 {
			if _, err := cl.Write(msg); err != nil {
				return sent
			}
			msg = msg[:0]
		}
		sent += int64(len(block))
	}
	_, _ = cl.Write(msg)
	return sent
}

// frame appends an HTTP/2 frame.
func frame(b []byte, typ, flags uint8, sid uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, sid)
	return append(b, payload...)
}

// hpackInt is the continuation bytes of an HPACK integer whose prefix is
// full (RFC 7541 5.1).
func hpackInt(v uint64) []byte {
	var b []byte
	for v >= 128 {
		b = append(b, byte(v%128+128))
		v /= 128
	}
	return append(b, byte(v))
}
