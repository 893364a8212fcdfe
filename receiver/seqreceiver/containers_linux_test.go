// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package seqreceiver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/cgroups"
	"github.com/otelcol-seq/otelcol-seq/receiver/seqreceiver/internal/metadata"
	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// podmanConf sets up podman once (scripts/podman-setup.sh: packages,
// containers.conf, a busybox image) and returns the CONTAINERS_CONF to use.
func podmanConf(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "otelcol-seq-podman")
	out, err := exec.Command("../../scripts/podman-setup.sh", dir).CombinedOutput()
	require.NoError(t, err, "scripts/podman-setup.sh: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// resourced is a log record with its resource's attributes.
type resourced struct {
	res   map[string]any
	attrs map[string]any
}

func TestPodmanContainerIdentity(t *testing.T) {
	testutil.RequireRoot(t)
	conf := podmanConf(t)

	cfg := createDefaultConfig()
	set := receivertest.NewNopSettings(metadata.Type)
	logSink, traceSink := &consumertest.LogsSink{}, &consumertest.TracesSink{}
	lr, err := NewFactory().CreateLogs(context.Background(), set, cfg, logSink)
	require.NoError(t, err)
	tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traceSink)
	require.NoError(t, err)
	require.NoError(t, lr.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, tr.Start(context.Background(), componenttest.NewNopHost()))
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			assert.NoError(t, lr.Shutdown(context.Background()))
			assert.NoError(t, tr.Shutdown(context.Background()))
		}
	}
	defer stop()

	uid, parent := testutil.KubepodsParent(t)
	marker := fmt.Sprintf("seq-container-%d", rand.Uint32())
	cidFile := filepath.Join(t.TempDir(), "cid")
	cmd := exec.Command("podman", "run", "--rm", "--cgroup-parent="+parent, "--cidfile="+cidFile,
		"localhost/seq-busybox", "/bin/sh", "-c", "/bin/true "+marker+" --password hunter2; /bin/sleep 0.2")
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "podman run: %s", out)
	b, err := os.ReadFile(cidFile)
	require.NoError(t, err)
	cid := strings.TrimSpace(string(b))
	require.Len(t, cid, 64)

	// The exec of /bin/true in the container, and its span.
	var got resourced
	waitFor(t, "the container's exec of /bin/true", func() bool {
		for _, ld := range logSink.AllLogs() {
			for i := 0; i < ld.ResourceLogs().Len(); i++ {
				rl := ld.ResourceLogs().At(i)
				recs := rl.ScopeLogs().At(0).LogRecords()
				for j := 0; j < recs.Len(); j++ {
					a := recs.At(j).Attributes().AsRaw()
					if args, ok := a["process.command_args"].([]any); ok && len(args) > 1 && args[1] == marker {
						got = resourced{rl.Resource().Attributes().AsRaw(), a}
						return true
					}
				}
			}
		}
		return false
	})
	assert.Equal(t, map[string]any{
		"service.name": "linux-processes", "container.id": cid, "container.runtime.name": "podman", "k8s.pod.uid": uid,
	}, got.res)
	assert.Equal(t, "0::"+parent+"/libpod-"+cid, got.attrs["process.linux.cgroup"])
	assert.Equal(t, []any{"/bin/true", marker, "--password", "REDACTED"}, got.attrs["process.command_args"])
	assert.Equal(t, true, got.attrs["seq.args.redacted"])

	// Every record of a pid in the container is in the container's resource.
	pid := got.attrs["process.pid"].(int64)
	for _, ld := range logSink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			id, _ := rl.Resource().Attributes().Get("container.id")
			recs := rl.ScopeLogs().At(0).LogRecords()
			for j := 0; j < recs.Len(); j++ {
				if p, _ := recs.At(j).Attributes().Get("process.pid"); p.Int() == pid && recs.At(j).EventName() != "process.fork" {
					assert.Equal(t, cid, id.Str(), "%s of pid %d", recs.At(j).EventName(), pid)
				}
			}
		}
	}

	time.Sleep(100 * time.Millisecond)
	stop()
	var span pcommon.Map
	var spanRes map[string]any
	for _, td := range traceSink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			spans := rs.ScopeSpans().At(0).Spans()
			for j := 0; j < spans.Len(); j++ {
				if p, _ := spans.At(j).Attributes().Get("process.pid"); p.Int() == pid {
					span, spanRes = spans.At(j).Attributes(), rs.Resource().Attributes().AsRaw()
				}
			}
		}
	}
	require.NotNil(t, spanRes, "the span of the container's /bin/true")
	assert.Equal(t, got.res, spanRes)
	args, _ := span.Get("process.command_args")
	assert.Equal(t, []any{"/bin/true", marker, "--password", "REDACTED"}, args.Slice().AsRaw())
}

