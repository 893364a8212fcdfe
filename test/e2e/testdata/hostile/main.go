// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Command hostile is the workloads of the attack suite
// (test/e2e/attack_test.go), run by the test as an unprivileged user, each
// with its benign control of the same bytes. Test code only.
//
//	hostile map PATH               map PATH read-only, print "ready", wait for stdin to close
//	hostile flood TYPE BYTES SECS  one HTTP/2 connection pair on loopback; the client sends
//	                               BYTES of frames of TYPE (rst, ping, settings, window,
//	                               continuation; stream: the benign control, an ordinary
//	                               streaming call's small DATA frames) evenly over SECS;
//	                               prints the bytes sent
//	hostile calls SECS             gRPC unary calls on one connection for SECS (the control of
//	                               flood); prints the bytes both ends wrote
//	hostile write BYTES CHUNK      one HTTP/2 connection pair; the client sends BYTES of
//	                               request frames in writes of CHUNK bytes
//	hostile prefaces N KIND        N connections each sending KIND (full: the 24-byte HTTP/2
//	                               preface; 4: its first 4 bytes; http1: 24 bytes of
//	                               HTTP/1.1; http1-4: its first 4), then idle; prints "ready", waits for stdin to close
//	hostile canary N               a gRPC server and client (cleartext, one connection): prints
//	                               the address, makes N unary calls, waits for a line on stdin,
//	                               makes N more, prints the failed count
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: hostile map|flood|calls|write|prefaces|canary ..."))
	}
	var err error
	a := os.Args[2:]
	switch os.Args[1] {
	case "map":
		err = mapFile(a[0])
	case "flood":
		err = flood(a[0], atoi(a[1]), atoi(a[2]))
	case "calls":
		err = calls(atoi(a[0]))
	case "write":
		err = bigWrite(atoi(a[0]), atoi(a[1]))
	case "prefaces":
		err = prefaces(atoi(a[0]), a[1])
	case "canary":
		err = canary(atoi(a[0]))
	default:
		err = fmt.Errorf("no such workload %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hostile:", err)
	os.Exit(1)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail(err)
	}
	return n
}

func waitStdin() { _, _ = io.Copy(io.Discard, os.Stdin) }

func mapFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE); err != nil {
		return err
	}
	fmt.Println("ready")
	waitStdin()
	return nil
}

// pair is a TCP connection pair on loopback whose server side sends an
// HTTP/2 SETTINGS frame, as a real server does, and discards what it reads.
func pair() (client net.Conn, closeAll func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		_, _ = s.Write(frame(nil, 4, 0, 0, nil))
		accepted <- s
		_, _ = io.Copy(io.Discard, s)
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	s := <-accepted
	if s == nil {
		return nil, nil, fmt.Errorf("accept failed")
	}
	if _, err := io.ReadFull(c, make([]byte, 9)); err != nil {
		return nil, nil, err
	}
	return c, func() { c.Close(); s.Close(); ln.Close() }, nil
}

const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func frame(b []byte, typ, flags uint8, sid uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, sid)
	return append(b, payload...)
}

// unit is one repetition of a flood of typ, from stream id sid on.
func unit(typ string, sid uint32) ([]byte, error) {
	var b []byte
	switch typ {
	case "rst": // RST_STREAM of streams never opened
		for i := range uint32(64) {
			b = frame(b, 3, 0, sid+2*i, []byte{0, 0, 0, 8})
		}
	case "ping":
		for range 64 {
			b = frame(b, 6, 0, 0, make([]byte, 8))
		}
	case "settings":
		for range 64 {
			b = frame(b, 4, 0, 0, []byte{0, 4, 0, 1, 0, 0})
		}
	case "window":
		for range 64 {
			b = frame(b, 8, 0, 0, []byte{0, 0, 0, 1})
		}
	case "continuation": // a HEADERS without END_HEADERS, then 63 CONTINUATIONs
		b = frame(b, 1, 0x1, sid, []byte{0x83})
		for i := range 63 {
			fl := uint8(0)
			if i == 62 {
				fl = 0x4
			}
			b = frame(b, 9, fl, sid, []byte{0x86})
		}
	case "stream": // benign: one ordinary streaming call's small messages (the control)
		if sid == floodBase {
			b = openStream(nil, floodBase)
		}
		msg := append([]byte{0, 0, 0, 0, 11}, "hello world"...)
		for range 64 {
			b = frame(b, 0, 0, floodBase, msg)
		}
	default:
		return nil, fmt.Errorf("no frame type %q; use rst, ping, settings, window, continuation or stream", typ)
	}
	return b, nil
}

