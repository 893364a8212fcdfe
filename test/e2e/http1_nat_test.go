// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && linux

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-seq/otelcol-seq/test/testutil"
)

// httpRequest is one request a client made, as its spans should say.
type httpRequest struct {
	client, method, path string
	status               int
}

// TestHTTP1AcrossNAT: Python's http.server (HTTP/1.1, keep-alive, a
// workload none of this repository's code serves) behind the NAT pair of
// TestGRPCAcrossNAT, and three clients through it: curl (many URLs on one
// kept-alive connection, and HEAD), Python's http.client (keep-alive, three
// requests pipelined in one write) and Go's net/http (keep-alive, a POST the
// server refuses with 501). Two agents (one per node, each keeping one end
// of every request by its port) must give one CLIENT and one SERVER span per
// request with its method, path and status, every server span the child of
// its client span; the join rate per client is logged.
func TestHTTP1AcrossNAT(t *testing.T) {
	testutil.RequireRoot(t)
	j := startJaeger(t)

	// The site: each client's files apart, so that url.path names the request.
	site := t.TempDir()
	const perClient = 40
	for _, c := range []string{"curl", "py", "go", "pipe"} {
		require.NoError(t, os.MkdirAll(filepath.Join(site, c), 0o755))
		for i := range perClient {
			require.NoError(t, os.WriteFile(filepath.Join(site, c, fmt.Sprintf("%d.html", i)), []byte(strings.Repeat("x", 100+i*50)), 0o644))
		}
	}
	big := strings.Repeat("0123456789abcdef", 256<<10/16) // larger than a call's head copy
	require.NoError(t, os.WriteFile(filepath.Join(site, "big.bin"), []byte(big), 0o644))

	real := mustFreePort(t)
	srv := exec.Command("python3", "-m", "http.server", "--protocol", "HTTP/1.1", "--bind", "127.0.0.1", "--directory", site, strconv.Itoa(real))
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(real))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "python3 -m http.server")
	svc := natPair(t, real)
	base := "http://127.0.0.1:" + strconv.Itoa(svc)

	clientNode, clientOut := nodeOf(t, withHTTP1(nodeConfig), j, "client-node", svc)
	serverNode, serverOut := nodeOf(t, withHTTP1(nodeConfig), j, "server-node", real)
	var want []httpRequest

	// curl: every URL on one connection (keep-alive), then HEAD.
	args := []string{"-s", "--fail-with-body"}
	for i := range perClient {
		args = append(args, "-o", "/dev/null", fmt.Sprintf("%s/curl/%d.html", base, i))
		want = append(want, httpRequest{"curl", "GET", fmt.Sprintf("/curl/%d.html", i), 200})
	}
	args = append(args, "-o", "/dev/null", base+"/big.bin")
	want = append(want, httpRequest{"curl", "GET", "/big.bin", 200})
	out, err := exec.Command("curl", args...).CombinedOutput()
	require.NoError(t, err, "curl: %s", out)
	out, err = exec.Command("curl", "-s", "-I", "-o", "/dev/null", base+"/curl/0.html").CombinedOutput()
	require.NoError(t, err, "curl -I: %s", out)
	want = append(want, httpRequest{"curl", "HEAD", "/curl/0.html", 200})

	// Python's http.client: keep-alive, then three requests in one write.
	py := fmt.Sprintf(`
import http.client, socket
c = http.client.HTTPConnection("127.0.0.1", %d)
for i in range(%d):
    c.request("GET", "/py/%%d.html" %% i)
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
c.close()
s = socket.create_connection(("127.0.0.1", %d))
s.sendall(b"".join(b"GET /pipe/%%d.html HTTP/1.1\r\nHost: x\r\n\r\n" %% i for i in range(3)))
f = s.makefile("rb")
for i in range(3):
    status, n = f.readline(), 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            n = int(h.split(b":")[1])
    f.read(n)
    assert status.split()[1] == b"200", status
s.close()
`, svc, perClient, svc)
	out, err = exec.Command("python3", "-c", py).CombinedOutput()
	require.NoError(t, err, "python: %s", out)
	for i := range perClient {
		want = append(want, httpRequest{"py", "GET", fmt.Sprintf("/py/%d.html", i), 200})
	}
	for i := range 3 {
		want = append(want, httpRequest{"pipe", "GET", fmt.Sprintf("/pipe/%d.html", i), 200})
	}

	// Go's net/http: keep-alive, and a POST http.server answers 501.
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range perClient {
		resp, err := cl.Get(fmt.Sprintf("%s/go/%d.html", base, i))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want = append(want, httpRequest{"go", "GET", fmt.Sprintf("/go/%d.html", i), 200})
	}
	resp, err := cl.Post(base+"/go/form", "text/plain", strings.NewReader("a=1"))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 501, resp.StatusCode)
	want = append(want, httpRequest{"go", "POST", "/go/form", 501})
	cl.CloseIdleConnections()

	var cs, ss []ptrace.Span
	assert.Eventually(t, func() bool {
		cs, ss = readSpans(t, clientOut), readSpans(t, serverOut)
		return len(httpSpans(ss, ptrace.SpanKindServer)) >= len(want) && len(httpSpans(cs, ptrace.SpanKindClient)) >= len(want)
	}, 60*time.Second, 250*time.Millisecond, "client node %d spans, server node %d\n%s\n%s",
		len(cs), len(ss), tail(clientNode.log(), 1500), tail(serverNode.log(), 1500))
	cs, ss = stopNodes(t, clientNode, serverNode, clientOut, serverOut, "") // "": spans without rpc.method
	checkHTTP1Joined(t, want, httpSpans(cs, ptrace.SpanKindClient), httpSpans(ss, ptrace.SpanKindServer), "http", "HTTP/1.1 across NAT")
	// The server's 501 is an error on both ends (5xx).
	if s := pickMethod(byPath(ss)["/go/form"], "POST"); assert.NotNil(t, s) {
		assert.Equal(t, ptrace.StatusCodeError, s.Status().Code())
	}
}

