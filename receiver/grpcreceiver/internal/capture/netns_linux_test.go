// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// Two loopback HTTP/2 connections to the same address and port, one in the
// host's network namespace and one in a new one (two pods): each open
// carries its socket's namespace, the inode of /proc/self/ns/net and of the
// new namespace as the thread that made it sees it.
func TestCaptureNetNS(t *testing.T) {
	testutil.RequireRoot(t)
	c, err := Open(Options{Hook: HookAuto, RingSlots: 1 << 14, MaxConns: 1024, HeaderCap: 16384})
	require.NoError(t, err)
	defer c.Close()
	hostNS := nsInode(t, "/proc/self/ns/net")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := port(t, ln.Addr().String())
	require.NoError(t, h2Pair(ln))

	type result struct {
		ns  uint32
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, in the new namespace, ends with this goroutine.
		runtime.LockOSThread()
		ns, err := inNewNetNS(func() error {
			ln2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(int(p)))
			if err != nil {
				return err
			}
			defer ln2.Close()
			return h2Pair(ln2)
		})
		done <- result{ns, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection in the new network namespace did not finish")
	}
	require.NoError(t, r.err)
	require.NotZero(t, r.ns)
	require.NotEqual(t, hostNS, r.ns)

	rec := newRecorder()
	dec := NewDecoder(rec)
	perNS := map[uint32]int{}
	require.Eventually(t, func() bool {
		drain(c, dec)
		clear(perNS)
		for _, o := range rec.opens {
			if o.Local.Port == p || o.Remote.Port == p {
				perNS[o.NetNS]++
			}
		}
		return perNS[hostNS]+perNS[r.ns] >= 4
	}, 10*time.Second, 20*time.Millisecond)
	t.Logf("host netns %d, new %d: opens per netns %v", hostNS, r.ns, perNS)
	assert.Equal(t, map[uint32]int{hostNS: 2, r.ns: 2}, perNS, "the client and server socket in each namespace")
	for _, o := range rec.opens {
		if o.Local.Port == p || o.Remote.Port == p {
			assert.Contains(t, []h2.Role{h2.RoleClient, h2.RoleServer}, o.Role)
		}
	}
}

// inNewNetNS moves the calling thread (locked) into a new network
// namespace, brings its loopback up and runs f there; it returns the
// namespace's inode as the thread sees it.
func inNewNetNS(f func() error) (uint32, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return 0, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return 0, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return 0, fmt.Errorf("lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return 0, fmt.Errorf("lo up: %w", err)
	}
	return uint32(st.Ino), f()
}

func nsInode(t *testing.T, path string) uint32 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return uint32(st.Ino)
}

// h2Pair connects to ln and opens HTTP/2 both ways: the client preface and
// a SETTINGS frame, the server's SETTINGS; both read what the other sent.
// The sockets are made on the calling thread (its network namespace).
func h2Pair(ln net.Listener) error {
	settings := []byte{0, 0, 0, 4, 0, 0, 0, 0, 0}
	cl, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	sv, err := ln.Accept()
	if err != nil {
		return err
	}
	defer sv.Close()
	if _, err := cl.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), settings...)); err != nil {
		return err
	}
	if _, err := sv.Write(settings); err != nil {
		return err
	}
	if _, err := io.ReadFull(sv, make([]byte, 24+9)); err != nil {
		return err
	}
	_, err = io.ReadFull(cl, make([]byte, 9))
	return err
}
