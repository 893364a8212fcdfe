// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && k8s && linux

package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// k8sVersion is the Kubernetes release scripts/k8s.sh builds and the tests
// prove the manifests against.
const k8sVersion = "v1.37.2"

// k8sBinDir returns the directory with kube-apiserver, etcd, kubectl and kubelet:
// $K8S_BIN_DIR, or ~/.cache/otelcol-seq/k8s/<version>/bin, complete when
// scripts/k8s.sh wrote its marker (`make test-k8s` builds it ahead).
func k8sBinDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("K8S_BIN_DIR"); d != "" {
		return d
	}
	cache := filepath.Join(os.Getenv("HOME"), ".cache", "otelcol-seq", "k8s", k8sVersion)
	if _, err := os.Stat(filepath.Join(cache, ".complete")); err != nil {
		t.Fatalf("the Kubernetes %s binaries are not built (%v): run `scripts/k8s.sh build` or `make test-k8s`", k8sVersion, err)
	}
	return filepath.Join(cache, "bin")
}

// kube is a control plane on loopback: etcd and kube-apiserver (RBAC and
// Node authorization, service-account tokens), no controllers; startKubelet
// adds a node.
type kube struct {
	bin        string // kube-apiserver, etcd, kubectl
	dir        string // certificates, keys, kubeconfigs
	server     string // https://127.0.0.1:port
	kubeconfig string // the admin's (client certificate, group system:masters)
	apiserver  daemon
}

// pki writes the CA, the API server's serving certificate, the admin's
// client certificate, the kubelet's (node kubeletNode: client and serving)
// and the service-account signing key pair into dir.
func pki(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "otelcol-seq-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)

	leaf := func(name string, tmpl *x509.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
		kder, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kder)
	}
	leaf("apiserver", &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	})
	leaf("admin", &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "e2e-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	leaf("node", &x509.Certificate{
		SerialNumber: big.NewInt(4), Subject: pkix.Name{CommonName: "system:node:" + kubeletNode, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	writePEM(t, filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	require.NoError(t, err)
	writePEM(t, filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub)
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// startKube starts etcd and kube-apiserver on free loopback ports, waits
// for /readyz and writes the admin's kubeconfig. Both stop at the test's end.
func startKube(t *testing.T) *kube {
	t.Helper()
	k := &kube{bin: k8sBinDir(t), dir: t.TempDir()}
	pki(t, k.dir)

	etcdClient, etcdPeer := "http://"+freePort(t), "http://"+freePort(t)
	etcd := daemon{name: "etcd", logPath: filepath.Join(k.dir, "etcd.log")}
	etcd.run(t, filepath.Join(k.bin, "etcd"), []string{
		"--name=e2e", "--data-dir=" + filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls=" + etcdClient, "--advertise-client-urls=" + etcdClient,
		"--listen-peer-urls=" + etcdPeer, "--initial-advertise-peer-urls=" + etcdPeer,
		"--initial-cluster=e2e=" + etcdPeer, "--unsafe-no-fsync",
	}, nil, etcdClient+"/health", 60*time.Second)

	addr := freePort(t)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	k.server = "https://" + addr
	const issuer = "https://kubernetes.default.svc.cluster.local"
	f := func(name string) string { return filepath.Join(k.dir, name) }
	k.apiserver = daemon{name: "kube-apiserver", logPath: f("kube-apiserver.log"), client: k.httpClient(t)}
	k.apiserver.run(t, filepath.Join(k.bin, "kube-apiserver"), []string{
		"--etcd-servers=" + etcdClient,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + port,
		// No controllers keep the kubernetes Service's endpoints: none to reconcile.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + f("certs"),
		"--tls-cert-file=" + f("apiserver.crt"), "--tls-private-key-file=" + f("apiserver.key"),
		"--client-ca-file=" + f("ca.crt"),
		"--service-account-issuer=" + issuer, "--api-audiences=" + issuer,
		"--service-account-key-file=" + f("sa.pub"), "--service-account-signing-key-file=" + f("sa.key"),
		// Without a mode the API server allows everything: RBAC must be asked for.
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--enable-admission-plugins=NodeRestriction",
	}, nil, k.server+"/readyz", 120*time.Second)

	k.kubeconfig = f("admin.kubeconfig")
	k.writeKubeconfig(t, k.kubeconfig, fmt.Sprintf("    client-certificate: %s\n    client-key: %s\n", f("admin.crt"), f("admin.key")))
	t.Logf("kube-apiserver %s ready on %s (etcd %s), log %s", k8sVersion, k.server, etcdClient, k.apiserver.logPath)
	return k
}

// httpClient trusts the test's CA and presents the admin's certificate.
func (k *kube) httpClient(t *testing.T) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(k.dir, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	cert, err := tls.LoadX509KeyPair(filepath.Join(k.dir, "admin.crt"), filepath.Join(k.dir, "admin.key"))
	require.NoError(t, err)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}
}

// writeKubeconfig writes a kubeconfig for this API server whose user has
// user (the indented fields of a kubeconfig user: a client certificate or a
// token).
func (k *kube) writeKubeconfig(t *testing.T, path, user string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: e2e
  user:
%scontexts:
- name: e2e
  context: {cluster: e2e, user: e2e}
current-context: e2e
`, k.server, filepath.Join(k.dir, "ca.crt"), user)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
}

// kubectl runs kubectl as the admin with stdin, returning its stdout; a
// failure ends the test with kubectl's stderr.
func (k *kube) kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := k.kubectlAs(k.kubeconfig, stdin, args...)
	require.NoError(t, err, "kubectl %s", strings.Join(args, " "))
	return out
}

// kubectlAs runs kubectl with kubeconfig; the error carries its stderr.
func (k *kube) kubectlAs(kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(k.bin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