// A fork storm on the host while a container forks too: the container's
// records go to a resource of its own, and merged back by seq.number the
// stream is whole — every ticket delivered or in a seq.lost record, in
// order. Reading the resources one after the other made TestForkStormAccounting
// fail once ("ticket 39809 follows 39807") when a container elsewhere on the
// host forked during its storm; this reproduces that on purpose.
func TestForkStormWithContainerAccounting(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Fatalf("stress-ng is needed (make deps installs it): %v", err)
	}
	conf := podmanConf(t)
	sink := &consumertest.LogsSink{}
	r := startReceiver(t, createDefaultConfig(), sink)
	_, parent := testutil.KubepodsParent(t)
	ctr := exec.Command("podman", "run", "--rm", "--cgroup-parent="+parent, "localhost/seq-busybox",
		"/bin/sh", "-c", "i=0; while [ $i -lt 3000 ]; do /bin/true; i=$((i+1)); done")
	ctr.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	var ctrOut strings.Builder
	ctr.Stdout, ctr.Stderr = &ctrOut, &ctrOut
	require.NoError(t, ctr.Start())
	inContainer := func() (n int) {
		for _, ld := range sink.AllLogs() {
			for i := 0; i < ld.ResourceLogs().Len(); i++ {
				rl := ld.ResourceLogs().At(i)
				if _, ok := rl.Resource().Attributes().Get("container.id"); ok {
					n += rl.ScopeLogs().At(0).LogRecords().Len()
				}
			}
		}
		return n
	}
	waitFor(t, "the container's first records", func() bool { return inContainer() > 0 })
	before := inContainer()
	storm := exec.Command("stress-ng", "--fork", "2", "--fork-ops", strconv.Itoa(testutil.ForkOps(10000)), "--timeout", "60s", "--quiet")
	storm.Dir = t.TempDir()
	out, err := storm.CombinedOutput()
	require.NoError(t, err, string(out))
	during := inContainer() - before
	require.NoError(t, ctr.Wait(), "podman run: %s", ctrOut.String())
	require.NoError(t, r.Shutdown(context.Background()))

	f := r.final
	t.Logf("issued %d, delivered %d (%d records), lost %d; %d container records during the storm", f.Issued, f.Stats.Tickets, f.Stats.Records, f.Stats.Lost, during)
	require.Positive(t, during, "the container forked during the storm (else this test shows nothing)")
	assert.Equal(t, f.Issued, f.Stats.Tickets+f.Stats.Lost, "delivered + lost = issued")
	delivered, lost := checkOrder(t, flatten(sink.AllLogs()))
	assert.Equal(t, int64(f.Stats.Records), delivered)
	assert.Equal(t, int64(f.Stats.Lost), lost)
}

// A user recreates a victim pod's container cgroup in the subtree systemd
// delegates to them (made here by root at the same path) and runs a
// program there: its records carry the path, never the victim's
// container.id or k8s.pod.uid, and the cgroup is counted.
func TestSpoofedCgroupNoIdentity(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	mount, _, ok := cgroups.FindCgroup2(b)
	if !ok {
		t.Skip("no cgroup v2 hierarchy")
	}
	uid, _ := testutil.KubepodsParent(t) // a fresh uid
	victim := fmt.Sprintf("%064x", rand.Uint64())
	top := "user.slice/user-4242.slice/user@4242.service"
	rel := top + "/app.slice/kubepods/burstable/pod" + uid + "/" + victim
	require.NoError(t, os.MkdirAll(filepath.Join(mount, rel), 0o755))
	t.Cleanup(func() {
		for d := rel; d != "." && d != "user.slice"; d = filepath.Dir(d) {
			_ = os.Remove(filepath.Join(mount, d))
		}
	})

	sink := &consumertest.LogsSink{}
	r := startReceiver(t, createDefaultConfig(), sink)
	defer func() { assert.NoError(t, r.Shutdown(context.Background())) }()
	marker := fmt.Sprintf("seq-spoof-%d", rand.Uint32())
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec /bin/true "$2"`, "sh", filepath.Join(mount, rel), marker)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	var got resourced
	waitFor(t, "the spoofer's exec of /bin/true", func() bool {
		for _, ld := range sink.AllLogs() {
			for i := 0; i < ld.ResourceLogs().Len(); i++ {
				rl := ld.ResourceLogs().At(i)
				recs := rl.ScopeLogs().At(0).LogRecords()
				for j := 0; j < recs.Len(); j++ {
					a := recs.At(j).Attributes().AsRaw()
					if args, ok := a["process.command_args"].([]any); ok && len(args) > 1 && args[1] == marker {
						got = resourced{rl.Resource().Attributes().AsRaw(), a}
						return true
					}
				}
			}
		}
		return false
	})
	assert.Equal(t, "0::/"+rel, got.attrs["process.linux.cgroup"])
	assert.Equal(t, map[string]any{"service.name": "linux-processes"}, got.res, "no container.id, no k8s.pod.uid")
	assert.Equal(t, uint64(1), r.cgroups.Stats().Untrusted[cgroups.UntrustedDelegated])
}