// checkHTTP1Joined: one CLIENT and one SERVER span per request of want,
// with its method, status, version and scheme, every server span the child
// of its client span; the join rate per client is logged.
func checkHTTP1Joined(t *testing.T, want []httpRequest, clients, servers []ptrace.Span, scheme, what string) {
	t.Helper()
	assert.Len(t, clients, len(want), "one CLIENT span per request")
	assert.Len(t, servers, len(want), "one SERVER span per request")
	cp, sp := byPath(clients), byPath(servers)
	joined := map[string]int{}
	total := map[string]int{}
	var names []string
	for _, w := range want {
		if total[w.client] == 0 {
			names = append(names, w.client)
		}
		total[w.client]++
		c, s := cp[w.path], sp[w.path]
		if !assert.NotEmpty(t, c, "%s %s: no client span", w.method, w.path) || !assert.NotEmpty(t, s, "%s %s: no server span", w.method, w.path) {
			continue
		}
		// The same path twice (curl's HEAD after its GET): the spans by method.
		ci, si := pickMethod(c, w.method), pickMethod(s, w.method)
		if !assert.NotNil(t, ci, "%s %s: client span", w.method, w.path) || !assert.NotNil(t, si, "%s %s: server span", w.method, w.path) {
			continue
		}
		for _, x := range []ptrace.Span{*ci, *si} {
			a := x.Attributes().AsRaw()
			assert.Equal(t, w.method, x.Name(), "%s %s", w.method, w.path)
			assert.Equal(t, int64(w.status), a["http.response.status_code"], "%s %s %v", w.method, w.path, x.Kind())
			assert.Equal(t, "1.1", a["network.protocol.version"])
			assert.Equal(t, scheme, a["url.scheme"])
		}
		if si.ParentSpanID() == ci.SpanID() && si.TraceID() == ci.TraceID() {
			joined[w.client]++
		}
	}
	for _, c := range names {
		t.Logf("%s, %s: %d of %d server spans joined to their client span", what, c, joined[c], total[c])
		assert.Equal(t, total[c], joined[c], "%s: server spans not joined to their client span", c)
	}
}

// byPath groups spans by url.path.
func byPath(spans []ptrace.Span) map[string][]ptrace.Span {
	m := map[string][]ptrace.Span{}
	for _, s := range spans {
		p, _ := s.Attributes().Get("url.path")
		m[p.Str()] = append(m[p.Str()], s)
	}
	return m
}

