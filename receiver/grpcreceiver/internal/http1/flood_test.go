// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package http1

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// floodConfig is a tracker of small bounds for the hostile inputs.
var floodConfig = Config{MaxConns: 64, MaxProbationConns: 32, MaxPipelined: 16, MaxHeaderBytes: 4096, MemoryBudget: 256 << 10}

// checked returns a tracker whose every emitted call is checked, and a
// check of its account (checkTracker) to call between inputs.
func checked(t *testing.T, cfg Config) (*Tracker, *recorder, func()) {
	rec := &recorder{}
	tr := NewTracker(cfg, rec.emit, nil)
	return tr, rec, func() { t.Helper(); checkTracker(t, tr, uint64(len(rec.calls))) }
}

func TestFloods(t *testing.T) {
	for _, tc := range []struct {
		name string
		// feed sends the hostile bytes on connection cp, calling check.
		feed func(cp *capture, check func())
		want func(t *testing.T, st Stats, n uint64)
	}{
		{"request_line", func(cp *capture, check func()) {
			cp.call(h2.Ingress, []byte("GET /"))
			for range 2000 { // a request line that never ends, whole calls
				cp.call(h2.Ingress, []byte(strings.Repeat("a", 512)))
				check()
			}
		}, func(t *testing.T, st Stats, n uint64) {
			if st.SyncLost[LostHeadTooLarge] != n || st.ChunksUnsynced < n*1900 {
				t.Fatalf("%+v", st)
			}
		}},
		{"header_fields", func(cp *capture, check func()) {
			cp.call(h2.Ingress, []byte("GET / HTTP/1.1\r\n"))
			for i := range 5000 {
				cp.call(h2.Ingress, []byte("X-"+strconv.Itoa(i)+": v\r\n"))
				check()
			}
		}, func(t *testing.T, st Stats, n uint64) {
			if st.SyncLost[LostHeadTooLarge] != n || st.RequestHeads != 1 {
				t.Fatalf("%+v", st)
			}
		}},
		{"endless_chunked", func(cp *capture, check func()) {
			cp.call(h2.Ingress, []byte("POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"))
			for range 20000 {
				cp.call(h2.Ingress, []byte("1;ext=x\r\nz\r\n"))
				check()
			}
		}, func(t *testing.T, st Stats, n uint64) {
			if st.SyncLostTotal() != 0 || st.RequestHeads != n+1 || st.BytesParsed < n*20000*12 {
				t.Fatalf("%+v", st)
			}
		}},
		{"never_answered", func(cp *capture, check func()) {
			for i := range 5000 {
				cp.call(h2.Ingress, []byte("GET /"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: "+strings.Repeat("h", 200)+"\r\n\r\n"))
				check()
			}
		}, func(t *testing.T, st Stats, n uint64) {
			if st.RequestHeads != n*5000+1 || st.RequestsOverLimit != n*(5000-16) {
				t.Fatalf("%+v", st)
			}
		}},
		{"slowloris_fields", func(cp *capture, check func()) {
			cp.call(h2.Ingress, []byte("GET / HTTP/1.1\r\n"))
			for range 5000 { // 1 byte a call, never the head's end
				cp.call(h2.Ingress, []byte("x"))
				check()
			}
		}, func(t *testing.T, st Stats, n uint64) {
			if st.SyncLost[LostHeadTooLarge] != n {
				t.Fatalf("%+v", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, check := checked(t, floodConfig)
			var now uint64
			// a real connection first, with a request in flight
			real := newCapture(t, tr, 1, &now, h2.RoleServer)
			real.call(h2.Ingress, []byte("GET /real HTTP/1.1\r\nHost: r\r\n\r\n"))
			// hostile connections beside it
			const n = 8
			for id := h2.ConnID(2); id < 2+n; id++ {
				tc.feed(newCapture(t, tr, id, &now, h2.RoleServer), check)
			}
			tc.want(t, tr.Stats(), n)
			if tr.conns[1] == nil {
				t.Fatalf("the real connection was evicted: %+v", tr.Stats())
			}
		})
	}
}

// TestJunkConnections: thousands of connections that never send a request
// head evict one another (on probation), never a connection that carried
// requests.
func TestJunkConnections(t *testing.T) {
	tr, rec, check := checked(t, Config{MaxConns: 8, MaxProbationConns: 8, MemoryBudget: 64 << 10})
	var now uint64
	var reals []*capture
	for id := h2.ConnID(1); id <= 4; id++ {
		c := newCapture(t, tr, id, &now, h2.RoleClient)
		c.call(h2.Egress, []byte("GET /r HTTP/1.1\r\nHost: r\r\n\r\n"))
		reals = append(reals, c)
	}
	for id := h2.ConnID(100); id < 5100; id++ {
		c := newCapture(t, tr, id, &now, h2.RoleClient)
		c.call(h2.Egress, []byte("GET /"+strings.Repeat("j", 3000))) // a head never ended
		c.call(h2.Ingress, []byte("junk"))
		check()
	}
	for _, c := range reals {
		c.call(h2.Ingress, []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	}
	st := tr.Stats()
	if len(rec.calls) != 4 || st.ProbationEvictedLimit+st.ProbationEvictedBudget < 4990 || st.ConnsEvictedBudget+st.ConnsEvictedLimit != 0 {
		t.Fatalf("%d calls; %+v", len(rec.calls), st)
	}
	for _, c := range rec.calls {
		if c.HTTPStatus != 200 || c.Has(h2.FlagEvicted) {
			t.Fatalf("%+v", c)
		}
	}
}

// TestBudgetEviction: connections with requests in flight beyond the
// budget: the least recently active go first, their requests emitted with
// FlagEvicted; the account stays exact.
func TestBudgetEviction(t *testing.T) {
	tr, rec, check := checked(t, Config{MaxPipelined: 64, MemoryBudget: 128 << 10})
	var now uint64
	for id := h2.ConnID(1); id <= 200; id++ {
		c := newCapture(t, tr, id, &now, h2.RoleServer)
		for i := range 20 {
			c.call(h2.Ingress, []byte("GET /"+strconv.Itoa(i)+"/"+strings.Repeat("p", 500)+" HTTP/1.1\r\nUser-Agent: "+strings.Repeat("u", 300)+"\r\n\r\n"))
		}
		check()
	}
	st := tr.Stats()
	if st.ConnsEvictedBudget == 0 || st.CallsEvicted != uint64(len(rec.calls)) || tr.conns[200] == nil || tr.conns[1] != nil {
		t.Fatalf("%d calls; %+v", len(rec.calls), st)
	}
	for _, c := range rec.calls {
		if !c.Has(h2.FlagEvicted) || c.HTTPStatus != 0 {
			t.Fatalf("%+v", c)
		}
	}
}

func TestExpire(t *testing.T) {
	tr, rec, check := checked(t, Config{})
	var now uint64
	c := newCapture(t, tr, 1, &now, h2.RoleClient)
	c.call(h2.Egress, []byte("GET /idle HTTP/1.1\r\nHost: h\r\n\r\n"))
	tr.Expire(now + uint64(DefaultIdleTimeout) - 1)
	if len(rec.calls) != 0 {
		t.Fatal("expired early")
	}
	tr.Expire(now + uint64(DefaultIdleTimeout))
	check()
	if len(rec.calls) != 1 || !rec.calls[0].Has(h2.FlagEvicted) || rec.calls[0].EndNs != now || tr.MemoryUsed() != 0 || tr.Stats().ConnsEvicted != 1 {
		t.Fatalf("%+v; %+v", rec.calls, tr.Stats())
	}
}

// TestMemoryHog: a few connections that each hold the most a connection
// may (MaxPipelined requests never answered, every string at
// MaxFieldBytes), kept more recently active than everyone else's, fill the
// budget: the tracker evicts them, not the connections of the other users
// with a request in flight (each holds its fair share or less). Before
// the heavy pool, the least recently active went first: 30 connections of
// the hog's blinded every other one.
func TestMemoryHog(t *testing.T) {
	cfg := Config{MaxConns: 256, MaxProbationConns: 64, MaxPipelined: 64, MemoryBudget: 1 << 20}
	tr, rec, check := checked(t, cfg)
	var now uint64
	var victims []*capture
	for id := h2.ConnID(1); id <= 100; id++ {
		c := newCapture(t, tr, id, &now, h2.RoleServer)
		c.call(h2.Ingress, []byte("GET /v/"+strconv.Itoa(int(id))+" HTTP/1.1\r\nHost: victim\r\nUser-Agent: curl/8\r\n\r\n"))
		victims = append(victims, c)
	}
	big := strings.Repeat("x", DefaultMaxFieldBytes)
	req := []byte("POST /" + big + " HTTP/1.1\r\nHost: " + big + "\r\nUser-Agent: " + big + "\r\nContent-Type: " + big + "\r\n\r\n")
	var hogs []*capture
	for id := h2.ConnID(1000); id < 1030; id++ {
		hogs = append(hogs, newCapture(t, tr, id, &now, h2.RoleServer))
	}
	for range cfg.MaxPipelined {
		for _, c := range hogs {
			c.call(h2.Ingress, req)
		}
		check()
	}
	for _, c := range victims {
		c.call(h2.Egress, []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	}
	check()
	st := tr.Stats()
	var ok int
	for _, c := range rec.calls {
		if c.Authority == "victim" && c.HTTPStatus == 200 && !c.Has(h2.FlagEvicted) {
			ok++
		}
	}
	if ok != len(victims) || st.ConnsEvictedBudget == 0 {
		t.Fatalf("%d of %d victims' calls whole; %+v", ok, len(victims), st)
	}
}

// TestFieldValuesAllocate: a header field whose value the tracker looks
// into (a Content-Length list, a Transfer-Encoding list) allocates no more
// than any head of its length: a 16 KiB Content-Length of commas allocated
// 24 bytes a byte (384 KiB a head, 12 ns a byte) while its parts were
// split into a slice.
func TestFieldValuesAllocate(t *testing.T) {
	const n = 16 << 10
	allocated := func(field string) uint64 {
		tr := NewTracker(Config{MaxHeaderBytes: 1 << 20}, func(*h2.Call) {}, nil)
		var now uint64
		cp := newCapture(t, tr, 1, &now, h2.RoleServer)
		cp.whole = true
		b := []byte("GET / HTTP/1.1\r\n" + field + "\r\n\r\n")
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cp.call(h2.Ingress, b)
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	var lines strings.Builder
	for i := 0; lines.Len() < n; i++ {
		lines.WriteString("X-" + strconv.Itoa(i) + ": v\r\n")
	}
	benign := allocated(strings.TrimSuffix(lines.String(), "\r\n"))
	for _, tc := range []struct{ name, field string }{
		{"content_length_commas", "Content-Length: " + strings.Repeat(",", n)},
		{"content_length_list", "Content-Length: 1" + strings.Repeat(", 1", n/3)},
		{"transfer_encoding_list", "Transfer-Encoding: " + strings.Repeat("gzip,", n/5) + "chunked"},
	} {
		if got := allocated(tc.field); got > 2*benign {
			t.Errorf("%s: %d bytes allocated, a benign head of its length %d", tc.name, got, benign)
		}
	}
}
