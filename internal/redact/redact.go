// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package redact replaces secrets in command lines (argv) by REDACTED, for
// every receiver that exports them (the seq receiver's argv, the bpftrace
// receiver's printed execsnoop lines).
//
// The rules are by class, not by tool (README of the seq receiver has the
// full list; testdata/secrets.txt is a corpus of the forms tools document):
//
//  1. Values of secret-like flags, the next argument or after =
//     (--password X, -storepass X, --token=X); openssl's pass:X wherever it
//     stands; env:/file:/fd: references are kept.
//  2. A table of tools' short credential flags, attached or not where the
//     tool documents it (mysql -pX, 7z -pX, redis-cli -a X, zip -P X,
//     openssl -k X, -p after a login subcommand, curl -u user:pass, ...),
//     vault login TOKEN and htpasswd -b's last argument.
//  3. key=value with a secret-like key anywhere in an argument, JSON
//     members, and `set <secret-like name> <value>`.
//  4. URL user info anywhere: the password, or a user name alone (a token)
//     outside ssh-like schemes.
//  5. Header-like arguments, with or without a space after the colon, at
//     the start or after the first =: Authorization, Proxy-Authorization,
//     Cookie, Set-Cookie and secret-like names; a header name alone takes
//     the next word(s); Bearer X anywhere.
//  6. Well-known token formats (AWS, GitHub, Slack, JWT).
//  7. Extra patterns (RE2).
//
// The script of a shell's -c is split into words as a POSIX shell reads
// them (splitWords) and the rules apply to the words, three levels deep.
// Config.NamesOnly keeps argv[0] and flag names only. Line applies the
// rules to the blank-separated words of a printed line; CutArgs to an argv
// cut short, whose last argument may end inside a secret.
//
// Secret-like names: a name, lower-cased with - and . read as _, ending in
// password, passwd, passphrase, secret, token, api_key, apikey, access_key,
// private_key, credential, credentials, secret_id, storepass, keypass,
// requirepass, masterauth, secret_key, account_key, accountkey, auth_key,
// bearer or creds, or equal to / ending in _ + auth, pass, pwd;
// plus the configured extra keys (same matching).
package redact

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Replacement replaces every secret value.
const Replacement = "REDACTED"

// Config adds to the built-in rules.
type Config struct {
	// ExtraFlags are more flags, as written (`--db-pass`, `-P`), whose value
	// (the next argument, or after =) is secret.
	ExtraFlags []string
	// ExtraKeys are more secret-like names for flags, key=value pairs and
	// headers, matched as the built-in ones (a suffix of the normalized name).
	ExtraKeys []string
	// ExtraPatterns are regular expressions (RE2) of secrets.
	ExtraPatterns []string
	// NamesOnly keeps argv[0] and flag names, the in-argument rules
	// applied to them, and replaces every value (Args; Line applies the
	// rules).
	NamesOnly bool
}

// Redactor applies the rules. It is immutable and safe for concurrent use.
type Redactor struct {
	// Secret-like names by their last byte, so that a name is compared with
	// those that end as it does (secretName runs for every flag and key of
	// every argv): long keys, a suffix match; short keys, equal or a suffix
	// after _.
	keysByLast, shortByLast byLast
	flags                   []string
	patterns                []*regexp.Regexp
	// namesOnly: Args keeps argv[0] and flag names only.
	namesOnly bool
}

var (
	defaultKeys = []string{"password", "passwd", "passphrase", "secret", "token", "api_key", "apikey", "access_key", "private_key", "credential", "credentials", "secret_id",
		// keytool's -storepass -keypass -srcstorepass ..., redis' requirepass and masterauth
		"storepass", "keypass", "requirepass", "masterauth",
		// s3cmd --secret_key, az --account-key and AccountKey= of Azure connection
		// strings, X-Auth-Key (Cloudflare), curl --oauth2-bearer, skopeo/podman
		// --creds user:password
		"secret_key", "account_key", "accountkey", "auth_key", "bearer", "creds"}
	defaultShort = []string{"auth", "pass", "pwd"}
	// Names ending so are about a secret, not one.
	notSecretSuffixes = []string{"_file", "_path", "_stdin", "_env", "_dir", "_name", "_length", "_len", "_ttl", "_type", "_mode", "_command", "_cmd", "_url", "_endpoint", "_id_file"}
	notSecretByLast   = indexByLast(notSecretSuffixes)
)

