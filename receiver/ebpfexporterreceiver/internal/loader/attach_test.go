// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanAttach(t *testing.T) {
	for _, c := range []struct {
		section string
		want    attachPlan
	}{
		{"tracepoint/sched/sched_switch", attachPlan{kind: attachTracepoint, group: "sched", name: "sched_switch"}},
		{"tp/syscalls/sys_enter_getppid", attachPlan{kind: attachTracepoint, group: "syscalls", name: "sys_enter_getppid"}},
		{"tracepoint", attachPlan{kind: attachNone}},
		{"raw_tp/sys_enter", attachPlan{kind: attachRawTracepoint, name: "sys_enter"}},
		{"raw_tracepoint/sched_switch", attachPlan{kind: attachRawTracepoint, name: "sched_switch"}},
		{"tp_btf/sched_wakeup", attachPlan{kind: attachTracing, name: "sched_wakeup"}},
		{"fentry/do_nanosleep", attachPlan{kind: attachTracing, name: "do_nanosleep"}},
		{"fexit/vfs_read", attachPlan{kind: attachTracing, name: "vfs_read"}},
		{"lsm/file_open", attachPlan{kind: attachLSM, name: "file_open"}},
		{"kprobe/do_nanosleep", attachPlan{kind: attachKprobe, symbol: "do_nanosleep"}},
		{"kprobe/tcp_sendmsg+0x10", attachPlan{kind: attachKprobe, symbol: "tcp_sendmsg", offset: 16}},
		{"kretprobe/vfs_read", attachPlan{kind: attachKretprobe, symbol: "vfs_read"}},
		{"kprobe", attachPlan{kind: attachNone}},
		{"ksyscall/getppid", attachPlan{kind: attachKprobe, symbol: "getppid", syscall: true}},
		{"kretsyscall/getppid", attachPlan{kind: attachKretprobe, symbol: "getppid", syscall: true}},
		{"uprobe/libc.so.6:malloc", attachPlan{kind: attachUprobe, binary: "libc.so.6", symbol: "malloc"}},
		{"uretprobe//usr/bin/bash:readline", attachPlan{kind: attachUretprobe, binary: "/usr/bin/bash", symbol: "readline"}},
		{"uprobe/bash:readline+4", attachPlan{kind: attachUprobe, binary: "bash", symbol: "readline", offset: 4}},
		{"uprobe//bin/true:0x1234", attachPlan{kind: attachUprobe, binary: "/bin/true", address: 0x1234}},
		{"uprobe.s/libc.so.6:free", attachPlan{kind: attachUprobe, binary: "libc.so.6", symbol: "free"}},
		{"uprobe", attachPlan{kind: attachNone}},
		{"perf_event/type=1,config=0,frequency=99", attachPlan{kind: attachPerfEvent, perf: perfEventAttr{typ: 1, config: 0, frequency: 99}}},
		{"perf_event", attachPlan{kind: attachNone}},
		{"xdp/eth0", attachPlan{kind: attachXDP, iface: "eth0"}},
		{"xdp", attachPlan{kind: attachNone}},
		{"xdp/devmap", attachPlan{kind: attachNone}},
		{"?tp/sched/sched_switch", attachPlan{kind: attachTracepoint, group: "sched", name: "sched_switch", disabled: true}},
	} {
		t.Run(c.section, func(t *testing.T) {
			got, err := planAttach(c.section)
			require.NoError(t, err)
			c.want.section = c.section
			assert.Equal(t, c.want, got)
		})
	}
}

func TestPlanAttachRefuses(t *testing.T) {
	for _, c := range []struct {
		section, msg string
		notSupported bool
	}{
		{"usdt/libc.so.6:libc:setjmp", "USDT probes are not supported", true},
		{"usdt", "USDT probes are not supported", true},
		{"socket", "auto-attaching this program type is not supported", true},
		{"cgroup_skb/egress", "auto-attaching this program type is not supported", true},
		{"iter/task", "auto-attaching this program type is not supported", true},
		{"kprobe.multi/tcp_*", "auto-attaching this program type is not supported", true},
		{"tracepoint/sched", "want tracepoint/<category>/<name>", false},
		{"tp_btf", "tp_btf needs a target", false},
		{"uprobe/libc.so.6", "want uprobe/<binary>:<function>", false},
		{"kprobe/foo+bar", `bad offset "bar"`, false},
		{"kretprobe/foo+8", "kretprobe does not take an offset", false},
		{"perf_event/type=1,sample=3", `unknown perf_event item "sample=3"`, false},
		{"perf_event/type=x", `error parsing value of item "type=x" as integer`, false},
	} {
		t.Run(c.section, func(t *testing.T) {
			_, err := planAttach(c.section)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
			assert.Contains(t, err.Error(), c.section)
			if c.notSupported {
				assert.ErrorIs(t, err, ErrNotSupported)
			}
		})
	}
}

func TestResolveBinary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libfoo.so.1")
	require.NoError(t, os.WriteFile(lib, nil, 0o644))
	bin := filepath.Join(dir, "foo")
	require.NoError(t, os.WriteFile(bin, nil, 0o755))
	notExec := filepath.Join(dir, "bar")
	require.NoError(t, os.WriteFile(notExec, nil, 0o644))

	t.Setenv("LD_LIBRARY_PATH", "/nonexistent:"+dir)
	t.Setenv("PATH", dir)

	got, err := resolveBinary("libfoo.so.1")
	require.NoError(t, err)
	assert.Equal(t, lib, got)

	got, err = resolveBinary("foo")
	require.NoError(t, err)
	assert.Equal(t, bin, got)

	_, err = resolveBinary("bar") // in PATH but not executable
	require.Error(t, err)

	got, err = resolveBinary(bin) // a path is used as is
	require.NoError(t, err)
	assert.Equal(t, bin, got)

	_, err = resolveBinary(filepath.Join(dir, "nope"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
