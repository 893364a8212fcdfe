// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testcapture

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
)

// Event is one capture record: exactly one of its fields is set.
type Event struct {
	Open  *h2.ConnOpen
	Chunk *h2.Chunk
	Close *h2.ConnClose
}

// Recorder records the syscalls of tapped connections, in the order they
// complete. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	base   time.Time
	events []Event
	nextID h2.ConnID
}

// NewRecorder returns an empty Recorder. Its times are boot-clock-like
// nanoseconds: 1e9 plus the time since NewRecorder.
func NewRecorder() *Recorder { return &Recorder{base: time.Now(), nextID: 100} }

func (r *Recorder) now() uint64 { return uint64(time.Since(r.base)) + 1e9 }

// Events returns the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Tap wraps c: its Writes are Egress and its Reads Ingress chunks of a new
// connection of role and process p.
func (r *Recorder) Tap(c net.Conn, role h2.Role, p h2.Proc) net.Conn {
	r.mu.Lock()
	id := r.nextID
	r.nextID++
	r.mu.Unlock()
	t := &tapped{Conn: c, r: r, id: id, proc: p}
	r.add(Event{Open: &h2.ConnOpen{
		Conn: id, TimeNs: r.now(), Proc: p, Role: role,
		Local: endpoint(c.LocalAddr()), Remote: endpoint(c.RemoteAddr()),
	}})
	return t
}

// Listener taps every connection l accepts as RoleServer of process p.
func (r *Recorder) Listener(l net.Listener, p h2.Proc) net.Listener {
	return &listener{Listener: l, r: r, p: p}
}

// Dialer returns a dial function (for grpc.WithContextDialer) that taps
// its connections as RoleClient of process p.
func (r *Recorder) Dialer(p h2.Proc) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return r.Tap(c, h2.RoleClient, p), nil
	}
}

func endpoint(a net.Addr) h2.Endpoint {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return h2.Endpoint{}
	}
	return h2.Endpoint{Addr: ap.Addr(), Port: ap.Port()}
}

type listener struct {
	net.Listener
	r *Recorder
	p h2.Proc
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.r.Tap(c, h2.RoleServer, l.p), nil
}

type tapped struct {
	net.Conn
	r          *Recorder
	id         h2.ConnID
	proc       h2.Proc
	wmu, rmu   sync.Mutex // hold the stream order of each direction
	woff, roff uint64
	closeOnce  sync.Once
}

func (t *tapped) Write(b []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	now := t.r.now() // a write is stamped at its start, a read at its end
	n, err := t.Conn.Write(b)
	t.record(h2.Egress, &t.woff, b[:n], now)
	return n, err
}

func (t *tapped) Read(b []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	n, err := t.Conn.Read(b)
	t.record(h2.Ingress, &t.roff, b[:n], t.r.now())
	return n, err
}

func (t *tapped) record(d h2.Dir, off *uint64, b []byte, now uint64) {
	if len(b) == 0 {
		return
	}
	t.r.add(Event{Chunk: &h2.Chunk{
		Conn: t.id, Dir: d, Offset: *off, Data: append([]byte(nil), b...),
		TimeNs: now, Proc: t.proc,
	}})
	*off += uint64(len(b))
}

func (t *tapped) Close() error {
	err := t.Conn.Close()
	t.closeOnce.Do(func() {
		t.wmu.Lock()
		w := t.woff
		t.wmu.Unlock()
		t.r.add(Event{Close: &h2.ConnClose{Conn: t.id, TimeNs: t.r.now(), Total: [2]uint64{w, 0}}})
	})
	return err
}
