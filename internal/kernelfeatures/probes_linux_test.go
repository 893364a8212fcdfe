// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package kernelfeatures

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf/features"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The probe's atomic instructions reach the kernel with their operation in
// the immediate: without it each is the plain add that Linux 5.10 takes, and
// the probe passes on kernels that refuse the producers.
func TestAtomicsProbeEncoding(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, atomicsProbe().Marshal(&b, binary.LittleEndian))
	var imms []int32
	raw := b.Bytes()
	for i := 0; i+8 <= len(raw); i += 8 {
		if raw[i] == 0xdb { // BPF_STX | BPF_ATOMIC | BPF_DW
			imms = append(imms, int32(binary.LittleEndian.Uint32(raw[i+4:])))
		}
	}
	require.Equal(t, []int32{immFetchAdd, immXchg, immCmpXchg}, imms)
}

// byRelease are the features every kernel of their release has, whatever
// its config (the kernels the tests run on are built with BTF): a kernel
// that release or newer whose probe says otherwise is a broken probe.
var byRelease = map[*Feature]uint32{
	Mmapable:    kv(5, 5),
	RingBuf:     kv(5, 8),
	Atomics:     kv(5, 12),
	BTF:         kv(5, 4),
	TPBTF:       kv(5, 5),
	BPFLoop:     kv(5, 17),
	TaskPtRegs:  kv(5, 15),
	UprobeMulti: kv(6, 6),
	// The tracepoints: in every kernel of the release, given BTF.
	InetSockSetState: kv(4, 16),
	SockLength:       kv(6, 3),
}

func kv(major, minor uint32) uint32 { return major<<16 | minor<<8 }

// Every named feature probes on this kernel: those its release brought are
// present (on the 6.18 of the development machine: all of them, kprobes
// and trampolines apart, which its config leaves out), and asking twice
// gives the cached answer.
func TestProbeEveryFeature(t *testing.T) {
	testutil.RequireRoot(t)
	release, err := features.LinuxVersionCode()
	require.NoError(t, err)
	t.Logf("Linux %d.%d", release>>16, release>>8&0xff)
	for _, f := range All {
		err := f.Probe()
		if err != nil {
			t.Log(f.Lacks(err))
		} else {
			t.Logf("has %s", f)
		}
		assert.Equal(t, err, f.Probe(), "%s: the cached answer", f)
		if since, ok := byRelease[f]; ok && release >= since {
			assert.NoError(t, err, "%s on Linux %d.%d", f, release>>16, release>>8&0xff)
		}
	}
	assert.Len(t, byRelease, len(All)-4, "every feature but tracefs's, raw_syscalls' sys_exit, kprobes and trampolines (config, not release) has its release")
	t.Log(Summary(All...))
	_, err = ExitHasGroupDead()
	require.NoError(t, err)
	require.NoError(t, RequireCapabilities("the test"))
	t.Log(fmt.Sprint("PREEMPT_RT: ", Realtime()))
}

// The tracepoints the loaders hook are in the kernel's BTF; a made-up one is
// not, and TracepointProto says so.
func TestTracepoints(t *testing.T) {
	for _, tp := range []string{"sched_process_fork", "sched_process_exec", "sched_process_exit", "inet_sock_set_state", "sys_exit"} {
		assert.True(t, HasTracepoint(tp), tp)
		_, err := TracepointProto(tp)
		assert.NoError(t, err, tp)
	}
	assert.False(t, HasTracepoint("no_such_tracepoint"))
	_, err := TracepointProto("no_such_tracepoint")
	assert.ErrorContains(t, err, "kernel BTF has no no_such_tracepoint tracepoint (btf_trace_no_such_tracepoint)")
}
