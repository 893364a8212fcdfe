// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusLine is one command of testdata/secrets.txt or ordinary.txt.
type corpusLine struct {
	source  string   // the comment above it: the tool and the form
	line    int      // 1-based line number in the file
	args    []string // the command, markers removed
	want    []string // the command with each secret replaced by REDACTED
	secrets []string
}

// readCorpus reads a corpus file: comments start with #; a command is
// split into words as a POSIX shell would (splitWords); {{...}} marks a
// secret.
func readCorpus(t testing.TB, name string) []corpusLine {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	var out []corpusLine
	source := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(text, "#") {
			source = strings.TrimSpace(strings.TrimPrefix(text, "#"))
			continue
		}
		var plain, want strings.Builder
		var secrets []string
		rest := text
		for {
			i := strings.Index(rest, "{{")
			if i < 0 {
				plain.WriteString(rest)
				want.WriteString(rest)
				break
			}
			j := strings.Index(rest[i:], "}}")
			require.Positive(t, j, "%s:%d: unclosed {{", name, n)
			plain.WriteString(rest[:i])
			want.WriteString(rest[:i])
			secret := rest[i+2 : i+j]
			secrets = append(secrets, secret)
			plain.WriteString(secret)
			want.WriteString(Replacement)
			rest = rest[i+j+2:]
		}
		out = append(out, corpusLine{source: source, line: n, args: wordsOf(plain.String()), want: wordsOf(want.String()), secrets: secrets})
	}
	require.NoError(t, sc.Err())
	return out
}

func wordsOf(s string) []string {
	var out []string
	for _, w := range splitWords(s) {
		out = append(out, w.text)
	}
	return out
}

// survivors counts the occurrences of the secrets in the words.
func survivors(words, secrets []string) int {
	n := 0
	for _, w := range words {
		for _, s := range secrets {
			n += strings.Count(w, s)
		}
	}
	return n
}

// TestCorpusSecrets runs every command of testdata/secrets.txt through the
// redactor: no secret survives (not as a whole, nor as a substring), and
// every other byte of the command does (the output is the command with
// REDACTED in place of each secret).
func TestCorpusSecrets(t *testing.T) {
	lines := readCorpus(t, "secrets.txt")
	require.GreaterOrEqual(t, len(lines), 40)
	r, err := New(Config{})
	require.NoError(t, err)
	before, after, secrets := 0, 0, 0
	for _, c := range lines {
		require.NotEmpty(t, c.secrets, "line %d has no {{secret}}", c.line)
		require.NotEmpty(t, c.source, "line %d has no comment naming its tool and form", c.line)
		for _, s := range c.secrets {
			require.GreaterOrEqual(t, len(s), 4, "line %d: secrets of 4 bytes or more", c.line)
		}
		secrets += len(c.secrets)
		before += survivors(c.args, c.secrets)
		got, n := r.Args(c.args)
		after += survivors(got, c.secrets)
		if !assert.Equal(t, c.want, got, "line %d (%s)", c.line, c.source) {
			continue
		}
		assert.Equal(t, len(c.secrets), n, "line %d: one count per value replaced", c.line)
	}
	t.Logf("%d commands, %d secrets: %d occurrences before redaction, %d after", len(lines), secrets, before, after)
	assert.Zero(t, after, "secret occurrences that survived redaction")
}

// TestCorpusSecretsCut: each command of the corpus cut at every byte, as a
// byte limit on argv cuts it (its last argument kept as far as the limit),
// keeps no 4 bytes of a secret that the command around it does not hold.
func TestCorpusSecretsCut(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	for _, c := range readCorpus(t, "secrets.txt") {
		around := strings.Join(c.want, "\x00")
		for limit := 1; limit < len(strings.Join(c.args, "\x00"))+1; limit++ {
			got, _ := r.CutArgs(cutArgv(c.args, limit))
			out := strings.Join(got, "\x00")
			for _, s := range c.secrets {
				for k := 4; k <= len(s); k++ {
					if strings.Contains(out, s[:k]) && !strings.Contains(around, s[:k]) {
						t.Errorf("line %d (%s) cut at %d bytes: %q keeps %q of %q", c.line, c.source, limit, got, s[:k], s)
						break
					}
				}
			}
		}
	}
}

// cutArgv is args cut at limit bytes, each argument with its NUL.
func cutArgv(args []string, limit int) []string {
	var out []string
	for _, a := range args {
		if limit <= 0 {
			break
		}
		if len(a) >= limit {
			return append(out, a[:limit])
		}
		out = append(out, a)
		limit -= len(a) + 1
	}
	return out
}

