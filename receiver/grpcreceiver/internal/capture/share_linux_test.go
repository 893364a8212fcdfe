// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The shares' settings reach the loaded programs: read back from them.
func TestShareSettingsLoaded(t *testing.T) {
	testutil.RequireRoot(t)
	for _, noFetch := range []bool{false, true} {
		c, err := Open(Options{Hook: HookRawSyscalls, RingSlots: 1 << 12, MaxConns: 64, HeaderCap: 4096,
			Rate: 3 << 20, UserRate: 5 << 20, FrameCost: 77, MaxUsers: 333, NoFetch: noFetch})
		require.NoError(t, err, "nofetch %v", noFetch)
		for name, want := range map[string]uint64{
			"h2_rate": 3 << 20, "h2_frame_cost": 77, "h2_user_rate": 5 << 20,
			"h2_user_burst": uint64(burst(5<<20, (1<<12)*ring.SlotSize)),
		} {
			var got uint64
			require.NoError(t, c.coll.Variables[name].Get(&got), name)
			assert.Equal(t, want, got, "%s (nofetch %v)", name, noFetch)
		}
		ncpu, err := ebpf.PossibleCPU()
		require.NoError(t, err)
		assert.Equal(t, uint32(333+lruSlack*ncpu), c.coll.Maps["h2_users"].MaxEntries(), "h2_users")
		require.NoError(t, c.Close())
	}
	_, err := Open(Options{RingSlots: 1 << 12, MaxConns: 64, HeaderCap: 4096, FrameCost: MaxFrameCost + 1})
	require.ErrorContains(t, err, "frame cost")
}

var clientStart = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)

// rstFlood runs, on a thread of its own that a raw setresuid makes uid's
// (that thread's only), conns loopback TCP connections; on each the client
// sends the preface and an empty SETTINGS frame, then batches of frames
// RST_STREAM frames of streams never opened until d passed, and the server
// end (the same thread) reads them. It returns the listening port and the
// frames sent.
func rstFlood(t *testing.T, uid, conns, frames int, d time.Duration) (uint16, int) {
	type result struct {
		port uint16
		sent int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var r result
		defer func() { done <- r }()
		fail := func(what string, err error) { r.err = os.NewSyscallError(what, err) }
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			fail("setresuid", e)
			return
		}
		ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fail("socket", err)
			return
		}
		defer unix.Close(ln)
		if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			fail("bind", err)
			return
		}
		_ = unix.Listen(ln, conns)
		sa, _ := unix.Getsockname(ln)
		r.port = uint16(sa.(*unix.SockaddrInet4).Port)
		var cl, sv []int
		defer func() {
			for _, fd := range append(cl, sv...) {
				_ = unix.Close(fd)
			}
		}()
		for range conns {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				fail("socket", err)
				return
			}
			cl = append(cl, fd)
			if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: int(r.port)}); err != nil {
				fail("connect", err)
				return
			}
			s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
			if err != nil {
				fail("accept", err)
				return
			}
			sv = append(sv, s)
		}
		buf := make([]byte, 13*frames)
		xfer := func(c, s int, b []byte) error {
			if _, err := unix.Write(c, b); err != nil {
				return err
			}
			for n := 0; n < len(b); {
				m, err := unix.Read(s, buf[:len(b)-n])
				if err != nil {
					return err
				}
				n += m
			}
			return nil
		}
		for i := range conns {
			if err := xfer(cl[i], sv[i], clientStart); err != nil {
				fail("preface", err)
				return
			}
		}
		batch := rstFrames(frames, 1)
		for end := time.Now().Add(d); time.Now().Before(end); {
			for i := range conns {
				if err := xfer(cl[i], sv[i], batch); err != nil {
					fail("flood", err)
					return
				}
				r.sent += frames
			}
		}
	}()
	r := <-done
	require.NoError(t, r.err)
	return r.port, r.sent
}

// canaryCalls runs, on a thread of its own made uid's as in rstFlood, one
// loopback HTTP/2 connection (preface, SETTINGS) carrying n calls, one every
// gap: a request HEADERS frame the server end reads and a response HEADERS
// frame the client end reads. It returns the listening port.
func canaryCalls(uid, n int, gap time.Duration) (uint16, error) {
	done := make(chan error, 1)
	var port uint16
	go func() {
		runtime.LockOSThread()
		done <- func() error {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
				return os.NewSyscallError("setresuid", e)
			}
			ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(ln)
			if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
				return err
			}
			_ = unix.Listen(ln, 1)
			sa, _ := unix.Getsockname(ln)
			port = uint16(sa.(*unix.SockaddrInet4).Port)
			c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(c)
			if err := unix.Connect(c, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: int(port)}); err != nil {
				return err
			}
			s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
			if err != nil {
				return err
			}
			defer unix.Close(s)
			buf := make([]byte, 64)
			xfer := func(w, r int, b []byte) error {
				if _, err := unix.Write(w, b); err != nil {
					return err
				}
				for got := 0; got < len(b); {
					m, err := unix.Read(r, buf[:len(b)-got])
					if err != nil {
						return err
					}
					got += m
				}
				return nil
			}
			if err := xfer(c, s, clientStart); err != nil {
				return err
			}
			if err := xfer(s, c, []byte{0, 0, 0, 4, 0, 0, 0, 0, 0}); err != nil {
				return err
			}
			for i := range n {
				sid := uint32(1 + 2*i)
				req := binary.BigEndian.AppendUint32([]byte{0, 0, 3, 1, 5}, sid)
				if err := xfer(c, s, append(req, 0x82, 0x86, 0x84)); err != nil { // GET http /
					return err
				}
				resp := binary.BigEndian.AppendUint32([]byte{0, 0, 1, 1, 5}, sid)
				if err := xfer(s, c, append(resp, 0x88)); err != nil { // :status 200
					return err
				}
				time.Sleep(gap)
			}
			return nil
		}()
	}()
	return port, <-done
}

