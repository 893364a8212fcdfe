// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && k8s && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// The manifests (deploy/, kustomize) against a real Kubernetes control plane
// (scripts/k8s.sh: kube-apiserver, etcd and kubectl of one release, built
// from the Go module proxy), then the agent's k8sattributes as shipped,
// authenticated with the agent service account's own token, enriching the
// records and spans of processes in podman containers that are, by their
// cgroup parent, the containers of pods created through the API.
func TestKubernetesDeploy(t *testing.T) {
	testutil.RequireRoot(t)
	k := startKube(t)
	if !t.Run("apply", func(t *testing.T) { testApply(t, k) }) {
		t.FailNow()
	}
	w := newWorkload(t, k)
	t.Run("enrichment", func(t *testing.T) { testEnrichment(t, k, w) })
	t.Run("in-cluster-auth", func(t *testing.T) { testInClusterAuth(t, k, w) })
	t.Run("rbac-refused", func(t *testing.T) { testRBACRefused(t, k, w) })
}

// subsetDiff lists where got differs from want in what want sets: every map
// key of want must be in got with the same value (got may have more: the
// server's defaults and metadata), lists must have want's length.
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, the server has %v", path, got)}
		}
		var d []string
		keys := make([]string, 0, len(w))
		for key := range w {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			gv, ok := g[key]
			if !ok {
				d = append(d, fmt.Sprintf("%s.%s: missing on the server (want %v)", path, key, w[key]))
				continue
			}
			d = append(d, subsetDiff(path+"."+key, w[key], gv)...)
		}
		return d
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, the server has %v", path, w, got)}
		}
		var d []string
		for i := range w {
			d = append(d, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return d
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v, the server has %v", path, want, got)}
		}
		return nil
	}
}

// `kubectl apply -k deploy/`, server-side, dry run and real, then every
// object read back: what the files set is what the server holds.
func testApply(t *testing.T, k *kube) {
	deploy := filepath.Join(repoRoot(t), "deploy")
	rendered := k.kubectl(t, "", "kustomize", deploy)
	want := decodeYAMLDocs(t, rendered)
	kinds := map[string]int{}
	for _, o := range want {
		kinds[o["kind"].(string)]++
	}
	t.Logf("kubectl kustomize deploy/: %d objects %v", len(want), kinds)
	require.Equal(t, map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"ConfigMap": 2, "DaemonSet": 1, "Deployment": 1, "Service": 1}, kinds, "the objects deploy/ renders")

	// A server-side dry run stores nothing, not even the Namespace, so on a
	// cluster without it the namespaced objects are refused (NamespaceLifecycle
	// admission): exactly those, and for that reason only.
	namespaced := 0
	for _, o := range want {
		if _, ok := o["metadata"].(map[string]any)["namespace"]; ok {
			namespaced++
		}
	}
	out, err := k.kubectlAs(k.kubeconfig, "", "apply", "-k", deploy, "--server-side", "--dry-run=server")
	t.Logf("dry run, fresh cluster: %v\n%s", err, out)
	require.Error(t, err, "a dry run on a cluster without the namespace")
	refused := regexp.MustCompile(`Error from server \(NotFound\): namespaces "observability" not found`)
	assert.Len(t, refused.FindAllString(err.Error(), -1), namespaced, "each namespaced object refused for the namespace: %v", err)
	assert.Empty(t, strings.TrimSpace(refused.ReplaceAllString(strings.SplitN(err.Error(), ": ", 2)[1], "")), "no other refusal")
	assert.Equal(t, len(want)-namespaced, strings.Count(out, "serverside-applied (server dry run)"), "the cluster-scoped objects pass")
	_, err = k.kubectlAs(k.kubeconfig, "", "get", "namespace", "observability")
	require.Error(t, err, "a server-side dry run creates nothing")

	// With the namespace there, the dry run passes whole and still stores nothing.
	k.kubectl(t, "", "apply", "--server-side", "-f", filepath.Join(deploy, "kubernetes", "namespace.yaml"))
	out = k.kubectl(t, "", "apply", "-k", deploy, "--server-side", "--dry-run=server")
	t.Logf("dry run, namespace present:\n%s", out)
	assert.Equal(t, len(want), strings.Count(out, "serverside-applied (server dry run)"), "every object passes the dry run")
	_, err = k.kubectlAs(k.kubeconfig, "", "-n", "observability", "get", "serviceaccount", "otelcol-seq-agent")
	require.Error(t, err, "a server-side dry run creates nothing")

	out = k.kubectl(t, "", "apply", "-k", deploy, "--server-side")
	t.Logf("apply:\n%s", out)
	require.Equal(t, len(want), strings.Count(out, "serverside-applied"), "every object applied")

	// kubectl get -f: the objects the rendered file names, in its order.
	renderedPath := filepath.Join(t.TempDir(), "deploy.yaml")
	require.NoError(t, os.WriteFile(renderedPath, []byte(rendered), 0o600))
	var list struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(k.kubectl(t, "", "get", "-f", renderedPath, "-o", "json")), &list))
	require.Len(t, list.Items, len(want))
	for i, w := range want {
		name := fmt.Sprintf("%s/%s", w["kind"], w["metadata"].(map[string]any)["name"])
		d := subsetDiff(name, w, list.Items[i])
		assert.Empty(t, d, "%s: the server holds what the files say", name)
		if len(d) == 0 {
			t.Logf("%s: equal to the files", name)
		}
	}
}

