//go:build linux

package seqbpf

import (
	"encoding/binary"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CAP_BPF, CAP_PERFMON); CI runs as root")
	}
}

func TestOpenCaptureClose(t *testing.T) {
	requireRoot(t)
	s, err := Open(Options{RingSlots: 4096, Events: []int{EvFork, EvExec, EvExit}, MaxArgs: 256})
	require.NoError(t, err)
	defer s.Close()

	cmd := exec.Command("/bin/sh", "-c", "/bin/true seqbpf-marker; exit 7")
	err = cmd.Run()
	require.Error(t, err)

	head := binary.LittleEndian.Uint64(s.Control()[0:8])
	c, err := s.Counters()
	require.NoError(t, err)
	t.Logf("head=%d counters=%+v", head, c)
	require.GreaterOrEqual(t, c.Events[EvFork], uint64(2))
	require.GreaterOrEqual(t, c.Events[EvExec], uint64(2))
	require.GreaterOrEqual(t, c.Events[EvExit], uint64(2))
	require.Equal(t, c.TotalTickets(), head)
}
