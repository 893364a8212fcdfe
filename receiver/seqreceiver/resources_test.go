// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package seqreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

const (
	ctrA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	ctrB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	pod  = "4f2e8a1c-3b5d-4e6f-9a7b-8c9d0e1f2a3b"
)

var testCgroups = []string{
	"",                               // no process.linux.cgroup: the host
	"0::/user.slice/session-1.scope", // the host
	"0::/system.slice/docker-" + ctrA + ".scope",
	"0::/kubepods/besteffort/pod" + pod + "/libpod-" + ctrB,
	"0::/kubepods/besteffort/pod" + pod + "/libpod-conmon-" + ctrB, // the pod, not the container
	"0::/kubepods/besteffort/pod" + pod,
}

func TestResourceOf(t *testing.T) {
	assert.Equal(t, resourceKey{}, resourceOf("", cgroups.Parse))
	assert.Equal(t, resourceKey{}, resourceOf("0::/", cgroups.Parse))
	assert.Equal(t, resourceKey{}, resourceOf("/docker/"+ctrA, cgroups.Parse), "not a process.linux.cgroup value")
	assert.Equal(t, resourceKey{containerID: ctrA, runtime: "docker"}, resourceOf(testCgroups[2], cgroups.Parse))
	assert.Equal(t, resourceKey{containerID: ctrB, runtime: "podman", podUID: pod}, resourceOf(testCgroups[3], cgroups.Parse))
	assert.Equal(t, resourceKey{podUID: pod}, resourceOf(testCgroups[4], cgroups.Parse))
	assert.Equal(t, resourceKey{podUID: pod}, resourceOf(testCgroups[5], cgroups.Parse))
	// A user's copy of the pod's path: neither the container's id nor the
	// pod's; the user's own container, as they named it.
	assert.Equal(t, resourceKey{delegatedID: ctrB, runtime: "podman"},
		resourceOf("0::/user.slice/user-1000.slice/user@1000.service/app.slice"+testCgroups[3][3:], cgroups.Parse))
	assert.Equal(t, resourceKey{}, resourceOf("0::/system.slice/x.service"+testCgroups[3][3:], cgroups.Parse))
	// Rootless podman: its own resource, its id never container.id.
	rootless := "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + ctrA + ".scope"
	assert.Equal(t, resourceKey{delegatedID: ctrA, runtime: "podman"}, resourceOf(rootless, cgroups.Parse))
	// A hierarchy whose root cannot be placed: nothing is a container.
	assert.Equal(t, resourceKey{}, resourceOf(testCgroups[3], cgroups.ParseUnanchored))
}

func TestResourceDelegated(t *testing.T) {
	k := resourceKey{delegatedID: ctrA, runtime: "podman"}
	r := pcommon.NewResource()
	k.put(r.Attributes())
	assert.Equal(t, map[string]any{pdatamap.AttrContainerDelegatedID: ctrA, pdatamap.AttrContainerRuntimeName: "podman"}, resourceAttrs(r))
}

func resourceAttrs(r pcommon.Resource) map[string]any { return r.Attributes().AsRaw() }

func TestSplitLogs(t *testing.T) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr(pdatamap.AttrServiceName, "svc")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("scope")
	// tickets 0..11 over the cgroups in turn
	for i := range 12 {
		lr := sl.LogRecords().AppendEmpty()
		lr.Attributes().PutInt(pdatamap.AttrSeqNumber, int64(i))
		if cg := testCgroups[i%len(testCgroups)]; cg != "" {
			lr.Attributes().PutStr(pdatamap.AttrProcessLinuxCgroup, cg)
		}
	}
	splitLogs(ld, cgroups.Parse)
	require.Equal(t, 12, ld.LogRecordCount())
	type res struct {
		attrs   map[string]any
		tickets []int64
	}
	var got []res
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		require.Equal(t, 1, rl.ScopeLogs().Len())
		assert.Equal(t, "scope", rl.ScopeLogs().At(0).Scope().Name())
		var tickets []int64
		recs := rl.ScopeLogs().At(0).LogRecords()
		for j := 0; j < recs.Len(); j++ {
			v, _ := recs.At(j).Attributes().Get(pdatamap.AttrSeqNumber)
			tickets = append(tickets, v.Int())
		}
		got = append(got, res{resourceAttrs(rl.Resource()), tickets})
	}
	assert.Equal(t, []res{
		{map[string]any{"service.name": "svc"}, []int64{0, 1, 6, 7}},
		{map[string]any{"service.name": "svc", "container.id": ctrA, "container.runtime.name": "docker"}, []int64{2, 8}},
		{map[string]any{"service.name": "svc", "container.id": ctrB, "container.runtime.name": "podman", "k8s.pod.uid": pod}, []int64{3, 9}},
		{map[string]any{"service.name": "svc", "k8s.pod.uid": pod}, []int64{4, 5, 10, 11}},
	}, got)
}

func TestSplitLogsOnlyContainers(t *testing.T) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	sl := rl.ScopeLogs().AppendEmpty()
	lr := sl.LogRecords().AppendEmpty()
	lr.Attributes().PutInt(pdatamap.AttrSeqNumber, 1)
	lr.Attributes().PutStr(pdatamap.AttrProcessLinuxCgroup, testCgroups[2])
	splitLogs(ld, cgroups.Parse)
	require.Equal(t, 1, ld.ResourceLogs().Len(), "the empty host resource is dropped")
	assert.Equal(t, ctrA, resourceAttrs(ld.ResourceLogs().At(0).Resource())["container.id"])

	empty := plog.NewLogs()
	splitLogs(empty, cgroups.Parse)
	assert.Equal(t, 0, empty.ResourceLogs().Len())
}

func TestSplitSpans(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(pdatamap.AttrServiceName, "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := range 6 {
		s := ss.Spans().AppendEmpty()
		s.SetSpanID(pcommon.SpanID{byte(i + 1)})
		if cg := testCgroups[i]; cg != "" {
			s.Attributes().PutStr(pdatamap.AttrProcessLinuxCgroup, cg)
		}
	}
	splitSpans(td, cgroups.Parse)
	require.Equal(t, 6, td.SpanCount())
	require.Equal(t, 4, td.ResourceSpans().Len())
	ids := func(i int) []byte {
		var out []byte
		sp := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for j := 0; j < sp.Len(); j++ {
			out = append(out, sp.At(j).SpanID()[0])
		}
		return out
	}
	assert.Equal(t, []byte{1, 2}, ids(0))
	assert.Equal(t, []byte{3}, ids(1))
	assert.Equal(t, []byte{4}, ids(2))
	assert.Equal(t, []byte{5, 6}, ids(3))
	assert.Equal(t, map[string]any{"service.name": "svc", "container.id": ctrB, "container.runtime.name": "podman", "k8s.pod.uid": pod}, resourceAttrs(td.ResourceSpans().At(2).Resource()))
}
