// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && k8s && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// kubeletNode is the node the test's kubelet registers (pki's node certificate).
const kubeletNode = "e2e-node"

// The agent DaemonSet's pod, as deploy/ renders it, run by a real kubelet
// (scripts/k8s.sh) on Debian's containerd and runc (cgroupfs driver) on this
// node: it loads the seq receiver's BPF programs and exports the exec record
// of a process started on the host, outside any pod.
//
// No kube-controller-manager or scheduler runs, so the test creates the pod
// the DaemonSet controller would (its template, spec.nodeName set), with
// three changes this node needs: hostNetwork, reaching the API server on
// loopback (no kube-proxy serves the kubernetes Service); SYS_RESOURCE
// dropped (not in this machine's capability bounding set: runc's "unable to
// apply caps"); the exporters writing to a host directory, its own metrics
// off and its health port free (the host's ports are shared).
func TestKubeletDaemonSet(t *testing.T) {
	testutil.RequireRoot(t)
	for _, bin := range []string{"containerd", "ctr", "runc", "podman", "/usr/lib/cni/bridge"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s missing (%v): run `scripts/k8s.sh node` and scripts/podman-setup.sh", bin, err)
		}
	}
	if _, err := os.Stat(filepath.Join(k8sBinDir(t), "kubelet")); err != nil {
		t.Fatalf("no kubelet (%v): run `scripts/k8s.sh build` (caches built before the kubelet was added lack it)", err)
	}
	k := startKube(t)
	n := startKubelet(t, k)
	// The DaemonSet names otelcol-seq:0.1.0 (kustomize), which the CRI
	// resolves to Docker Hub's library.
	n.importImage(t, agentImage(t), "localhost/otelcol-seq:0.1.0", "docker.io/library/otelcol-seq:0.1.0")
	k.kubectl(t, "", "apply", "-k", "../../deploy")
	// kube-controller-manager publishes the CA to every namespace; the
	// pod's service-account volume projects it.
	k.kubectl(t, "", "-n", "observability", "create", "configmap", "kube-root-ca.crt", "--from-file=ca.crt="+filepath.Join(k.dir, "ca.crt"))

	dir := t.TempDir()
	pod := agentPod(t, k, dir)
	k.kubectl(t, pod, "apply", "-f", "-")
	// The kubelet keeps the pod's container logs in /var/log/pods (not under
	// its root directory) and stops before it would collect them.
	uid := k.kubectl(t, "", "-n", "observability", "get", "pod", "agent", "-o", "jsonpath={.metadata.uid}")
	t.Cleanup(func() { _ = os.RemoveAll("/var/log/pods/observability_agent_" + uid) })
	t.Cleanup(func() {
		_, _ = k.kubectlAs(k.kubeconfig, "", "-n", "observability", "delete", "pod", "agent", "--ignore-not-found", "--wait=true", "--timeout=60s")
	})
	if _, err := k.kubectlAs(k.kubeconfig, "", "-n", "observability", "wait", "pod/agent", "--for=condition=Ready", "--timeout=90s"); err != nil {
		logs, _ := filepath.Glob("/var/log/pods/observability_agent_*/agent/*.log")
		var agentLog []byte
		if len(logs) > 0 {
			agentLog, _ = os.ReadFile(logs[len(logs)-1])
		}
		t.Fatalf("the agent pod is not Ready: %v\n%s\nkubelet log:\n%s\nagent log:\n%s", err,
			k.kubectl(t, "", "-n", "observability", "get", "pod", "agent", "-o", "yaml"), tail(n.kubelet.log(), 4000), tail(string(agentLog), 4000))
	}

	// The file exporter's output is read whole once the pod is gone (its
	// collector stopped and flushed): a line being written reads as broken
	// JSON.
	marker := fmt.Sprintf("kubelet-e2e-%d", time.Now().UnixNano())
	for range 5 {
		require.NoError(t, exec.Command("/bin/sh", "-c", "true "+marker).Run())
		time.Sleep(time.Second)
	}
	k.kubectl(t, "", "-n", "observability", "delete", "pod", "agent", "--wait=true", "--timeout=60s")
	execs, _ := readEnriched(t, dir, marker)
	require.NotEmpty(t, execs, "no exec record of the host's %q from the agent pod", marker)
	t.Logf("the agent pod recorded %d execs of the host's %q: %s", len(execs), marker, execs[0].what)
}

// kubeletHost is a kubelet and its containerd, both stopped at the test's end.
type kubeletHost struct {
	dir        string // configuration, state, logs
	sock       string // containerd's socket
	containerd daemon
	kubelet    daemon
}

