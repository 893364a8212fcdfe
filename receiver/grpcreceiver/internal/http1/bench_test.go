// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"net/netip"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// keepAliveExchange is one GET on a keep-alive connection and nginx's
// answer with a body of n bytes, as hey sends and nginx (1.22) serves a
// static file: the bytes of scripts/bench-http1.sh's load.
func keepAliveExchange(n int) (req, resp []byte) {
	req = []byte("GET /f" + strconv.Itoa(n) + ".bin HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n" +
		"User-Agent: hey/0.0.1\r\nAccept-Encoding: gzip\r\n\r\n")
	resp = []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 27 Nov 2025 07:45:57 GMT\r\n" +
		"Content-Type: application/octet-stream\r\nContent-Length: " + strconv.Itoa(n) + "\r\n" +
		"Last-Modified: Thu, 27 Nov 2025 07:40:00 GMT\r\nConnection: keep-alive\r\n" +
		"ETag: \"6927ff70-" + strconv.FormatInt(int64(n), 16) + "\"\r\nAccept-Ranges: bytes\r\n\r\n")
	body := make([]byte, n)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	return req, append(resp, body...)
}

// capturedCall is one system call of a direction as the capture hands it
// to the tracker: the chunk of its first bytes (up to the cap of a call
// that starts a message) and, past the cap, the chunk of its last
// tailCap bytes; between them a hole.
type capturedCall struct {
	dir        h2.Dir
	head, tail []byte
	tailAt     int // the tail chunk's offset in the call
	n          int // the call's bytes
}

func captured(d h2.Dir, b []byte) capturedCall {
	c := capturedCall{dir: d, head: b[:min(len(b), startCap)], n: len(b)}
	if len(b) > len(c.head) {
		c.tailAt = max(len(c.head), len(b)-tailCap)
		c.tail = b[c.tailAt:]
	}
	return c
}

// BenchmarkKeepAliveRequest is the userspace cost of one HTTP/1.1
// request and its response at one end of a keep-alive connection: the
// Tracker's parse and pairing and spanmap.Mapper.Append's span, fed as the
// capture feeds the socket hook (each message one system call: its head
// chunk, and its tail chunk when it is longer than the cap; TCP sequence
// numbers known), the spans handed over in batches of 1024 as the
// receiver does. A request seen at both ends (client and server on one
// host) costs this twice. 1000 requests a connection.
func BenchmarkKeepAliveRequest(b *testing.B) {
	srv := h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.1"), Port: 18080}
	cli := h2.Endpoint{Addr: netip.MustParseAddr("127.0.0.1"), Port: 41234}
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, role := range []h2.Role{h2.RoleServer, h2.RoleClient} {
			req, resp := keepAliveExchange(size)
			reqDir, respDir := h2.Ingress, h2.Egress
			local, remote := srv, cli
			if role == h2.RoleClient {
				reqDir, respDir, local, remote = h2.Egress, h2.Ingress, cli, srv
			}
			calls := []capturedCall{captured(reqDir, req), captured(respDir, resp)}
			name := strconv.Itoa(size>>10) + "KiB/" + map[h2.Role]string{h2.RoleServer: "server", h2.RoleClient: "client"}[role]
			b.Run(name, func(b *testing.B) {
				benchKeepAlive(b, role, local, remote, calls)
			})
		}
	}
}

func benchKeepAlive(b *testing.B, role h2.Role, local, remote h2.Endpoint, calls []capturedCall) {
	const perConn, batch = 1000, 1024
	m := spanmap.New(spanmap.Config{BootID: "bench-boot"})
	spans := ptrace.NewSpanSlice()
	var emitted, bad int
	tr := NewTracker(Config{}, func(c *h2.Call) {
		if c.HTTPStatus != 200 || c.Flags&(h2.FlagGap|h2.FlagConnClosed|h2.FlagEvicted) != 0 {
			bad++
		}
		m.Append(spans, c)
		if emitted++; spans.Len() >= batch {
			spans = ptrace.NewSpanSlice()
		}
	}, nil)
	proc := h2.Proc{PID: 4242, TID: 4242, StartNs: 1}
	var (
		id  h2.ConnID
		off [2]uint64
		now uint64
		ch  = h2.Chunk{Proc: proc, SeqKnown: true, HTTP1: true}
	)
	feed := func(at int, data []byte, start bool, d h2.Dir) {
		ch.Dir, ch.Offset, ch.Data, ch.TimeNs, ch.CallStart = d, off[d]+uint64(at), data, now, start
		ch.Seq = uint32(1000+1000*int(d)) + uint32(ch.Offset)
		tr.Chunk(&ch)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%perConn == 0 {
			if id != 0 {
				tr.ConnClose(&h2.ConnClose{Conn: id, TimeNs: now})
			}
			id++
			off = [2]uint64{}
			now += 1000
			tr.ConnOpen(&h2.ConnOpen{Conn: id, TimeNs: now, Proc: proc, Local: local, Remote: remote, Role: role, HTTP1: true})
			ch.Conn = id
		}
		for _, c := range calls {
			now += 1000
			feed(0, c.head, true, c.dir)
			if c.tail != nil {
				feed(c.tailAt, c.tail, false, c.dir)
			}
			off[c.dir] += uint64(c.n)
		}
	}
	b.StopTimer()
	if st := tr.Stats(); emitted != b.N || bad != 0 || st.SyncLostTotal() != 0 {
		b.Fatalf("%d calls (%d not a whole 200) for %d requests: %+v", emitted, bad, b.N, st)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