// pod is a pod created through the API and its podman container.
type pod struct {
	namespace, name, container string
	uid, parent                string // metadata.uid; the cgroup parent /kubepods/besteffort/pod<uid>
	cid                        string // the podman container's id
	workloadKey, workload      string // k8s.deployment.name or k8s.daemonset.name, and its value
	marker                     string // in the container's command line
}

// workload is what the enrichment tests run: the pods of one node, and
// podman's containers.conf.
type workload struct {
	node, podmanConf string
	web, logger      *pod
}

// newWorkload creates, through the API, a Node and two pods on it with
// their owners as the controllers would set them (no controllers run here):
// a Deployment's (ReplicaSet web-5d8f9c7b6f, label pod-template-hash) and a
// DaemonSet's. Each gets a podman container (created, not started) under
// its pod's cgroup parent, whose id the pod's status names, as a kubelet
// would report it.
func newWorkload(t *testing.T, k *kube) *workload {
	t.Helper()
	w := &workload{node: "e2e-node", podmanConf: podmanConf(t)}
	k.kubectl(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q}}`, w.node), "create", "-f", "-")
	k.kubectl(t, "", "create", "namespace", "shop")
	// No controller manager: no default service account, which the
	// ServiceAccount admission plugin wants for a pod.
	k.kubectl(t, "", "-n", "shop", "create", "serviceaccount", "default")
	tag := rand.Uint32()
	w.web = w.newPod(t, k, &pod{namespace: "shop", name: "web-5d8f9c7b6f-x7k2p", container: "app",
		workloadKey: "k8s.deployment.name", workload: "web", marker: fmt.Sprintf("k8s-web-%d", tag)},
		`"labels":{"app":"web","pod-template-hash":"5d8f9c7b6f"},`+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d8f9c7b6f","uid":"0b5e7f1c-3f1e-4a61-9a3e-1f0c2d3e4a5b","controller":true}]`)
	w.logger = w.newPod(t, k, &pod{namespace: "shop", name: "node-logger-q9z8w", container: "logger",
		workloadKey: "k8s.daemonset.name", workload: "node-logger", marker: fmt.Sprintf("k8s-logger-%d", tag)},
		`"labels":{"app":"node-logger"},`+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"node-logger","uid":"6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f","controller":true}]`)
	return w
}

func (w *workload) podman(args ...string) *exec.Cmd { return podmanCmd(w.podmanConf, args...) }

// createContainer creates (does not start) a podman container under the
// cgroup parent whose shell runs a child with marker in its command line,
// removed at the test's end, and returns its id. Started with `podman start
// --attach ID`, no host process has the marker in its command line.
func (w *workload) createContainer(t *testing.T, parent, marker string) string {
	t.Helper()
	cidFile := filepath.Join(t.TempDir(), "cid")
	name := fmt.Sprintf("%s-%d", marker, rand.Uint32())
	out, err := w.podman("create", "--cgroup-parent="+parent, "--cidfile="+cidFile, "--network=none", "--name", name,
		"localhost/seq-busybox", "/bin/sh", "-c", "/bin/sh -c 'exit 0' "+marker+"; exit $?").CombinedOutput()
	require.NoError(t, err, "podman create: %s", out)
	t.Cleanup(func() { _ = w.podman("rm", "-f", name).Run() })
	b, err := os.ReadFile(cidFile)
	require.NoError(t, err)
	cid := strings.TrimSpace(string(b))
	require.Len(t, cid, 64)
	return cid
}