// startKubelet starts containerd (CRI, runc, cgroupfs, a bridge CNI
// network) and a kubelet registering kubeletNode with k, and waits until
// the node is Ready.
func startKubelet(t *testing.T, k *kube) *kubeletHost {
	t.Helper()
	// A unix socket's path is at most 107 bytes: not under t.TempDir().
	d, err := os.MkdirTemp("", "kubelet")
	require.NoError(t, err)
	n := &kubeletHost{dir: d, sock: filepath.Join(d, "containerd.sock")}
	f := func(name string) string { return filepath.Join(d, name) }
	// Runs after both daemons stopped. The kubelet bind-mounts its root
	// directory onto itself (to share mounts with containers).
	t.Cleanup(func() {
		_ = syscall.Unmount(f("kubelet"), syscall.MNT_DETACH)
		_ = os.RemoveAll(d)
	})

	require.NoError(t, os.MkdirAll(f("net.d"), 0o755))
	require.NoError(t, os.WriteFile(f("net.d/10-e2e.conflist"), []byte(`{"cniVersion": "0.4.0", "name": "e2e", "plugins": [
 {"type": "bridge", "bridge": "e2ekube0", "isGateway": true, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.99.0/24"}]]}},
 {"type": "loopback"}]}`), 0o644))
	metrics := freePort(t)
	// restrict_oom_score_adj: lowering a process's oom_score_adj needs
	// CAP_SYS_RESOURCE, which this machine's root lacks (the sandbox's -998
	// fails runc: "can't get final child's PID from pipe").
	require.NoError(t, os.WriteFile(f("containerd.toml"), []byte(fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[metrics]
  address = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/e2e-pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
`, f("root"), f("state"), n.sock, metrics, f("net.d"))), 0o644))
	n.containerd = daemon{name: "containerd", logPath: f("containerd.log")}
	n.containerd.run(t, "containerd", []string{"--config", f("containerd.toml")}, nil, "http://"+metrics+"/v1/metrics", 60*time.Second)
	n.importImage(t, pauseImage(t), "localhost/e2e-pause:1", "")

	healthz, port := freePort(t), freePort(t)
	_, healthzPort, _ := net.SplitHostPort(healthz)
	_, kubeletPort, _ := net.SplitHostPort(port)
	// failCgroupV1 false: this machine's cgroups are hybrid (v1 controllers).
	// containerd 1.6 lacks the RuntimeConfig call: the kubelet falls back to
	// cgroupDriver.
	require.NoError(t, os.WriteFile(f("kubelet.yaml"), []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: 127.0.0.1
port: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
tlsCertFile: %s
tlsPrivateKeyFile: %s
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
`, n.sock, kubeletPort, healthzPort, filepath.Join(k.dir, "ca.crt"), filepath.Join(k.dir, "node.crt"), filepath.Join(k.dir, "node.key"))), 0o644))
	kubeconfig := f("kubelet.kubeconfig")
	k.writeKubeconfig(t, kubeconfig, fmt.Sprintf("    client-certificate: %s\n    client-key: %s\n", filepath.Join(k.dir, "node.crt"), filepath.Join(k.dir, "node.key")))
	n.kubelet = daemon{name: "kubelet", logPath: f("kubelet.log")}
	n.kubelet.run(t, filepath.Join(k.bin, "kubelet"), []string{
		"--config=" + f("kubelet.yaml"), "--kubeconfig=" + kubeconfig,
		"--hostname-override=" + kubeletNode,
		"--root-dir=" + f("kubelet"), "--cert-dir=" + f("pki"),
	}, nil, "http://"+healthz+"/healthz", 60*time.Second)
	// kubectl wait ends at once on a node not registered yet.
	require.Eventually(t, func() bool {
		_, err := k.kubectlAs(k.kubeconfig, "", "get", "node", kubeletNode)
		return err == nil
	}, 60*time.Second, time.Second, "node %s not registered; kubelet log %s", kubeletNode, n.kubelet.logPath)
	if _, err := k.kubectlAs(k.kubeconfig, "", "wait", "node/"+kubeletNode, "--for=condition=Ready", "--timeout=60s"); err != nil {
		t.Fatalf("node %s not Ready: %v\nkubelet log:\n%s", kubeletNode, err, tail(n.kubelet.log(), 4000))
	}
	t.Logf("kubelet %s: node %s Ready, log %s", k8sVersion, kubeletNode, n.kubelet.logPath)
	return n
}

// importImage imports an OCI archive of podman's image ref into
// containerd's CRI namespace, tagged alias too unless empty.
func (n *kubeletHost) importImage(t *testing.T, archive, ref, alias string) {
	t.Helper()
	ctr := func(args ...string) {
		out, err := exec.Command("ctr", append([]string{"--address", n.sock, "--namespace", "k8s.io", "images"}, args...)...).CombinedOutput()
		require.NoError(t, err, "ctr images %s: %s", strings.Join(args, " "), out)
	}
	ctr("import", archive)
	if alias != "" {
		ctr("tag", ref, alias)
	}
}