// byLast holds normalized names by their last byte.
type byLast [256][]string

func indexByLast(names []string) (b byLast) {
	for _, n := range names {
		if n != "" {
			b[n[len(n)-1]] = append(b[n[len(n)-1]], n)
		}
	}
	return b
}

// New compiles a Redactor; it names each bad pattern.
func New(c Config) (*Redactor, error) {
	r := &Redactor{flags: slices.Clone(c.ExtraFlags), namesOnly: c.NamesOnly}
	keys := slices.Clone(defaultKeys)
	for _, k := range c.ExtraKeys {
		if k = normalize(k); k != "" {
			keys = append(keys, k)
		}
	}
	r.keysByLast, r.shortByLast = indexByLast(keys), indexByLast(defaultShort)
	var errs []error
	for i, p := range c.ExtraPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("extra_patterns[%d]: %q is not a regular expression (%w); fix or remove it", i, p, err))
			continue
		}
		r.patterns = append(r.patterns, re)
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// normalize lower-cases a name and reads - and . as _.
func normalize(s string) string {
	b := []byte(strings.ToLower(strings.TrimLeft(s, "-")))
	for i, c := range b {
		if c == '-' || c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

// secretName reports whether a flag, key or header name is secret-like.
// It compares as normalize would, without allocating.
func (r *Redactor) secretName(name string) bool {
	name = strings.TrimLeft(name, "-")
	if name == "" || hasPrefixNorm(name, "no_") {
		return false
	}
	last := normByte(name[len(name)-1])
	for _, s := range notSecretByLast[last] {
		if hasSuffixNorm(name, s) {
			return false
		}
	}
	for _, k := range r.keysByLast[last] {
		if hasSuffixNorm(name, k) {
			return true
		}
	}
	for _, k := range r.shortByLast[last] {
		if len(name) == len(k) && hasSuffixNorm(name, k) ||
			len(name) > len(k) && hasSuffixNorm(name, k) && normByte(name[len(name)-len(k)-1]) == '_' {
			return true
		}
	}
	return false
}

func normByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '-' || c == '.':
		return '_'
	}
	return c
}

// hasSuffixNorm: normalize(s) ends in the normalized k.
func hasSuffixNorm(s, k string) bool {
	if len(s) < len(k) {
		return false
	}
	s = s[len(s)-len(k):]
	for i := len(k) - 1; i >= 0; i-- { // from the end: most names differ there
		if normByte(s[i]) != k[i] {
			return false
		}
	}
	return true
}

func hasPrefixNorm(s, k string) bool {
	return len(s) >= len(k) && hasSuffixNorm(s[:len(k)], k)
}

// scan applies the in-argument rules (3 to 7) to one string.
func (r *Redactor) scan(s string) (string, int) {
	n := 0
	var k int
	if strings.IndexByte(s, '=') >= 0 {
		s, k = r.keyValues(s)
		n += k
	}
	if strings.IndexByte(s, ':') >= 0 {
		s, k = r.jsonMembers(s)
		n += k
		s, k = urlCredentials(s)
		n += k
		s, k = r.header(s)
		n += k
	}
	if len(s) >= len("bearer ")+4 {
		s, k = bearer(s)
		n += k
	}
	if len(s) >= minTokenLen {
		s, k = tokens(s)
		n += k
	}
	for _, re := range r.patterns {
		s, k = replacePattern(re, s)
		n += k
	}
	return s, n
}

func isKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// keyValues redacts the values of secret-like key=value pairs.
func (r *Redactor) keyValues(s string) (string, int) {
	e := edit{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		lo := i
		for lo > 0 && isKeyChar(s[lo-1]) {
			lo--
		}
		key := s[lo:i]
		if !r.secretName(key) && !slices.Contains(r.flags, key) {
			continue
		}
		vlo, vhi := i+1, len(s)
		if lo > 0 { // inside an argument: up to a delimiter
			if vlo < len(s) && (s[vlo] == '"' || s[vlo] == '\'') {
				q := s[vlo]
				vlo++
				vhi = vlo
				for vhi < len(s) && s[vhi] != q {
					vhi++
				}
			} else {
				vhi = vlo
				for vhi < len(s) && !strings.ContainsRune("&; \t\r\n\"'", rune(s[vhi])) {
					vhi++
				}
			}
		}
		if vhi == vlo || s[vlo:vhi] == Replacement {
			continue
		}
		e.replace(vlo, vhi)
		i = vhi - 1
	}
	return e.done()
}