func (w *workload) start(t *testing.T, cid string) {
	t.Helper()
	out, err := w.podman("start", "--attach", cid).CombinedOutput()
	require.NoError(t, err, "podman start %.12s: %s", cid, out)
}

func (w *workload) newPod(t *testing.T, k *kube, p *pod, meta string) *pod {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,%s},`+
		`"spec":{"nodeName":%q,"containers":[{"name":%q,"image":"localhost/seq-busybox"}]}}`,
		p.name, p.namespace, meta, w.node, p.container)
	var created struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(k.kubectl(t, manifest, "create", "-f", "-", "-o", "json")), &created))
	p.uid = created.Metadata.UID
	require.NotEmpty(t, p.uid)
	p.parent = testutil.KubepodsParentOf(t, p.uid)

	p.cid = w.createContainer(t, p.parent, p.marker)

	status := fmt.Sprintf(`{"status":{"phase":"Running","containerStatuses":[{"name":%q,"containerID":"containerd://%s",`+
		`"image":"localhost/seq-busybox:latest","imageID":"localhost/seq-busybox@sha256:%s","ready":true,"started":true,"restartCount":0,`+
		`"state":{"running":{"startedAt":%q}}}]}}`, p.container, p.cid, strings.Repeat("0", 64), time.Now().UTC().Format(time.RFC3339))
	k.kubectl(t, "", "-n", p.namespace, "patch", "pod", p.name, "--subresource=status", "--type=merge", "-p", status)
	got := k.kubectl(t, "", "-n", p.namespace, "get", "pod", p.name, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	require.Equal(t, "containerd://"+p.cid, got, "the pod's status names the container")
	t.Logf("pod %s/%s uid %s on %s: container %s %.12s", p.namespace, p.name, p.uid, w.node, p.container, p.cid)
	return p
}

// agentToken is a TokenRequest token of the agent's service account
// (deploy/kubernetes/rbac.yaml): with it the collector is that service
// account to the API server, whose RBAC decides what it may read.
func agentToken(t *testing.T, k *kube) string {
	t.Helper()
	return strings.TrimSpace(k.kubectl(t, "", "-n", "observability", "create", "token", "otelcol-seq-agent", "--duration=1h"))
}

// agentKubeconfig is agentToken in a kubeconfig, whose identity it checks.
func agentKubeconfig(t *testing.T, k *kube) string {
	t.Helper()
	token := agentToken(t, k)
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	k.writeKubeconfig(t, path, fmt.Sprintf("    token: %s\n", token))
	who, err := k.kubectlAs(path, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.NoError(t, err)
	require.Equal(t, "system:serviceaccount:observability:otelcol-seq-agent", who, "the token's identity")
	return path
}

// startAgent runs the collector with deploy/agent.yaml (k8sattributes as
// shipped, its kubeConfig auth reading the agent's token kubeconfig) on this
// node, exporting records to dir/logs.jsonl and spans to dir/spans.jsonl.
// Its own metrics are served on telemetry (host:port) for awaitPods.
func startAgent(t *testing.T, w *workload, kubeconfig, dir, telemetry string) *collector {
	t.Helper()
	args := []string{"--config", "../../deploy/agent.yaml"}
	for _, a := range agentOverrides(dir, telemetry) {
		args = append(args, "--config", a)
	}
	return startCollector(t, []string{"HEALTH_ENDPOINT=" + freePort(t), "K8S_NODE_NAME=" + w.node,
		"K8S_AUTH_TYPE=kubeConfig", "KUBECONFIG=" + kubeconfig}, args...)
}

// agentOverrides are the test's changes to deploy/agent.yaml: the exporters
// (fileExporters in dir) and the collector's own metrics (on telemetry).
func agentOverrides(dir, telemetry string) []string {
	host, port, _ := net.SplitHostPort(telemetry)
	return append(fileExporters(dir),
		"yaml:service::telemetry::metrics: {level: normal, readers: [{pull: {exporter: {prometheus: {host: "+host+", port: "+port+"}}}}]}")
}

// awaitPods waits up to 30 s until the collector's k8sattributes processors
// (one in each of agent.yaml's two pipelines) have each been told of this
// node's pods by their informers: the processors' pod-added counter (their
// telemetry, otelcol_k8s_watcher_pod_added) reaches 2 × pods. A refusal by
// the API server in the log ends the test at once, naming it.
func awaitPods(t *testing.T, c *collector, telemetry string, pods int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := promMetrics(telemetry)
		var added float64
		for series, v := range m {
			if strings.Contains(series, "pod_added") {
				added += v
			}
		}
		if m := forbidden.FindString(c.log()); m != "" {
			t.Fatalf("the API server refused the agent (its ClusterRole: deploy/kubernetes/rbac.yaml): %s", m)
		}
		if err == nil && added >= float64(2*pods) {
			t.Logf("k8sattributes has the pods: pod-added counters sum to %v", added)
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for series := range m {
				names = append(names, series)
			}
			sort.Strings(names)
			t.Fatalf("k8sattributes not told of %d pods in 30 s (pod-added %v, scrape %v); series: %v\n%s",
				pods, added, err, names, tail(c.log(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enriched is a marked exec record or a span with its resource's attributes.
type enriched struct {
	what     string // "exec <body>" or "span <name>"
	pid      int64
	resource map[string]any
}

// readEnriched reads startAgent's output in dir: the exec records whose
// body has marker, with their resources, and every span with its resource.
func readEnriched(t *testing.T, dir, marker string) (execs, spans []enriched) {
	t.Helper()
	eachExported(t, dir, func(ld plog.Logs) {
		testutil.EachResourceLogRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
			if lr.EventName() == "process.exec" && strings.Contains(lr.Body().AsString(), marker) {
				pid, _ := lr.Attributes().Get("process.pid")
				execs = append(execs, enriched{what: "exec " + lr.Body().AsString(), pid: pid.Int(), resource: res.Attributes().AsRaw()})
			}
		})
	}, func(td ptrace.Traces) {
		testutil.EachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
			pid, _ := s.Attributes().Get("process.pid")
			spans = append(spans, enriched{what: "span " + s.Name(), pid: pid.Int(), resource: res.Attributes().AsRaw()})
		})
	})
	return execs, spans
}

// forbidden finds an API server's RBAC refusal in a collector's log.
var forbidden = regexp.MustCompile(`\S+ is forbidden: User [^\n]*`)

// k8sAttrs is the k8s.* part of a resource.
func k8sAttrs(res map[string]any) map[string]any {
	out := map[string]any{}
	for key, v := range res {
		if strings.HasPrefix(key, "k8s.") {
			out[key] = v
		}
	}
	return out
}

// spansOf returns the spans of pid.
func spansOf(spans []enriched, pid int64) []enriched {
	var out []enriched
	for _, s := range spans {
		if s.pid == pid {
			out = append(out, s)
		}
	}
	return out
}

// The agent's k8sattributes as shipped, with the agent's own token: the
// records and spans of each pod's container carry the pod's name,
// namespace, container name, node and workload; a host process's carry no
// k8s.* attribute.
func testEnrichment(t *testing.T, k *kube, w *workload) {
	out, telemetry := t.TempDir(), freePort(t)
	c := startAgent(t, w, agentKubeconfig(t, k), out, telemetry)
	awaitPods(t, c, telemetry, 2)
	for _, p := range []*pod{w.web, w.logger} {
		w.start(t, p.cid)
	}
	hostMarker := fmt.Sprintf("k8s-host-%d", rand.Uint32())
	require.NoError(t, exec.Command("/bin/sh", "-c", "/bin/sh -c 'exit 0' "+hostMarker+"; exit $?").Run())
	time.Sleep(2 * time.Second) // batch timeouts
	c.stop(t)
	log := tail(c.log(), 6000)
	if m := forbidden.FindString(c.log()); m != "" {
		t.Errorf("the API server refused the agent (its ClusterRole: deploy/kubernetes/rbac.yaml): %s", m)
	}
	assertPodAttrs(t, w, out, log)
	execs, spans := readEnriched(t, out, hostMarker)
	require.NotEmpty(t, execs, "no exec record of the host process %s\ncollector log:\n%s", hostMarker, log)
	for _, e := range execs {
		assert.Empty(t, k8sAttrs(e.resource), "a process in no pod: %s", e.what)
		ps := spansOf(spans, e.pid)
		assert.NotEmpty(t, ps, "host process: no span of pid %d", e.pid)
		for _, s := range ps {
			assert.Empty(t, k8sAttrs(s.resource), "a process in no pod: %s (pid %d)", s.what, e.pid)
		}
		t.Logf("host: %s: no k8s.* attributes", e.what)
	}
}

// assertPodAttrs checks startAgent's output in dir: the exec records with
// each pod's marker, and their processes' spans, carry exactly the pod's
// k8s.* attributes.
func assertPodAttrs(t *testing.T, w *workload, out, log string) {
	t.Helper()
	for _, p := range []*pod{w.web, w.logger} {
		execs, spans := readEnriched(t, out, p.marker)
		require.NotEmpty(t, execs, "pod %s: no exec record with %s\ncollector log:\n%s", p.name, p.marker, log)
		want := map[string]any{
			"k8s.pod.uid": p.uid, "k8s.pod.name": p.name, "k8s.namespace.name": p.namespace,
			"k8s.container.name": p.container, "k8s.node.name": w.node, p.workloadKey: p.workload,
		}
		for _, e := range execs {
			assert.Equal(t, want, k8sAttrs(e.resource), "pod %s: %s", p.name, e.what)
			assert.Equal(t, p.cid, e.resource["container.id"], "pod %s: %s", p.name, e.what)
			ps := spansOf(spans, e.pid)
			assert.NotEmpty(t, ps, "pod %s: no span of pid %d", p.name, e.pid)
			for _, s := range ps {
				assert.Equal(t, want, k8sAttrs(s.resource), "pod %s: %s (pid %d)", p.name, s.what, e.pid)
			}
			t.Logf("pod %s: %s: %v (%d spans)", p.name, e.what, k8sAttrs(e.resource), len(ps))
		}
	}

	if t.Failed() {
		t.Logf("collector log:\n%s", log)
	}
}

// The agent's ClusterRole without pods: the API server refuses the
// processor's pod list, the collector logs the refusal, and a process in a
// pod's container gets no pod attributes. The ClusterRole is restored after.
func testRBACRefused(t *testing.T, k *kube, w *workload) {
	deploy := filepath.Join(repoRoot(t), "deploy")
	t.Cleanup(func() { k.kubectl(t, "", "apply", "-k", deploy, "--server-side") })
	role := k.kubectl(t, "", "get", "clusterrole", "otelcol-seq-agent", "-o", "json")
	var cr map[string]any
	require.NoError(t, json.Unmarshal([]byte(role), &cr))
	var rules []any
	for _, r := range cr["rules"].([]any) {
		rule := r.(map[string]any)
		var res []any
		for _, x := range rule["resources"].([]any) {
			if x != "pods" {
				res = append(res, x)
			}
		}
		rule["resources"] = res
		rules = append(rules, rule)
	}
	applied := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "otelcol-seq-agent"}, "rules": rules}
	b, err := json.Marshal(applied)
	require.NoError(t, err)
	k.kubectl(t, string(b), "apply", "--server-side", "--force-conflicts", "-f", "-")
	const sa = "system:serviceaccount:observability:otelcol-seq-agent"
	can, _ := k.kubectlAs(k.kubeconfig, "", "auth", "can-i", "list", "pods", "--as="+sa)
	require.Equal(t, "no", strings.TrimSpace(can), "the pods rule is gone")

	// A second container of the web pod, created before the collector
	// starts (podman create's command line has the marker too).
	marker := fmt.Sprintf("k8s-refused-%d", rand.Uint32())
	cid := w.createContainer(t, w.web.parent, marker)
	out := t.TempDir()
	c := startAgent(t, w, agentKubeconfig(t, k), out, freePort(t))
	// client-go's reflector logs it through klog (plain quotes) or zap (a JSON field: escaped quotes).
	refusal := regexp.MustCompile(fmt.Sprintf(`pods is forbidden: User \\?"%s\\?" cannot list resource \\?"pods\\?" in API group \\?"\\?" at the cluster scope`,
		regexp.QuoteMeta(sa)))
	deadline := time.Now().Add(30 * time.Second)
	for !refusal.MatchString(c.log()) {
		require.False(t, time.Now().After(deadline), "no refusal in the collector's log after 30 s, want %s:\n%s", refusal, tail(c.log(), 6000))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the collector logged the API server's refusal: %s", refusal.FindString(c.log()))

	w.start(t, cid)
	time.Sleep(2 * time.Second) // batch timeouts
	c.stop(t)
	execs, _ := readEnriched(t, out, marker)
	require.NotEmpty(t, execs, "no exec record with %s\ncollector log:\n%s", marker, tail(c.log(), 6000))
	for _, e := range execs {
		assert.Equal(t, map[string]any{"k8s.pod.uid": w.web.uid}, k8sAttrs(e.resource),
			"without the pods rule only the cgroup's pod uid: %s", e.what)
		assert.Equal(t, cid, e.resource["container.id"], "%s", e.what)
		t.Logf("%s: %v", e.what, k8sAttrs(e.resource))
	}
}

// The image (deploy/Containerfile) as the DaemonSet runs it: its
// deploy/agent.yaml untouched but for the exporters, so k8sattributes takes
// the default auth_type serviceAccount (client-go's in-cluster config): the
// agent's token and the CA where a pod has them, KUBERNETES_SERVICE_HOST and
// _PORT naming the API server, the host's PID namespace and cgroup
// hierarchy. The pods' containers run again: the same attributes.
func testInClusterAuth(t *testing.T, k *kube, w *workload) {
	image := buildImage(t, w.podmanConf)
	sa := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(sa, "token"), []byte(agentToken(t, k)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sa, "namespace"), []byte("observability"), 0o600))
	copyFile(t, filepath.Join(k.dir, "ca.crt"), filepath.Join(sa, "ca.crt"), 0o644)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(k.server, "https://"))
	require.NoError(t, err)
	out, telemetry := t.TempDir(), freePort(t)
	name := fmt.Sprintf("otelcol-seq-k8s-%d", rand.Uint32())
	args := []string{"--pid=host", "--privileged", "--network=host",
		"-e", "K8S_NODE_NAME=" + w.node, "-e", "KUBERNETES_SERVICE_HOST=" + host, "-e", "KUBERNETES_SERVICE_PORT=" + port,
		"-e", "HEALTH_ENDPOINT=" + freePort(t),
		"-v", sa + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
		"-v", out + ":/out", image, "--config=/etc/otelcol-seq/agent.yaml"}
	for _, a := range agentOverrides("/out", telemetry) {
		args = append(args, "--config="+a)
	}
	c, exited := runImage(t, w.podmanConf, name, args...)
	awaitPods(t, c, telemetry, 2)
	for _, p := range []*pod{w.web, w.logger} {
		w.start(t, p.cid)
	}
	time.Sleep(2 * time.Second) // batch timeouts
	require.NoError(t, w.podman("stop", "-t", "20", name).Run())
	t.Logf("the container exited: %v", <-exited)
	log := tail(c.log(), 6000)
	if m := forbidden.FindString(c.log()); m != "" {
		t.Errorf("the API server refused the agent (its ClusterRole: deploy/kubernetes/rbac.yaml): %s", m)
	}
	assertPodAttrs(t, w, out, log)
}