// pauseImage is the pods' sandbox image, as an OCI archive: busybox-static
// sleeping (no registry is reachable for registry.k8s.io/pause).
func pauseImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ctx"), 0o755))
	out, err := exec.Command("cp", "/bin/busybox", filepath.Join(dir, "ctx", "busybox")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(
		"FROM scratch\nCOPY busybox /bin/busybox\nENTRYPOINT [\"/bin/busybox\", \"sleep\", \"2147483647\"]\n"), 0o644))
	return podmanArchive(t, "localhost/e2e-pause:1", filepath.Join(dir, "Containerfile"), filepath.Join(dir, "ctx"))
}

// agentImage is deploy/Containerfile built for this architecture from the
// collector under test, as an OCI archive.
func agentImage(t *testing.T) string {
	t.Helper()
	ctx := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ctx, "bin"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(ctx, "deploy"), 0o755))
	arch := strings.TrimSpace(run(t, "go", "env", "GOARCH"))
	cp := [][2]string{
		{collectorBin(t), "bin/otelcol-seq-" + arch},
		{"../../deploy/agent.yaml", "deploy/agent.yaml"},
		{"../../deploy/gateway.yaml", "deploy/gateway.yaml"},
	}
	for _, c := range cp {
		run(t, "cp", c[0], filepath.Join(ctx, c[1]))
	}
	return podmanArchive(t, "localhost/otelcol-seq:0.1.0", "../../deploy/Containerfile", ctx, "--build-arg", "TARGETARCH="+arch)
}

// podmanArchive builds containerfile in ctx as ref with podman and saves it
// as an OCI archive, whose path it returns; the image is removed from
// podman's store at the test's end.
func podmanArchive(t *testing.T, ref, containerfile, ctx string, args ...string) string {
	t.Helper()
	conf := podmanConf(t)
	out, err := podmanCmd(conf, append([]string{"build", "-q", "-f", containerfile, "-t", ref}, append(args, ctx)...)...).CombinedOutput()
	require.NoError(t, err, "podman build %s: %s", ref, out)
	t.Cleanup(func() { _ = podmanCmd(conf, "rmi", ref).Run() })
	archive := filepath.Join(t.TempDir(), "image.tar")
	out, err = podmanCmd(conf, "save", "--format", "oci-archive", "-o", archive, ref).CombinedOutput()
	require.NoError(t, err, "podman save %s: %s", ref, out)
	return archive
}

// agentPod is the pod the DaemonSet controller would create on kubeletNode
// from the applied DaemonSet's template, with the test's changes (see
// TestKubeletDaemonSet), as JSON; dir (a hostPath volume at the same path)
// receives the exported records.
func agentPod(t *testing.T, k *kube, dir string) string {
	t.Helper()
	var ds struct {
		Spec struct {
			Template struct {
				Metadata map[string]any `json:"metadata"`
				Spec     map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal([]byte(k.kubectl(t, "", "-n", "observability", "get", "daemonset", "otelcol-seq-agent", "-o", "json")), &ds))
	spec := ds.Spec.Template.Spec
	spec["nodeName"] = kubeletNode
	spec["hostNetwork"] = true
	spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "out", "hostPath": map[string]any{"path": dir}})
	_, apiPort, err := net.SplitHostPort(strings.TrimPrefix(k.server, "https://"))
	require.NoError(t, err)
	_, healthPort, err := net.SplitHostPort(freePort(t))
	require.NoError(t, err)
	c := spec["containers"].([]any)[0].(map[string]any)
	c["env"] = append(c["env"].([]any),
		map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
		map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": apiPort},
		map[string]any{"name": "HEALTH_ENDPOINT", "value": "0.0.0.0:" + healthPort})
	var hp int
	_, err = fmt.Sscan(healthPort, &hp)
	require.NoError(t, err)
	c["ports"] = []any{map[string]any{"name": "health", "containerPort": hp}}
	args := c["args"].([]any)
	for _, a := range append(fileExporters(dir), "yaml:service::telemetry::metrics::level: none") {
		args = append(args, "--config="+a)
	}
	c["args"] = args
	c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{"name": "out", "mountPath": dir})
	caps := c["securityContext"].(map[string]any)["capabilities"].(map[string]any)
	var add []any
	for _, cp := range caps["add"].([]any) {
		if cp != "SYS_RESOURCE" {
			add = append(add, cp)
		}
	}
	caps["add"] = add
	pod, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "agent", "namespace": "observability", "labels": ds.Spec.Template.Metadata["labels"]},
		"spec":     spec,
	})
	require.NoError(t, err)
	return string(pod)
}

// run runs a command, returning its stdout; a failure ends the test.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	require.NoError(t, err, "%s %s", name, strings.Join(args, " "))
	return string(out)
}