// TestCorpusOrdinary: ordinary commands come through unchanged.
func TestCorpusOrdinary(t *testing.T) {
	lines := readCorpus(t, "ordinary.txt")
	require.GreaterOrEqual(t, len(lines), 40)
	r, err := New(Config{})
	require.NoError(t, err)
	for _, c := range lines {
		got, n := r.Args(c.args)
		assert.Equal(t, c.args, got, "line %d", c.line)
		assert.Zero(t, n, "line %d", c.line)
	}
}

// BenchmarkRedact runs the ordinary corpus (what the agent sees almost
// always) and the secrets corpus through the redactor; ns/arg is the cost
// per argument.
func BenchmarkRedact(b *testing.B) {
	r, err := New(Config{})
	require.NoError(b, err)
	for _, name := range []string{"ordinary.txt", "secrets.txt"} {
		lines := readCorpus(b, name)
		nargs := 0
		for _, c := range lines {
			nargs += len(c.args)
		}
		b.Run(strings.TrimSuffix(name, ".txt"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, c := range lines {
					r.Args(c.args)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nargs), "ns/arg")
		})
	}
}

// TestNamesOnly: argv[0] and flag names stay; every value goes, the
// corpus' secrets included.
func TestNamesOnly(t *testing.T) {
	r, err := New(Config{NamesOnly: true})
	require.NoError(t, err)
	got, n := r.Args([]string{"mysql", "-u", "root", "-psecret", "--password=x", "--host", "db", "--", "-", "shop"})
	assert.Equal(t, []string{"mysql", "-u", R, "-p" + R, "--password=" + R, "--host", R, "--", "-", R}, got)
	assert.Equal(t, 5, n)
	for _, name := range []string{"secrets.txt", "ordinary.txt"} {
		for _, c := range readCorpus(t, name) {
			got, _ := r.Args(c.args)
			assert.Zero(t, survivors(got, c.secrets), "line %d", c.line)
			assert.Equal(t, c.args[0], got[0])
			for i := 1; i < len(got); i++ {
				if strings.HasPrefix(c.args[i], "--") {
					name, _, _ := strings.Cut(c.args[i], "=")
					assert.True(t, strings.HasPrefix(got[i], name), "line %d: %q kept its name: %q", c.line, c.args[i], got[i])
				}
			}
		}
	}
	// What it keeps gets the in-argument rules: argv[0] (a process that
	// set its own title, read from /proc/PID/cmdline at the snapshot, has
	// its whole command line there) and flag names, never less redacted
	// than the rules leave them.
	rules, err := New(Config{})
	require.NoError(t, err)
	for _, args := range [][]string{
		{"myd --password=hunter2 --db-url=postgres://app:pw2@db/x"},
		{"https://bob:hunter2@h/x"},
		{"PGPASSWORD=hunter2"},
		{"app", "--ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
	} {
		want, _ := rules.Args(args)
		got, n := r.Args(args)
		assert.Equal(t, want, got, "%q", args)
		assert.Positive(t, n)
	}
}

// TestLine: a printed line of argv joined by spaces (execsnoop) loses the
// corpus' secrets and keeps its spacing; ordinary lines are unchanged.
func TestLine(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	for _, c := range readCorpus(t, "secrets.txt") {
		line := "148        23894 " + strings.Join(c.args, " ")
		got, n := r.Line(line)
		assert.Equal(t, len(c.secrets), n, "line %d: %s -> %s", c.line, line, got)
		for _, s := range c.secrets {
			assert.NotContains(t, got, s, "line %d: %s", c.line, line)
		}
		assert.True(t, strings.HasPrefix(got, "148        23894 "), got)
	}
	for _, c := range readCorpus(t, "ordinary.txt") {
		line := "302        23898 " + strings.Join(c.args, " ")
		got, n := r.Line(line)
		assert.Equal(t, line, got)
		assert.Zero(t, n)
	}
	got, n := r.Line("9 1 curl -H Authorization: Bearer abcdef -H Cookie: sid=xyz1 https://h/")
	assert.Equal(t, "9 1 curl -H Authorization: Bearer "+R+" -H Cookie: "+R+" https://h/", got)
	assert.Equal(t, 2, n)
}

// TestForms: the rules by class, beyond the corpus.
func TestForms(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	for _, tc := range []struct{ in, want []string }{
		// header-like arguments, with and without a space
		{[]string{"curl", "-H", "authorization:Basic dXNlcjpwYXNz"}, []string{"curl", "-H", "authorization:Basic " + R}},
		{[]string{"curl", "-H", "Authorization:tok123"}, []string{"curl", "-H", "Authorization:" + R}},
		{[]string{"curl", "-H", "Cookie: a=1; b=2"}, []string{"curl", "-H", "Cookie: a=" + R + "; b=" + R}},
		{[]string{"app", "Set-Cookie: sid=abc; Path=/; HttpOnly"}, []string{"app", "Set-Cookie: sid=" + R + "; Path=/; HttpOnly"}},
		{[]string{"app", "--header=X-Auth-Token: t0k3n"}, []string{"app", "--header=X-Auth-Token: " + R}},
		// URL user info, anywhere, user-only tokens
		{[]string{"app", "--remote=https://tok3n@example.com/x"}, []string{"app", "--remote=https://" + R + "@example.com/x"}},
		{[]string{"app", "a,https://u:p4ss@h/,b"}, []string{"app", "a,https://u:" + R + "@h/,b"}},
		{[]string{"rsync", "rsync://backup@host/mod"}, nil},
		// pass:/env:/file: arguments
		{[]string{"openssl", "rsa", "-passin", "pass:abcd", "-passout", "env:PW"}, []string{"openssl", "rsa", "-passin", "pass:" + R, "-passout", "env:PW"}},
		{[]string{"app", "--password", "file:/run/pw"}, nil},
		// set <secret-like name> <value>
		{[]string{"git", "config", "set", "github.token", "abcd"}, []string{"git", "config", "set", "github.token", R}},
		{[]string{"app", "set", "color", "blue"}, nil},
		// shells: -c --, quoted words keep their quotes
		{[]string{"bash", "-c", "--", `x --token "a b c"`}, []string{"bash", "-c", "--", `x --token "` + R + `"`}},
		{[]string{"sh", "-c", `echo "it's"; app --password=it\'s`}, []string{"sh", "-c", `echo "it's"; app --password=` + R}},
		// scripts in scripts
		{[]string{"sh", "-c", `bash -c 'app --password pw12 && echo ok'`}, []string{"sh", "-c", `bash -c 'app --password ` + R + ` && echo ok'`}},
		// login subcommands take -p as a password, attached or not
		{[]string{"oc", "login", "-u", "dev", "-pdevpw1", "https://api:6443"}, []string{"oc", "login", "-u", "dev", "-p" + R, "https://api:6443"}},
		// rar -p- is "no password"
		{[]string{"rar", "a", "-p-", "a.rar"}, nil},
	} {
		got, _ := r.Args(tc.in)
		want := tc.want
		if want == nil {
			want = tc.in
		}
		assert.Equal(t, want, got, "%q", tc.in)
	}
}

// TestCostLinear: the rules cost about the length of what they read,
// however many secrets it holds (a 64 KiB printed line or argument of
// repeated secret forms once took seconds: each replacement copied the
// rest of the string). 16 times the bytes must cost well under 256 times
// (quadratic) the time: the bound is 64, best of 9 runs each.
func TestCostLinear(t *testing.T) {
	r, err := New(Config{})
	require.NoError(t, err)
	best := func(f func()) time.Duration {
		d := time.Duration(1 << 62)
		for range 9 {
			runtime.GC() // a collection inside a timed run is the noise, not the cost
			t0 := time.Now()
			f()
			d = min(d, time.Since(t0))
		}
		return max(d, time.Microsecond)
	}
	for _, unit := range []string{"token=x&", `"pass":"x",`, "https://u:p@h/ ", "Bearer abcd ", "-pxx ",
		"Cookie: a=b;", "AKIAIOSFODNN7EXAMPLE ", "AKIA", "github_pat_", "xoxb-", "eyJ", "sh -c 'a' ", `"token" :`,
		"eyJhbGciOiJIUzI1.eyJ ", "Authorization: ", "set token ", "x-api-key:a "} {
		cost := func(n int, kind string) time.Duration {
			s := strings.Repeat(unit, n/len(unit))
			switch kind {
			case "args":
				return best(func() { r.Args([]string{"mysql", s}) })
			case "script":
				return best(func() { r.Args([]string{"sh", "-c", s}) })
			}
			return best(func() { r.Line(s) })
		}
		for _, kind := range []string{"args", "script", "line"} {
			small, large := cost(4<<10, kind), cost(64<<10, kind)
			ratio := float64(large) / float64(small)
			assert.Less(t, ratio, 64.0, "%q as %s: 4 KiB %v, 64 KiB %v", unit, kind, small, large)
			assert.Less(t, large, 200*time.Millisecond, "%q as %s: 64 KiB %v", unit, kind, large)
		}
	}
}