// One user floods RST_STREAM frames of streams never opened on eight
// connections (the cheapest frames to send, among the dearest for the
// tracker per byte) beside the calls of another user (a canary): what the
// kernel delivers of the flood is bounded by the shares counted in frames
// (each costs its 13 bytes and FrameCost): per connection by Rate, for the
// user's sixteen sockets together by UserRate (throttled_user counts it), and
// every canary call is captured. Before frames were charged, and without
// a share per user, the flood got Rate/13 frames a second per socket.
func TestCaptureFrameShare(t *testing.T) {
	testutil.RequireRoot(t)
	hook := hooksHere(t)[0]
	const (
		rate, userRate = 1 << 20, 4 << 20
		floodConns     = 8
		frameCost      = 256
		ringSlots      = 1 << 16
		floodFor       = 3 * time.Second
		batch          = 300 // frames per write
	)
	c, err := Open(Options{Hook: hook, RingSlots: ringSlots, MaxConns: 64, HeaderCap: 16384,
		Rate: rate, UserRate: userRate, FrameCost: frameCost})
	require.NoError(t, err)
	defer c.Close()
	// The canary: another user's calls, beside the flood.
	const calls = 300
	canary := make(chan error, 1)
	var cport uint16
	go func() {
		var err error
		cport, err = canaryCalls(65533, calls, floodFor/calls)
		canary <- err
	}()
	start := time.Now()
	fport, sent := rstFlood(t, 65534, floodConns, batch, floodFor)
	took := time.Since(start).Seconds()
	require.NoError(t, <-canary)

	rec := newRecorder()
	dec := NewDecoder(rec)
	drain(c, dec)
	cnt, err := c.Counters()
	require.NoError(t, err)
	assert.Zero(t, rec.lost, "ring records lost")

	// What reached user space of the flood, per socket, in frames (each
	// RST_STREAM frame is 13 bytes copied; the preface and SETTINGS 33).
	perFrame := float64(13 + frameCost)
	connBound := (float64(burst(rate, ringSlots*ring.SlotSize))+rate*took)/perFrame + batch
	userBound := (float64(burst(userRate, ringSlots*ring.SlotSize))+userRate*took)/perFrame + 2*floodConns*batch
	var total float64
	socks := 0
	for id, o := range rec.opens {
		if o.Local.Port != fport && o.Remote.Port != fport {
			continue
		}
		socks++
		var n int
		if ch := rec.chunks[id]; ch != nil {
			for _, dir := range ch {
				for _, x := range dir {
					n += len(x.Data)
				}
			}
		}
		frames := float64(max(n-len(clientStart), 0)) / 13
		total += frames
		t.Logf("flood socket role %d: %.0f frames delivered (bound %.0f)", o.Role, frames, connBound)
		assert.LessOrEqual(t, frames, connBound, "a flood socket's frames: within its connection's share")
	}
	t.Logf("hook %s: %d frames sent in %.1fs, %.0f delivered (user bound %.0f); throttled %d, throttled_user %d, frame_tokens %d",
		hook, sent, took, total, userBound, cnt.Throttled, cnt.ThrottledUser, cnt.FrameTokens)
	assert.Equal(t, 2*floodConns, socks, "the flood's sockets found HTTP/2")
	assert.LessOrEqual(t, total, userBound, "the flooding user's frames: within its share")
	assert.Positive(t, cnt.ThrottledUser, "the user's share bit (throttled_user)")
	assert.GreaterOrEqual(t, cnt.FrameTokens, uint64(total*frameCost), "frames charged (frame_tokens)")

	n := 0
	for id, o := range rec.opens {
		if o.Local.Port != cport && o.Remote.Port != cport {
			continue
		}
		n++
		ch := rec.chunks[id]
		require.NotNil(t, ch, "the canary socket's chunks")
		for dir := range 2 {
			start := uint64(0)
			if (o.Role == h2.RoleClient) == (dir == int(h2.Egress)) {
				start = 24 // the client preface
			}
			fs := walkFrames(t, ch[dir], start, 0)
			assert.Len(t, fs.headers, calls, "role %d dir %d: every canary call's HEADERS", o.Role, dir)
		}
	}
	assert.Equal(t, 2, n, "the canary connection's two sockets")
}