// floodBase is the first stream id of a flood: above the streams its
// connection opened first.
const floodBase = 1<<20 | 1

// openStream is a request's HEADERS that leave the stream open.
func openStream(b []byte, sid uint32) []byte {
	path := grpctest.UnaryMethod
	return frame(b, 1, 0x4, sid, append([]byte{0x83, 0x86, 0x04, byte(len(path))}, path...))
}

func flood(typ string, total, secs int) error {
	c, done, err := pair()
	if err != nil {
		return err
	}
	defer done()
	// The preface, and 100 calls in progress (their requests sent, as on
	// any busy channel), before the flood: the same for every type.
	msg := frame([]byte(preface), 4, 0, 0, nil)
	for i := range uint32(100) {
		msg = openStream(msg, 1+2*i)
	}
	if _, err := c.Write(msg); err != nil {
		return err
	}
	msg = msg[:0]
	start := time.Now()
	rate := float64(total) / float64(secs)
	var sent int
	for sid := uint32(floodBase); sent < total; sid += 128 {
		u, err := unit(typ, sid)
		if err != nil {
			return err
		}
		msg = append(msg, u...)
		if len(msg) < 16<<10 {
			continue
		}
		if _, err := c.Write(msg); err != nil {
			return err
		}
		sent += len(msg)
		msg = msg[:0]
		// paced: never ahead of the rate
		if ahead := time.Duration(float64(sent)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	fmt.Println(sent)
	return nil
}

// counting counts the bytes written through its connections.
type counting struct {
	net.Conn
	n *atomic.Int64
}

func (c counting) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return counting{c, l.n}, nil
}

func calls(secs int) error {
	var n atomic.Int64
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, grpctest.TestService())
	go func() { _ = srv.Serve(countingListener{ln, &n}) }()
	defer srv.Stop()
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp4", addr)
			if err != nil {
				return nil, err
			}
			return counting{c, &n}, nil
		}))
	if err != nil {
		return err
	}
	defer cc.Close()
	client := testgrpc.NewTestServiceClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_ = grpctest.Unary(ctx, client, codes.OK, "")
			}
		}()
	}
	wg.Wait()
	fmt.Println(n.Load())
	return nil
}

// request is an ordinary request's frames: HEADERS (POST, a literal :path)
// and a DATA frame of 1 KiB ending the stream.
func request(b []byte, sid uint32) []byte {
	path := grpctest.UnaryMethod
	hb := append([]byte{0x83, 0x86, 0x04, byte(len(path))}, path...)
	b = frame(b, 1, 0x4, sid, hb)
	return frame(b, 0, 0x1, sid, make([]byte, 1024))
}

func bigWrite(total, chunk int) error {
	c, done, err := pair()
	if err != nil {
		return err
	}
	defer done()
	buf := frame([]byte(preface), 4, 0, 0, nil)
	for sid := uint32(1); len(buf) < total; sid += 2 {
		buf = request(buf, sid)
	}
	buf = buf[:total]
	for off := 0; off < len(buf); off += chunk {
		if _, err := c.Write(buf[off:min(off+chunk, len(buf))]); err != nil {
			return err
		}
	}
	time.Sleep(time.Second) // the server side reads it all
	fmt.Println(len(buf))
	return nil
}

func prefaces(n int, kind string) error {
	var msg string
	switch kind {
	case "full":
		msg = preface
	case "4":
		msg = preface[:4]
	case "http1":
		msg = "GET / HTTP/1.1\r\nHost: x\r\n"[:24]
	case "http1-4":
		msg = "GET "
	default:
		return fmt.Errorf("no preface kind %q; use full, 4 or http1", kind)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, s) }()
		}
	}()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			return err
		}
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	waitStdin()
	for _, c := range conns {
		c.Close()
	}
	return nil
}

func canary(n int) error {
	srv, err := grpctest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Println(srv.Addr)
	cc, client, err := grpctest.Dial(srv.Addr)
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx := context.Background()
	var failed int64
	for range n {
		if grpctest.Unary(ctx, client, codes.OK, "") != nil {
			failed++
		}
	}
	fmt.Println("half")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	for range n {
		if grpctest.Unary(ctx, client, codes.OK, "") != nil {
			failed++
		}
	}
	fmt.Println(failed)
	return nil
}