// httpSpans keeps the spans of one kind with an HTTP method.
func httpSpans(spans []ptrace.Span, kind ptrace.SpanKind) []ptrace.Span {
	var out []ptrace.Span
	for _, s := range spans {
		if _, ok := s.Attributes().Get("http.request.method"); ok && s.Kind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// pickMethod returns the span of spans whose method is m.
func pickMethod(spans []ptrace.Span, m string) *ptrace.Span {
	for i := range spans {
		if v, _ := spans[i].Attributes().Get("http.request.method"); v.Str() == m {
			return &spans[i]
		}
	}
	return nil
}

// TestHTTP1TLSAcrossNAT: HTTPS through the same NAT pair, the two agents
// with the TLS probes on. The server is Go's net/http over crypto/tls in
// this process (HTTP/1.1 only); the clients curl (OpenSSL, --http1.1, one
// kept-alive connection), Python's http.client over the ssl module
// (OpenSSL) and Go's net/http (crypto/tls). The sessions' ids come from the
// TCP sockets under them: every server span must be the child of its client
// span, url.scheme https.
func TestHTTP1TLSAcrossNAT(t *testing.T) {
	testutil.RequireRoot(t)
	j := startJaeger(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	srv.StartTLS()
	defer srv.Close()
	real, svc, svcAddr := natService(t, srv.Listener.Addr().String())
	base := "https://" + svcAddr

	clientNode, clientOut := nodeOf(t, withHTTP1(tlsNodeConfig), j, "client-node", svc)
	serverNode, serverOut := nodeOf(t, withHTTP1(tlsNodeConfig), j, "server-node", real)
	const perClient = 30
	var want []httpRequest

	args := []string{"-s", "-k", "--http1.1", "--fail-with-body"}
	for i := range perClient {
		args = append(args, "-o", "/dev/null", fmt.Sprintf("%s/curl/%d", base, i))
		want = append(want, httpRequest{"curl", "GET", fmt.Sprintf("/curl/%d", i), 200})
	}
	out, err := exec.Command("curl", args...).CombinedOutput()
	require.NoError(t, err, "curl: %s", out)

	py := fmt.Sprintf(`
import http.client, ssl
c = http.client.HTTPSConnection("127.0.0.1", %d, context=ssl._create_unverified_context())
for i in range(%d):
    c.request("GET", "/py/%%d" %% i)
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
c.close()
`, svc, perClient)
	out, err = exec.Command("python3", "-c", py).CombinedOutput()
	require.NoError(t, err, "python: %s", out)
	for i := range perClient {
		want = append(want, httpRequest{"py", "GET", fmt.Sprintf("/py/%d", i), 200})
	}

	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1
	cl := &http.Client{Transport: tr}
	for i := range perClient {
		resp, err := cl.Get(fmt.Sprintf("%s/go/%d", base, i))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, "HTTP/1.1", resp.Proto)
		want = append(want, httpRequest{"go", "GET", fmt.Sprintf("/go/%d", i), 200})
	}
	cl.CloseIdleConnections()

	var cs, ss []ptrace.Span
	assert.Eventually(t, func() bool {
		cs, ss = readSpans(t, clientOut), readSpans(t, serverOut)
		return len(httpSpans(ss, ptrace.SpanKindServer)) >= len(want) && len(httpSpans(cs, ptrace.SpanKindClient)) >= len(want)
	}, 60*time.Second, 250*time.Millisecond, "client node %d spans, server node %d\n%s\n%s",
		len(cs), len(ss), tail(clientNode.log(), 1500), tail(serverNode.log(), 1500))
	cs, ss = stopNodes(t, clientNode, serverNode, clientOut, serverOut, "") // "": spans without rpc.method
	checkHTTP1Joined(t, want, httpSpans(cs, ptrace.SpanKindClient), httpSpans(ss, ptrace.SpanKindServer), "https", "HTTPS across NAT")
}

// TestHTTP1ThroughNginx: nginx (Debian's nginx-light, `make deps`) as a
// reverse proxy with kept-alive upstream connections in front of Python's
// http.server, curl as the client, one collector (the default grpc
// config, every port). Each request is two hops, each one CLIENT and one
// SERVER span joined: curl → nginx and nginx → http.server. Nothing ties
// nginx's incoming request to its outgoing one in the kernel, so they are
// two traces (README, "Trace ids": a call chain through a service), unless
// a traceparent travels: curl sends one here on half the requests, and nginx
// passes it on, so both hops then share its trace.
func TestHTTP1ThroughNginx(t *testing.T) {
	testutil.RequireRoot(t)
	nginx, err := exec.LookPath("nginx")
	require.NoError(t, err, "nginx (make deps installs nginx-light)")
	site := t.TempDir()
	const n = 20
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(site, fmt.Sprintf("%d.html", i)), []byte(strings.Repeat("y", 200+i)), 0o644))
	}
	back := mustFreePort(t)
	srv := exec.Command("python3", "-m", "http.server", "--protocol", "HTTP/1.1", "--bind", "127.0.0.1", "--directory", site, strconv.Itoa(back))
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	front := mustFreePort(t)
	dir := t.TempDir()
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream back { server 127.0.0.1:%[2]d; keepalive 4; }
  server {
    listen 127.0.0.1:%[3]d;
    location / { proxy_pass http://back; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`, dir, back, front)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644))
	ng := exec.Command(nginx, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	ng.Stdout, ng.Stderr = io.Discard, io.Discard
	require.NoError(t, ng.Start())
	t.Cleanup(func() { _ = ng.Process.Kill(); _ = ng.Wait() })
	for _, p := range []int{back, front} {
		require.Eventually(t, func() bool {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err == nil {
				c.Close()
			}
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, "port %d", p)
	}

	out := filepath.Join(t.TempDir(), "spans.jsonl")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
receivers:
  grpc: {protocols: {http1: true}}
exporters:
  file: {path: %s}
processors:
  batch: {timeout: 200ms}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [grpc], processors: [batch], exporters: [file]}
`, out)), 0o600))
	c := startCollector(t, nil, "--config", cfg)
	require.Eventually(t, func() bool { return strings.Contains(c.log(), "Everything is ready") }, 30*time.Second, 100*time.Millisecond)

	// curl: every URL on one connection; a traceparent on the odd ones.
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, odd := range []bool{false, true} {
		args := []string{"-s", "--fail-with-body"}
		if odd {
			args = append(args, "-H", "traceparent: "+tp)
		}
		for i := range n {
			if (i%2 == 1) == odd {
				args = append(args, "-o", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/%d.html", front, i))
			}
		}
		o, err := exec.Command("curl", args...).CombinedOutput()
		require.NoError(t, err, "curl: %s", o)
	}

	// A hop's spans by the Host its requests carry (server.address and
	// server.port): curl's "127.0.0.1:front", nginx's upstream name "back".
	hop := func(spans []ptrace.Span, kind ptrace.SpanKind, host string) map[string]ptrace.Span {
		m := map[string]ptrace.Span{}
		for _, s := range httpSpans(spans, kind) {
			a := s.Attributes().AsRaw()
			h, _ := a["server.address"].(string)
			if p, ok := a["server.port"].(int64); ok {
				h += ":" + strconv.FormatInt(p, 10)
			}
			if h == host {
				m[a["url.path"].(string)] = s
			}
		}
		return m
	}
	frontHost := "127.0.0.1:" + strconv.Itoa(front)
	var spans []ptrace.Span
	ok := assert.Eventually(t, func() bool {
		spans = readSpans(t, out)
		return len(hop(spans, ptrace.SpanKindServer, "back")) >= n && len(hop(spans, ptrace.SpanKindClient, frontHost)) >= n &&
			len(hop(spans, ptrace.SpanKindServer, frontHost)) >= n && len(hop(spans, ptrace.SpanKindClient, "back")) >= n
	}, 30*time.Second, 250*time.Millisecond, "spans of the two hops")
	c.stop(t)
	require.True(t, ok, "%s", tail(c.log(), 800))
	curlC, nginxS := hop(spans, ptrace.SpanKindClient, frontHost), hop(spans, ptrace.SpanKindServer, frontHost)
	nginxC, pyS := hop(spans, ptrace.SpanKindClient, "back"), hop(spans, ptrace.SpanKindServer, "back")
	joined := [2]int{}
	for i := range n {
		p := fmt.Sprintf("/%d.html", i)
		for h, pair := range [][2]map[string]ptrace.Span{{curlC, nginxS}, {nginxC, pyS}} {
			cl, sv := pair[0][p], pair[1][p]
			assert.Equal(t, int64(200), sv.Attributes().AsRaw()["http.response.status_code"], "%s hop %d", p, h)
			if sv.ParentSpanID() == cl.SpanID() && sv.TraceID() == cl.TraceID() {
				joined[h]++
			}
		}
		if i%2 == 1 {
			// The traceparent wins on the first hop; nginx passes the
			// header on, so the second hop is in the same trace too.
			assert.Equal(t, tp[3:35], curlC[p].TraceID().String(), "%s: curl's span in its traceparent's trace", p)
			assert.Equal(t, curlC[p].TraceID(), nginxC[p].TraceID(), "%s: both hops in the traceparent's trace", p)
		} else {
			assert.NotEqual(t, curlC[p].TraceID(), nginxC[p].TraceID(), "%s: without a traceparent, two traces", p)
		}
	}
	t.Logf("through nginx: curl → nginx %d of %d server spans joined, nginx → http.server %d of %d", joined[0], n, joined[1], n)
	assert.Equal(t, [2]int{n, n}, joined)
}
