// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const R = Replacement

func TestArgs(t *testing.T) {
	const (
		jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
		ghp = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	)
	tests := []struct {
		name string
		in   []string
		want []string // nil: unchanged
		n    int
	}{
		// 1: flag and value
		{"password flag", []string{"app", "--password", "hunter2", "--port", "5432"}, []string{"app", "--password", R, "--port", "5432"}, 1},
		{"passwd token secret api-key", []string{"app", "--passwd", "a", "--token", "b", "--secret", "c", "--api-key", "d"},
			[]string{"app", "--passwd", R, "--token", R, "--secret", R, "--api-key", R}, 4},
		{"compound names", []string{"app", "--db-password", "a", "--client-secret", "b", "--aws-secret-access-key", "c", "--auth-token", "d", "--vault-secret-id", "e"},
			[]string{"app", "--db-password", R, "--client-secret", R, "--aws-secret-access-key", R, "--auth-token", R, "--vault-secret-id", R}, 5},
		{"go style one dash", []string{"app", "-token", "abc"}, []string{"app", "-token", R}, 1},
		{"upper case", []string{"app", "--PASSWORD", "x"}, []string{"app", "--PASSWORD", R}, 1},
		{"basic auth flag", []string{"app", "--basic-auth", "u:p"}, []string{"app", "--basic-auth", R}, 1},
		{"not secrets", []string{"app", "--password-file", "/run/pw", "--token-ttl", "3600", "--no-password", "x", "--max-tokens", "5", "--secret-name", "s", "--password-stdin", "--tokenizer", "t"}, nil, 0},
		{"flag without a value", []string{"app", "--token", "--verbose", "--password", "-x1"}, []string{"app", "--token", "--verbose", "--password", R}, 1},
		{"flag at the end", []string{"app", "--password"}, nil, 0},
		{"argv0 is not a flag", []string{"--password", "x"}, nil, 0},
		{"already redacted", []string{"app", "--password", R}, nil, 0},
		// 3: key=value
		{"flag=value", []string{"app", "--password=hunter2", "--token=abc", "--user=bob"}, []string{"app", "--password=" + R, "--token=" + R, "--user=bob"}, 2},
		{"flag=value rest of arg", []string{"app", "--password=a b&c"}, []string{"app", "--password=" + R}, 1},
		{"env style", []string{"env", "PGPASSWORD=s3cret", "MYSQL_PWD=x", "AWS_SECRET_ACCESS_KEY=y", "HOME=/root", "psql"},
			[]string{"env", "PGPASSWORD=" + R, "MYSQL_PWD=" + R, "AWS_SECRET_ACCESS_KEY=" + R, "HOME=/root", "psql"}, 3},
		{"keys", []string{"app", "api_key=1", "apikey=2", "access_key=3", "auth=4", "credential=5", "private_key=6", "secret=7", "token=8", "passwd=9"},
			[]string{"app", "api_key=" + R, "apikey=" + R, "access_key=" + R, "auth=" + R, "credential=" + R, "private_key=" + R, "secret=" + R, "token=" + R, "passwd=" + R}, 9},
		{"java property", []string{"java", "-Djavax.net.ssl.keyStorePassword=changeit", "-Dfile.encoding=UTF-8"},
			[]string{"java", "-Djavax.net.ssl.keyStorePassword=" + R, "-Dfile.encoding=UTF-8"}, 1},
		{"query string", []string{"curl", "https://api.example.com/v1?token=abc123&page=2"}, []string{"curl", "https://api.example.com/v1?token=" + R + "&page=2"}, 1},
		{"conninfo", []string{"psql", "host=db user=app password=s3cret dbname=x"}, []string{"psql", "host=db user=app password=" + R + " dbname=x"}, 1},
		{"conninfo quoted", []string{"psql", "host=db password='a b' dbname=x"}, []string{"psql", "host=db password='" + R + "' dbname=x"}, 1},
		{"ado", []string{"app", "Server=db;User Id=sa;Password=P@ss;"}, []string{"app", "Server=db;User Id=sa;Password=" + R + ";"}, 1},
		{"empty value", []string{"app", "--password=", "token="}, nil, 0},
		{"harmless equals", []string{"app", "--color=auto", "a=b", "key=value"}, nil, 0},
		{"json", []string{"curl", "-d", `{"user":"bob","password":"hunter2","api_key": "k"}`}, []string{"curl", "-d", `{"user":"bob","password":"` + R + `","api_key": "` + R + `"}`}, 2},
		// 4: URLs
		{"url", []string{"git", "clone", "https://bob:hunter2@github.com/x/y"}, []string{"git", "clone", "https://bob:" + R + "@github.com/x/y"}, 1},
		{"db url", []string{"app", "--db", "postgres://app:p%40ss@db:5432/x?sslmode=disable"}, []string{"app", "--db", "postgres://app:" + R + "@db:5432/x?sslmode=disable"}, 1},
		{"url in flag=value", []string{"app", "--dsn=mysql://u:pw@h/db"}, []string{"app", "--dsn=mysql://u:" + R + "@h/db"}, 1},
		{"two urls", []string{"sh", "-c", "x a://u:p@h b://v:q@i"}, []string{"sh", "-c", "x a://u:" + R + "@h b://v:" + R + "@i"}, 2},
		{"url without password", []string{"git", "clone", "ssh://git@github.com/x", "https://host:8080/p", "http://[::1]:80/"}, nil, 0},
		// 5: headers and bearer
		{"authorization", []string{"curl", "-H", "Authorization: Bearer abc.def.ghi"}, []string{"curl", "-H", "Authorization: Bearer " + R}, 1},
		{"basic", []string{"curl", "-H", "Authorization: Basic dXNlcjpwYXNz"}, []string{"curl", "-H", "Authorization: Basic " + R}, 1},
		{"api key header", []string{"curl", "-H", "X-Api-Key: k123", "-H", "PRIVATE-TOKEN: t", "-H", "Accept: text/plain"},
			[]string{"curl", "-H", "X-Api-Key: " + R, "-H", "PRIVATE-TOKEN: " + R, "-H", "Accept: text/plain"}, 2},
		{"bearer anywhere", []string{"sh", "-c", "curl -H 'authorization: bearer abcdef' x"}, []string{"sh", "-c", "curl -H 'authorization: bearer " + R + "' x"}, 1},
		{"bearer word", []string{"echo", "a bearer of news"}, nil, 0},
		// 6: token formats
		{"aws", []string{"app", "AKIAIOSFODNN7EXAMPLE"}, []string{"app", R}, 1},
		{"aws inside", []string{"app", "--key-id", "id:ASIAIOSFODNN7EXAMPLE,"}, []string{"app", "--key-id", "id:" + R + ","}, 1},
		{"aws wrong length", []string{"app", "AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPLEX", "xAKIAIOSFODNN7EXAMPLE"}, nil, 0},
		{"github", []string{"gh", ghp, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"}, []string{"gh", R, R}, 2},
		{"github in url", []string{"git", "clone", "https://" + ghp + "@github.com/x"}, []string{"git", "clone", "https://" + R + "@github.com/x"}, 1},
		{"slack", []string{"app", "xoxb-1234567890-abcdefghij"}, []string{"app", R}, 1},
		{"jwt", []string{"app", jwt, "id:" + jwt, "x" + jwt}, []string{"app", R, "id:" + R, "x" + jwt}, 2},
		{"not jwt", []string{"app", "eyJhbGciOiJIUzI1NiJ9", "eyJx.eyJy"}, nil, 0},
		// 2: tools
		{"mysql attached", []string{"mysql", "-uroot", "-phunter2", "db"}, []string{"mysql", "-uroot", "-p" + R, "db"}, 1},
		{"mysql secret-like password", []string{"mysql", "-psecret", "db"}, []string{"mysql", "-p" + R, "db"}, 1},
		{"mysql prompt", []string{"mysql", "-u", "root", "-p", "db"}, nil, 0},
		{"mysql --password prompt", []string{"/usr/bin/mysql", "--password", "db"}, nil, 0},
		{"mysql --password=", []string{"mysqldump", "--password=x", "db"}, []string{"mysqldump", "--password=" + R, "db"}, 1},
		{"sudo mysql", []string{"sudo", "-u", "app", "mariadb", "-psecret"}, []string{"sudo", "-u", "app", "mariadb", "-p" + R}, 1},
		{"sshpass", []string{"sshpass", "-p", "hunter2", "ssh", "-p", "22", "host"}, []string{"sshpass", "-p", R, "ssh", "-p", "22", "host"}, 1},
		{"mongo", []string{"mongosh", "-u", "admin", "-p", "pw"}, []string{"mongosh", "-u", "admin", "-p", R}, 1},
		{"redis", []string{"redis-cli", "-a", "pw", "-p", "6379"}, []string{"redis-cli", "-a", R, "-p", "6379"}, 1},
		{"redis attached", []string{"redis-cli", "-apw"}, []string{"redis-cli", "-a" + R}, 1},
		{"docker login", []string{"docker", "login", "-u", "bob", "-p", "pw", "registry"}, []string{"docker", "login", "-u", "bob", "-p", R, "registry"}, 1},
		{"curl user", []string{"curl", "-u", "bob:pw", "https://x"}, []string{"curl", "-u", "bob:" + R, "https://x"}, 1},
		{"curl user only", []string{"curl", "-u", "bob", "https://x"}, nil, 0},
		{"port flags", []string{"ssh", "-p", "2222", "host"}, nil, 0},
		{"docker run -p", []string{"docker", "run", "-p", "8080:80", "img"}, nil, 0},
		{"mkdir -p", []string{"mkdir", "-p", "/a/b"}, nil, 0},
		{"login -p", []string{"login", "-p", "bob"}, nil, 0},
		{"nc -p", []string{"nc", "-p", "1234", "host", "80"}, nil, 0},
		// shells
		{"sh -c", []string{"sh", "-c", "mysql -uroot -phunter2 db && app --token abc"}, []string{"sh", "-c", "mysql -uroot -p" + R + " db && app --token " + R}, 2},
		{"bash -ec", []string{"/bin/bash", "-ec", "  sshpass -p pw\tssh h"}, []string{"/bin/bash", "-ec", "  sshpass -p " + R + "\tssh h"}, 1},
		{"not a shell", []string{"python3", "-c", "app --token abc"}, []string{"python3", "-c", "app --token abc"}, 0},
		// plain
		{"plain", []string{"ls", "-la", "/tmp"}, nil, 0},
		{"empty", []string{}, nil, 0},
	}
	r, err := New(Config{})
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, n := r.Args(in)
			want := tc.want
			if want == nil {
				want = tc.in
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tc.n, n)
			assert.Equal(t, tc.in, in, "the input is never modified")
			if n == 0 && len(in) > 0 {
				assert.Same(t, &in[0], &got[0], "nothing redacted: the same slice")
			}
			again, n2 := r.Args(got)
			assert.Equal(t, got, again, "idempotent")
			assert.Zero(t, n2)
		})
	}
}