// jsonMembers redacts "key": "value" members with secret-like keys.
func (r *Redactor) jsonMembers(s string) (string, int) {
	ed := edit{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		// "key" before, optional spaces
		j := i - 1
		for j >= 0 && s[j] == ' ' {
			j--
		}
		if j < 1 || s[j] != '"' {
			continue
		}
		k := j - 1
		for k >= 0 && s[k] != '"' {
			k--
		}
		if k < ed.prev || !r.secretName(s[k+1:j]) {
			continue
		}
		v := i + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		if v >= len(s) || s[v] != '"' {
			continue
		}
		end := v + 1
		for end < len(s) && s[end] != '"' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		end = min(end, len(s))
		if end == v+1 || s[v+1:end] == Replacement {
			continue
		}
		ed.replace(v+1, end)
		i = end
	}
	return ed.done()
}

// urlCredentials redacts the user info of URLs anywhere in s: the password
// of scheme://user:pass@host, and a user name alone (scheme://TOKEN@host,
// how GitHub and others take a token) except in the schemes where it is a
// login name (ssh, sftp, scp, rsync, git+ssh).
func urlCredentials(s string) (string, int) {
	e := edit{s: s}
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			return e.done()
		}
		scheme := from + i
		lo := scheme + 3
		hi := lo
		for hi < len(s) && !strings.ContainsRune("/?# \t\r\n\"'", rune(s[hi])) {
			hi++
		}
		from = hi
		at := strings.LastIndexByte(s[lo:hi], '@')
		if at <= 0 {
			continue
		}
		plo, phi := lo, lo+at
		if colon := strings.IndexByte(s[lo:phi], ':'); colon >= 0 {
			plo = lo + colon + 1
		} else if loginScheme(s[:scheme]) {
			continue
		}
		if phi == plo || s[plo:phi] == Replacement {
			continue
		}
		e.replace(plo, phi)
	}
}

// cutSecret redacts what s, an argument cut short, ends in that would be
// a secret had the cut come later: the user info of a URL whose authority
// runs to the end without an @ (scheme://user:PASS, scheme://TOKEN, as
// urlCredentials would with the @), a token of a known format shorter than
// its format (tokens).
func cutSecret(s string) (string, int) {
	if i := strings.LastIndex(s, "://"); i >= 0 && !strings.ContainsAny(s[i+3:], "/?#@ \t\r\n\"'") {
		lo := i + 3
		if colon := strings.IndexByte(s[lo:], ':'); colon >= 0 {
			lo += colon + 1
		} else if loginScheme(s[:i]) {
			lo = len(s)
		}
		if lo < len(s) && s[lo:] != Replacement {
			return s[:lo] + Replacement, 1
		}
	}
	for _, f := range tokenFormats {
		lo := strings.LastIndex(s, f.prefix)
		if lo < 0 || lo > 0 && isAlnum(s[lo-1]) {
			continue
		}
		body := s[lo+len(f.prefix):]
		if body == "" || len(body) >= f.min || strings.IndexFunc(body, func(c rune) bool { return c >= 0x80 || !f.ok(byte(c)) }) >= 0 {
			continue
		}
		return s[:lo] + Replacement, 1
	}
	return s, 0
}

// loginScheme: the scheme that ends s takes a login name as its user.
func loginScheme(s string) bool {
	i := len(s)
	for i > 0 && (isAlnum(s[i-1]) || s[i-1] == '+' || s[i-1] == '-' || s[i-1] == '.') {
		i--
	}
	switch strings.ToLower(s[i:]) {
	case "ssh", "sftp", "scp", "rsync", "git+ssh", "ssh+git", "git":
		return true
	}
	return false
}

