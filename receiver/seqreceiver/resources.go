// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package seqreceiver

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/pdatamap"
)

// A batch is read into one resource, the host's. Before it goes to the
// pipeline, the records and spans of processes in containers move to one
// resource per container (container.id, container.runtime.name,
// k8s.pod.uid, with the host resource's service.name), picked by
// resourceOf from the process.linux.cgroup they were given at their event.
// Each resource keeps its records in ticket order; across resources the
// order is in seq.number. The host's resource comes first, then the
// containers' in the order their first record was read.

// resourceKey names a container's resource; the zero key is the host's.
type resourceKey struct {
	containerID, podUID, runtime string
	delegatedID                  string // a container in a user's delegated subtree: never containerID
}

// resourceOf picks the resource of a record by its process.linux.cgroup,
// with parse (the resolver's: identity only from paths under the runtimes'
// roots). A runtime's monitor (conmon) is not in its container: it goes to
// the pod's resource, or the host's.
func resourceOf(cgroup string, parse func(string) cgroups.Info) resourceKey {
	path, ok := strings.CutPrefix(cgroup, "0::")
	if !ok {
		return resourceKey{}
	}
	info := parse(path)
	if info.Monitor {
		return resourceKey{podUID: info.PodUID}
	}
	return resourceKey{containerID: info.ContainerID, podUID: info.PodUID, runtime: info.Runtime, delegatedID: info.DelegatedID}
}

func (k resourceKey) put(attrs pcommon.Map) {
	if k.containerID != "" {
		attrs.PutStr(pdatamap.AttrContainerID, k.containerID)
	}
	if k.runtime != "" {
		attrs.PutStr(pdatamap.AttrContainerRuntimeName, k.runtime)
	}
	if k.podUID != "" {
		attrs.PutStr(pdatamap.AttrK8SPodUID, k.podUID)
	}
	if k.delegatedID != "" {
		attrs.PutStr(pdatamap.AttrContainerDelegatedID, k.delegatedID)
	}
}

// picker caches resourceOf by process.linux.cgroup for one batch.
type picker struct {
	parse func(string) cgroups.Info
	keys  map[string]resourceKey
}

func (p picker) pick(attrs pcommon.Map) resourceKey {
	v, ok := attrs.Get(pdatamap.AttrProcessLinuxCgroup)
	if !ok {
		return resourceKey{}
	}
	s := v.Str()
	k, ok := p.keys[s]
	if !ok {
		k = resourceOf(s, p.parse)
		p.keys[s] = k
	}
	return k
}

// splitLogs moves the records of containers out of the first (the host's)
// resource of ld into one resource per container, by parse.
func splitLogs(ld plog.Logs, parse func(string) cgroups.Info) {
	rls := ld.ResourceLogs()
	if rls.Len() == 0 || rls.At(0).ScopeLogs().Len() == 0 {
		return
	}
	host := rls.At(0)
	scope := host.ScopeLogs().At(0)
	recs := scope.LogRecords()
	p := picker{parse: parse, keys: map[string]resourceKey{}}
	dsts := map[resourceKey]plog.LogRecordSlice{}
	moved := false
	for i := 0; i < recs.Len(); i++ {
		lr := recs.At(i)
		k := p.pick(lr.Attributes())
		if k == (resourceKey{}) {
			continue
		}
		dst, ok := dsts[k]
		if !ok {
			rl := rls.AppendEmpty()
			host.Resource().CopyTo(rl.Resource())
			k.put(rl.Resource().Attributes())
			sl := rl.ScopeLogs().AppendEmpty()
			scope.Scope().CopyTo(sl.Scope())
			dst = sl.LogRecords()
			dsts[k] = dst
		}
		lr.MoveTo(dst.AppendEmpty())
		moved = true
	}
	if !moved {
		return
	}
	// A record moved out is left empty: every record has seq.number.
	recs.RemoveIf(func(lr plog.LogRecord) bool { return lr.Attributes().Len() == 0 })
	if recs.Len() == 0 {
		rls.RemoveIf(func(rl plog.ResourceLogs) bool {
			return rl.ScopeLogs().Len() > 0 && rl.ScopeLogs().At(0).LogRecords().Len() == 0
		})
	}
}

// splitSpans moves the spans of containers out of the first (the host's)
// resource of td into one resource per container, by parse.
func splitSpans(td ptrace.Traces, parse func(string) cgroups.Info) {
	rss := td.ResourceSpans()
	if rss.Len() == 0 || rss.At(0).ScopeSpans().Len() == 0 {
		return
	}
	host := rss.At(0)
	scope := host.ScopeSpans().At(0)
	spans := scope.Spans()
	p := picker{parse: parse, keys: map[string]resourceKey{}}
	dsts := map[resourceKey]ptrace.SpanSlice{}
	moved := false
	for i := 0; i < spans.Len(); i++ {
		s := spans.At(i)
		k := p.pick(s.Attributes())
		if k == (resourceKey{}) {
			continue
		}
		dst, ok := dsts[k]
		if !ok {
			rs := rss.AppendEmpty()
			host.Resource().CopyTo(rs.Resource())
			k.put(rs.Resource().Attributes())
			ss := rs.ScopeSpans().AppendEmpty()
			scope.Scope().CopyTo(ss.Scope())
			dst = ss.Spans()
			dsts[k] = dst
		}
		s.MoveTo(dst.AppendEmpty())
		moved = true
	}
	if !moved {
		return
	}
	// A span moved out is left empty: every span has a span id.
	spans.RemoveIf(func(s ptrace.Span) bool { return s.SpanID().IsEmpty() })
	if spans.Len() == 0 {
		rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
			return rs.ScopeSpans().Len() > 0 && rs.ScopeSpans().At(0).Spans().Len() == 0
		})
	}
}