func TestExtra(t *testing.T) {
	r, err := New(Config{
		ExtraFlags:    []string{"-P", "--db-pass"},
		ExtraKeys:     []string{"Session-ID", "cookie"},
		ExtraPatterns: []string{`sk_live_[0-9a-zA-Z]{8,}`, `pin:(\d+)`},
	})
	require.NoError(t, err)
	got, n := r.Args([]string{"app", "-P", "x", "--db-pass=y", "--session-id", "z", "cookie=c", "sk_live_abcdefgh12", "pin:1234", "-p", "80"})
	assert.Equal(t, []string{"app", "-P", R, "--db-pass=" + R, "--session-id", R, "cookie=" + R, R, "pin:" + R, "-p", "80"}, got)
	assert.Equal(t, 6, n)

	var nilR *Redactor
	got, n = nilR.Args([]string{"app", "--password", "x"})
	assert.Equal(t, []string{"app", "--password", "x"}, got, "a nil Redactor redacts nothing")
	assert.Zero(t, n)
}

func TestBadPatterns(t *testing.T) {
	_, err := New(Config{ExtraPatterns: []string{`ok`, `(unclosed`, `a**`}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `extra_patterns[1]: "(unclosed" is not a regular expression`)
	assert.Contains(t, err.Error(), `extra_patterns[2]: "a**" is not a regular expression`)
}

// maxGrowth bounds what redaction makes of an argument of n bytes:
// at most maxGrowth*n + len(Replacement) bytes (a 1-byte value becomes
// REDACTED).
const maxGrowth = 8

var secrets = []string{"hunter2", "s3cr3tValue", "AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}

func FuzzArgs(f *testing.F) {
	f.Add("app\x00--password\x00hunter2")
	f.Add("mysql\x00-phunter2\x00db")
	f.Add("sh\x00-c\x00curl -H 'Authorization: Bearer x' https://u:p@h/?token=t")
	f.Add(`curl` + "\x00-d\x00" + `{"password":"x\"y"}`)
	f.Add("env\x00A_TOKEN='q' b=1\x00eyJhbGciOi.eyJzdWIiOi.sig")
	r, err := New(Config{ExtraKeys: []string{"pin"}, ExtraFlags: []string{"-P"}})
	if err != nil {
		f.Fatal(err)
	}
	strict, err := New(Config{NamesOnly: true})
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"secrets.txt", "ordinary.txt"} {
		for _, c := range readCorpus(f, name) {
			f.Add(strings.Join(c.args, "\x00"))
		}
	}
	f.Fuzz(func(t *testing.T, argv string) {
		args := strings.Split(argv, "\x00")
		in := slices.Clone(args)
		got, n := r.Args(args)
		if !slices.Equal(in, args) {
			t.Fatal("input modified")
		}
		if len(got) != len(args) {
			t.Fatalf("%d args became %d", len(args), len(got))
		}
		if n == 0 && !slices.Equal(got, args) {
			t.Fatalf("changed without counting: %q -> %q", args, got)
		}
		if n > 0 && slices.Equal(got, args) {
			t.Fatalf("counted %d without a change: %q", n, args)
		}
		again, n2 := r.Args(got)
		if n2 != 0 || !slices.Equal(again, got) {
			t.Fatalf("not idempotent: %q -> %q -> %q", args, got, again)
		}
		for i := range got {
			if len(got[i]) > maxGrowth*len(args[i])+len(Replacement) {
				t.Fatalf("%q grew to %q (%d bytes, bound %d)", args[i], got[i], len(got[i]), maxGrowth*len(args[i])+len(Replacement))
			}
		}
		// Cut short (CutArgs): the same properties.
		cut, cn := r.CutArgs(args)
		if !slices.Equal(in, args) || len(cut) != len(args) || cn < n || cn == n && !slices.Equal(cut, got) {
			t.Fatalf("cut: %q -> %q (%d, Args %d)", args, cut, cn, n)
		}
		if again, n2 := r.CutArgs(cut); n2 != 0 || !slices.Equal(again, cut) {
			t.Fatalf("cut: not idempotent: %q -> %q -> %q", args, cut, again)
		}
		if last := len(cut) - 1; len(cut[last]) > maxGrowth*len(args[last])+len(Replacement) {
			t.Fatalf("cut: %q grew to %q", args[last], cut[last])
		}
		// A printed line (execsnoop's argv joined by spaces): the same
		// properties.
		line := strings.Join(args, " ")
		lout, ln := r.Line(line)
		if ln == 0 && lout != line || ln > 0 && lout == line {
			t.Fatalf("line: counted %d: %q -> %q", ln, line, lout)
		}
		if len(lout) > maxGrowth*len(line)+len(Replacement) {
			t.Fatalf("line %q grew to %q", line, lout)
		}
		if again, n2 := r.Line(lout); n2 != 0 || again != lout {
			t.Fatalf("line not idempotent: %q -> %q -> %q", line, lout, again)
		}
		// names_only: argv[0] and flag names only (the in-argument rules
		// applied to them), idempotent, bounded.
		nout, _ := strict.Args(args)
		if first, _ := strict.scan(args[0]); len(nout) != len(args) || nout[0] != first {
			t.Fatalf("names_only: %q -> %q", args, nout)
		}
		for i := 1; i < len(nout); i++ {
			if len(nout[i]) > maxGrowth*len(args[i])+len(Replacement) {
				t.Fatalf("names_only: %q grew to %q", args[i], nout[i])
			}
		}
		if again, n2 := strict.Args(nout); n2 != 0 || !slices.Equal(again, nout) {
			t.Fatalf("names_only not idempotent: %q -> %q -> %q", args, nout, again)
		}
		// A known secret after a secret flag never survives.
		for _, s := range secrets {
			probe := append(slices.Clone(args), "--api-key", s, "--token="+s)
			out, _ := r.Args(probe)
			if strings.Contains(out[len(out)-2], s) || strings.Contains(out[len(out)-1], s) {
				t.Fatalf("secret %q survived in %q", s, out)
			}
		}
	})
}

func BenchmarkArgs(b *testing.B) {
	r, _ := New(Config{})
	args := []string{"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/srv/www/htdocs", "8080"}
	b.ReportAllocs()
	for b.Loop() {
		r.Args(args)
	}
}

// BenchmarkArgsCompiler is the deployed bench's load (scripts/bench-agent.sh):
// a compiler's argv of -I, -D and -W flags, source and object paths.
func BenchmarkArgsCompiler(b *testing.B) {
	r, _ := New(Config{})
	args := []string{"/usr/bin/cc", "-O2", "-g", "-Wall", "-Wextra", "-Werror=implicit-function-declaration", "-fPIC", "-pipe", "-std=gnu11"}
	for i := range 12 {
		args = append(args, "-Isrc/core"+strconv.Itoa(i)+"/include")
	}
	for i := range 24 {
		args = append(args, "-DCONFIG_NUMA_"+strconv.Itoa(i)+"="+strconv.Itoa(i*7%100))
	}
	args = append(args, "-c", "src/net/file1_3af2.c", "-o", "src/net/file1_3af2.o", "-MF", "src/net/file1_3af2.d")
	b.ReportAllocs()
	for b.Loop() {
		r.Args(args)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(args)), "ns/arg")
}