// header redacts a secret header's value: `Name: value` or `Name:value`
// at the start of the string or after its first = (--header=..., git's
// http.extraHeader=...). Authorization's scheme word (Bearer, Basic ...) is
// kept; a cookie header's values are replaced pair by pair.
func (r *Redactor) header(s string) (string, int) {
	if out, n := r.headerAt(s, 0); n > 0 {
		return out, n
	}
	if eq := strings.IndexByte(s, '='); eq >= 0 {
		return r.headerAt(s, eq+1)
	}
	return s, 0
}

func (r *Redactor) headerAt(s string, at int) (string, int) {
	i := at
	for i < len(s) && isKeyChar(s[i]) && s[i] != '.' {
		i++
	}
	if i == at || i >= len(s) || s[i] != ':' || s[at] == '-' { // -storepass:env is keytool's flag
		return s, 0
	}
	name := s[at:i]
	v := i + 1
	for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
		v++
	}
	if v >= len(s) {
		return s, 0
	}
	switch {
	case eqNorm(name, "cookie"):
		out, n := cookieValues(s[v:])
		return s[:v] + out, n
	case eqNorm(name, "set_cookie"): // name=value; Path=/; ...: the first pair only
		first, rest, _ := strings.Cut(s[v:], ";")
		out, n := cookieValues(first)
		if n == 0 {
			return s, 0
		}
		if len(first) < len(s[v:]) {
			out += ";" + rest
		}
		return s[:v] + out, n
	case !r.secretHeader(name):
		return s, 0
	}
	// Keep the scheme word: Bearer, Basic, Token, Digest, ...
	if sp := strings.IndexByte(s[v:], ' '); sp > 0 && isScheme(s[v:v+sp]) {
		v += sp + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
	}
	if v >= len(s) || s[v:] == Replacement {
		return s, 0
	}
	return s[:v] + Replacement, 1
}

// secretHeader: a header whose value is a credential.
func (r *Redactor) secretHeader(name string) bool {
	return eqNorm(name, "authorization") || eqNorm(name, "proxy_authorization") ||
		eqNorm(name, "cookie") || eqNorm(name, "set_cookie") || r.secretName(name)
}

// eqNorm: normalize(s) == k, without allocating.
func eqNorm(s, k string) bool { return len(s) == len(k) && hasSuffixNorm(s, k) }

func isScheme(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0
}

// bearer redacts the token after "Bearer " (any case).
func bearer(s string) (string, int) {
	e := edit{s: s}
	for from := 0; from < len(s); {
		i := indexFold(s[from:], "bearer ")
		if i < 0 {
			break
		}
		start := from + i
		lo := start + len("bearer ")
		for lo < len(s) && s[lo] == ' ' {
			lo++
		}
		hi := lo
		for hi < len(s) && isTokenChar(s[hi]) {
			hi++
		}
		from = hi
		if hi-lo < 4 || s[lo:hi] == Replacement || start > 0 && isAlnum(s[start-1]) {
			continue
		}
		e.replace(lo, hi)
	}
	return e.done()
}

func indexFold(s, sub string) int {
	for from := 0; ; {
		i := strings.IndexAny(s[from:], "bB")
		if i < 0 || from+i+len(sub) > len(s) {
			return -1
		}
		if strings.EqualFold(s[from+i:from+i+len(sub)], sub) {
			return from + i
		}
		from += i + 1
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// tokenFormat is a well-known token: a prefix, then at least min characters
// of its alphabet.
type tokenFormat struct {
	prefix string
	min    int
	max    int // 0: no limit
	ok     func(c byte) bool
}

func upperDigit(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
func alnumUnder(c byte) bool { return isAlnum(c) || c == '_' }
func slackChar(c byte) bool  { return isAlnum(c) || c == '-' }

// minTokenLen is the shortest string tokens can find: a JWT's 10 bytes,
// then .eyJ (the formats below need 15 or more).
const minTokenLen = 14

var tokenFormats = []tokenFormat{
	{"AKIA", 16, 16, upperDigit},
	{"ASIA", 16, 16, upperDigit},
	{"ghp_", 30, 0, isAlnum},
	{"gho_", 30, 0, isAlnum},
	{"ghu_", 30, 0, isAlnum},
	{"ghs_", 30, 0, isAlnum},
	{"ghr_", 30, 0, isAlnum},
	{"github_pat_", 20, 0, alnumUnder},
	{"xoxb-", 10, 0, slackChar},
	{"xoxp-", 10, 0, slackChar},
	{"xoxa-", 10, 0, slackChar},
	{"xoxr-", 10, 0, slackChar},
	{"xoxs-", 10, 0, slackChar},
	{"xoxe-", 10, 0, slackChar},
}

func b64url(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

// tokens redacts the well-known token formats and JWTs.
func tokens(s string) (string, int) {
	n := 0
	if !strings.Contains(s, "AKIA") && !strings.Contains(s, "ASIA") && !strings.Contains(s, "gh") && !strings.Contains(s, "xox") {
		return jwts(s)
	}
	for _, f := range tokenFormats {
		e := edit{s: s}
		runEnd := -1 // the end of the last body scanned: a prefix inside it has the same end
		for from := 0; ; {
			i := strings.Index(s[from:], f.prefix)
			if i < 0 {
				break
			}
			lo := from + i
			hi := lo + len(f.prefix)
			if hi <= runEnd {
				hi = runEnd
			} else {
				for hi < len(s) && f.ok(s[hi]) {
					hi++
				}
				runEnd = hi
			}
			from = lo + len(f.prefix)
			body := hi - lo - len(f.prefix)
			if body < f.min || f.max > 0 && body != f.max || lo > 0 && isAlnum(s[lo-1]) {
				continue
			}
			e.replace(lo, hi)
			from = hi
		}
		var k int
		s, k = e.done()
		n += k
	}
	s, k := jwts(s)
	return s, n + k
}

// jwts redacts JWTs: header.payload.signature, both JSON parts start {" (eyJ).
func jwts(s string) (string, int) {
	e := edit{s: s}
	for from := 0; ; {
		i := strings.Index(s[from:], "eyJ")
		if i < 0 {
			break
		}
		lo := from + i
		from = lo + 3
		if lo > 0 && b64url(s[lo-1]) {
			continue
		}
		hi := lo
		for hi < len(s) && b64url(s[hi]) {
			hi++
		}
		if hi-lo < 10 || hi+4 > len(s) || s[hi] != '.' || !strings.HasPrefix(s[hi+1:], "eyJ") {
			continue
		}
		hi++
		for hi < len(s) && b64url(s[hi]) {
			hi++
		}
		if hi < len(s) && s[hi] == '.' {
			hi++
			for hi < len(s) && b64url(s[hi]) {
				hi++
			}
		}
		e.replace(lo, hi)
		from = hi
	}
	return e.done()
}

// replacePattern replaces re's matches (or their groups) by Replacement.
func replacePattern(re *regexp.Regexp, s string) (string, int) {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s, 0
	}
	var b strings.Builder
	n, prev := 0, 0
	for _, m := range ms {
		spans := [][2]int{{m[0], m[1]}}
		if len(m) > 2 {
			spans = spans[:0]
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 {
					spans = append(spans, [2]int{m[g], m[g+1]})
				}
			}
		}
		for _, sp := range spans {
			if sp[0] < prev || sp[1] == sp[0] || s[sp[0]:sp[1]] == Replacement {
				continue
			}
			b.WriteString(s[prev:sp[0]])
			b.WriteString(Replacement)
			prev = sp[1]
			n++
		}
	}
	if n == 0 {
		return s, 0
	}
	b.WriteString(s[prev:])
	return b.String(), n
}

// edit builds s with spans replaced by Replacement, in one pass: spans
// come in order and do not overlap, so a string with many secrets costs
// its length, not its length times their number.
type edit struct {
	s    string
	b    strings.Builder
	prev int // the end of the last span replaced
	n    int
}

func (e *edit) replace(lo, hi int) {
	if e.n == 0 {
		e.b.Grow(len(e.s) + len(Replacement))
	}
	e.b.WriteString(e.s[e.prev:lo])
	e.b.WriteString(Replacement)
	e.prev = hi
	e.n++
}

// done returns the edited string and the number of spans replaced.
func (e *edit) done() (string, int) {
	if e.n == 0 {
		return e.s, 0
	}
	e.b.WriteString(e.s[e.prev:])
	return e.b.String(), e.n
}
