// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"path"
	"slices"
	"strings"
)

// Args returns argv with its secrets replaced, and how many values were
// replaced. When none was, it returns args itself; otherwise a new slice
// (args is never modified).
func (r *Redactor) Args(args []string) ([]string, int) {
	if r == nil || len(args) == 0 {
		return args, 0
	}
	if r.namesOnly {
		return r.argsNamesOnly(args)
	}
	return r.args(args, maxScriptDepth)
}

// CutArgs is Args for an argv whose last argument may have been cut short
// (a byte limit on argv: the kernel's at an exec, a read of
// /proc/PID/cmdline): a secret that the cut ends before what marks it is
// replaced as well, in that argument (cutSecret). A whole argument so
// replaced is over-redaction, of the one argument a cut leaves.
func (r *Redactor) CutArgs(args []string) ([]string, int) {
	out, n := r.Args(args)
	if r == nil || len(out) == 0 {
		return out, n
	}
	last, k := cutSecret(out[len(out)-1])
	if k == 0 {
		return out, n
	}
	if n == 0 {
		out = slices.Clone(out) // Args returned args itself
	}
	out[len(out)-1] = last
	return out, n + k
}

// Line redacts a printed line that holds a command line as words separated
// by blanks (bpftrace's execsnoop prints `TIME PID argv...`, argv joined
// by spaces, so quoting is lost): the argv rules apply to its words, and
// the line keeps its spacing. A Redactor configured names_only applies the
// rules all the same (a line has more than argv in it).
func (r *Redactor) Line(s string) (string, int) {
	if r == nil || s == "" {
		return s, 0
	}
	var spans [][2]int
	var words []string
	for i := 0; i < len(s); {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !isBlank(s[j]) {
			j++
		}
		if j > i {
			spans = append(spans, [2]int{i, j})
			words = append(words, s[i:j])
		}
		i = j
	}
	got, n := r.args(words, 0) // a script's words are words of the line
	if n == 0 {
		return bearer(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for k, sp := range spans {
		b.WriteString(s[prev:sp[0]])
		b.WriteString(got[k])
		prev = sp[1]
	}
	b.WriteString(s[prev:])
	out, k := bearer(b.String())
	return out, n + k
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// argsNamesOnly keeps argv[0] and the names of flags, and replaces every
// value: each argument that is not a flag, the part after = of a flag, and
// the rest of a single-dash word longer than two bytes (-pSECRET cannot be
// told from -la or -storepass, so both lose all but their first letter).
// What it keeps gets the in-argument rules (scan), as Args would apply
// them: argv[0] may be a whole command line (a process that set its own
// title, read from /proc/PID/cmdline).
func (r *Redactor) argsNamesOnly(args []string) ([]string, int) {
	out := make([]string, len(args))
	var n int
	out[0], n = r.scan(args[0])
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == Replacement || a == "-" || a == "--" || a == "-"+Replacement || a == "":
			out[i] = a
			continue
		case strings.HasPrefix(a, "-"):
			if eq := strings.IndexByte(a, '='); eq >= 0 {
				if a[eq+1:] == Replacement || eq == len(a)-1 {
					out[i] = a
					continue
				}
				out[i] = a[:eq+1] + Replacement
			} else if !strings.HasPrefix(a, "--") && len(a) > 2 && a[2:] != Replacement {
				out[i] = a[:2] + Replacement
			} else {
				var k int
				out[i], k = r.scan(a)
				n += k
				continue
			}
		default:
			out[i] = Replacement
		}
		n++
	}
	if n == 0 {
		return args, 0
	}
	return out, n
}

// state is what the words seen so far of one argv say about the next.
type state struct {
	tool      string // the tool running (toolOf), "" when none known
	login     bool   // a login subcommand: -p is a password (docker, podman, helm registry, az, oc ...)
	vaultTok  bool   // vault login: its first positional is a token
	htpasswdB bool   // htpasswd -b: the last argument is the password
	script    bool   // a shell's -c: the next word is a script (after a --)
	set       bool   // the previous word was `set` (aws configure set, CONFIG SET, npm config set)
	setKey    bool   // `set <secret-like name>`: the next word is the value
}

// maxScriptDepth bounds how deep shell -c scripts inside scripts are split
// (sh -c "bash -c '...'" is two).
const maxScriptDepth = 3

// args applies the rules to a word list; shells is how many levels of
// shell -c scripts are still split into words (0: a script is a word).
func (r *Redactor) args(args []string, shells int) ([]string, int) {
	var out []string
	n := 0
	set := func(i int, s string) {
		if out == nil {
			out = slices.Clone(args)
		}
		out[i] = s
	}
	var st state
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" {
			continue
		}
		// A shell's -c script.
		if st.script {
			if a == "--" {
				continue
			}
			st.script = false
			if shells > 0 && a[0] != '-' {
				if s, k := r.script(a, shells-1); k > 0 {
					set(i, s)
					n += k
				}
				continue
			}
		}
		// `set <name> <value>`.
		if st.setKey && a[0] != '-' {
			st.setKey = false
			if v, ok := secretValue(a); ok {
				set(i, v)
				n++
			}
			continue
		}
		st.setKey = false
		wasSet := st.set
		st.set = a == "set" || a == "SET"
		if wasSet && a[0] != '-' && strings.IndexByte(a, '=') < 0 && r.secretName(a) {
			st.setKey = true
			continue
		}
		if st.tool == "sshpass" && i > 0 && a[0] != '-' {
			st.tool = "" // sshpass [-p pw] command...: the command's flags are its own
		}
		if t := toolOf(a); t != "" {
			switch t {
			case "login":
				if i > 0 {
					st.login = true
					st.vaultTok = st.tool == "vault"
				}
			default:
				st.tool, st.login, st.vaultTok, st.htpasswdB = t, false, false, false
			}
		}
		if i > 0 && a[0] == '-' && len(a) > 1 {
			if st.tool == "shell" && isDashC(a) {
				st.script = true
				continue
			}
			if st.tool == "htpasswd" && a[1] != '-' && strings.IndexByte(a, 'b') > 0 {
				st.htpasswdB = true
			}
			// Attached values of tool flags (-pX), before -pX is read as
			// a flag named pX.
			if s, ok := st.attached(a); ok {
				set(i, s)
				n++
				continue
			}
			// The value is the next argument. A next argument that is a
			// long flag is not a value: the flag had none (`--token --verbose`).
			if i+1 < len(args) && !isLongFlag(args[i+1]) && r.takesSecret(&st, a) {
				if v, ok := secretValue(args[i+1]); ok {
					set(i+1, v)
					n++
				}
				i++
				continue
			}
			// user:password values (curl -u, smbclient -U user%pw), cookies (curl -b).
			if i+1 < len(args) {
				if s, k := st.pairValue(a, args[i+1]); k > 0 {
					set(i+1, s)
					n += k
					i++
					continue
				}
			}
		}
		// Positionals: vault login TOKEN, htpasswd -b file user PASSWORD.
		if i > 0 && a[0] != '-' && strings.IndexByte(a, '=') < 0 {
			if st.vaultTok && a != "login" {
				st.vaultTok = false
				if a != Replacement {
					set(i, Replacement)
					n++
				}
				continue
			}
			if st.htpasswdB && i == len(args)-1 && a != Replacement {
				set(i, Replacement)
				n++
				continue
			}
		}
		// A header name alone, its value in the next word(s):
		// `Authorization: Bearer X` split by a shell or a joined line.
		// Likewise `Authorization:Bearer X`, `--header=Authorization: X`.
		if i+1 < len(args) && isValue(args[i+1]) && r.headerWithoutValue(a) {
			j := i + 1
			if j+1 < len(args) && args[j] != Replacement && isScheme(args[j]) && isValue(args[j+1]) && a[len(a)-1] == ':' {
				j++
			}
			if args[j] != Replacement {
				set(j, Replacement)
				n++
			}
			i = j
			continue
		}
		if s, k := r.scan(a); k > 0 {
			set(i, s)
			n += k
		}
	}
	if out == nil {
		return args, 0
	}
	return out, n
}

// secretValue is what replaces the secret value v: REDACTED, pass:REDACTED
// for openssl's pass:X, nothing for a reference to where the secret is
// (openssl's env:VAR, file:PATH, fd:N, stdin) or a value already replaced.
func secretValue(v string) (string, bool) {
	switch {
	case v == Replacement || v == "stdin" || v == "":
		return v, false
	case strings.HasPrefix(v, "env:") || strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "fd:"):
		return v, false
	case strings.HasPrefix(v, "pass:"):
		if v[5:] == Replacement || len(v) == 5 {
			return v, false
		}
		return "pass:" + Replacement, true
	}
	return Replacement, true
}

// script applies the argv rules to the words of a shell script; a word
// that changed is written back in its own quotes.
func (r *Redactor) script(s string, shells int) (string, int) {
	words := splitWords(s)
	texts := make([]string, len(words))
	for k, w := range words {
		texts[k] = w.text
	}
	got, n := r.args(texts, shells)
	if n == 0 {
		return bearer(s) // Bearer and its token are two words
	}
	var b strings.Builder
	prev := 0
	for k, w := range words {
		b.WriteString(s[prev:w.lo])
		switch {
		case got[k] == texts[k]:
			b.WriteString(s[w.lo:w.hi])
		case w.quoted:
			b.WriteString(quote(s[w.lo:w.hi], got[k]))
		default:
			b.WriteString(got[k])
		}
		prev = w.hi
	}
	b.WriteString(s[prev:])
	out, k := bearer(b.String())
	return out, n + k
}

// headerWithoutValue: a is a secret header's name and a colon, at its
// start or after its first =, with nothing after it but a scheme word
// (Authorization:, Authorization:Bearer, --header=Cookie:): its value is in
// the next word.
func (r *Redactor) headerWithoutValue(a string) bool {
	if strings.IndexByte(a, ':') < 0 {
		return false
	}
	at := 0
	for try := 0; try < 2; try++ {
		i := at
		for i < len(a) && isKeyChar(a[i]) && a[i] != '.' {
			i++
		}
		if i > at && i < len(a) && a[i] == ':' && a[at] != '-' {
			rest := a[i+1:]
			if rest == "" {
				return r.secretHeader(a[at:i])
			}
			name := a[at:i]
			return rest != Replacement && isScheme(rest) && (eqNorm(name, "authorization") || eqNorm(name, "proxy_authorization"))
		}
		eq := strings.IndexByte(a, '=')
		if eq < 0 {
			return false
		}
		at = eq + 1
	}
	return false
}

// isValue: a word that can be a flag's value (not empty, not a flag).
func isValue(a string) bool { return a != "" && a[0] != '-' }

func isLongFlag(a string) bool { return len(a) > 2 && a[0] == '-' && a[1] == '-' }

// takesSecret: flag a's value is the next argument, and secret.
func (r *Redactor) takesSecret(st *state, a string) bool {
	if strings.IndexByte(a, '=') >= 0 {
		return false
	}
	if slices.Contains(r.flags, a) {
		return true
	}
	if st.login && a == "-p" {
		return true
	}
	switch st.tool {
	case "mysql":
		if a == "-p" || a == "--password" || a == "--pass" {
			return false // prompts; the next argument is not the password
		}
	case "sshpass", "mongo":
		if a == "-p" {
			return true
		}
	case "ldap":
		if a == "-w" {
			return true
		}
	case "redis-cli":
		if a == "-a" {
			return true
		}
	case "openssl":
		if a == "-k" {
			return true
		}
	case "zip", "sqlcmd", "mosquitto":
		if a == "-P" {
			return true
		}
	case "ssh-keygen":
		if a == "-N" || a == "-P" {
			return true
		}
	case "twine", "cqlsh":
		if a == "-p" {
			return true
		}
	}
	name := a[1:]
	if name != "" && name[0] == '-' {
		name = name[1:]
	}
	if len(name) < 2 || name[0] == '-' {
		return false
	}
	return r.secretName(name)
}

// attached: -pX of the tools that document an attached password.
func (st *state) attached(a string) (string, bool) {
	if len(a) < 3 || a[1] == '-' {
		return "", false
	}
	var f byte
	switch st.tool {
	case "curl": // -uuser:password, -Uuser:password
		if a[1] != 'u' && a[1] != 'U' {
			return "", false
		}
		user, pass, ok := strings.Cut(a[2:], ":")
		if !ok || pass == "" || pass == Replacement {
			return "", false
		}
		return a[:2] + user + ":" + Replacement, true
	case "mysql", "sshpass", "mongo", "7z", "rar":
		f = 'p'
	case "redis-cli":
		f = 'a'
	case "ldap":
		f = 'w'
	case "sqlcmd":
		f = 'P'
	default:
		if !st.login {
			return "", false
		}
		f = 'p'
	}
	if a[1] != f || a[2:] == Replacement || a[2:] == "-" { // rar -p-: no password
		return "", false
	}
	return a[:2] + Replacement, true
}

// pairValue: the password of curl's -u/--user/--proxy-user user:pass and
// smbclient's -U user%pass, and the values of curl's -b/--cookie pairs.
func (st *state) pairValue(flag, v string) (string, int) {
	switch st.tool {
	case "curl":
		switch flag {
		case "-u", "--user", "-U", "--proxy-user":
			user, pass, ok := strings.Cut(v, ":")
			if !ok || pass == "" || pass == Replacement {
				return "", 0
			}
			return user + ":" + Replacement, 1
		case "-b", "--cookie":
			if strings.IndexByte(v, '=') < 0 {
				return "", 0 // a cookie file
			}
			return cookieValues(v)
		}
	case "etcd":
		if flag == "--user" { // etcdctl --user name:password
			user, pass, ok := strings.Cut(v, ":")
			if !ok || pass == "" || pass == Replacement {
				return "", 0
			}
			return user + ":" + Replacement, 1
		}
	case "smb":
		if flag == "-U" || flag == "--user" {
			user, pass, ok := strings.Cut(v, "%")
			if !ok || pass == "" || pass == Replacement {
				return "", 0
			}
			return user + "%" + Replacement, 1
		}
	}
	return "", 0
}

// cookieValues replaces the values of name=value; name=value pairs.
func cookieValues(s string) (string, int) {
	var b strings.Builder
	n := 0
	for k, part := range strings.Split(s, ";") {
		if k > 0 {
			b.WriteByte(';')
		}
		name, v, ok := strings.Cut(part, "=")
		if !ok || v == "" || v == Replacement {
			b.WriteString(part)
			continue
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(Replacement)
		n++
	}
	if n == 0 {
		return s, 0
	}
	return b.String(), n
}

// toolOf names the tool an argument runs, by its basename, or "".
func toolOf(a string) string {
	if a == "" || a[0] == '-' {
		return ""
	}
	base := a
	if strings.IndexByte(a, '/') >= 0 {
		base = path.Base(a)
	}
	switch base {
	case "mysql", "mysqldump", "mysqladmin", "mysqlcheck", "mysqlimport", "mysqlshow", "mysqlslap", "mysqlpump",
		"mariadb", "mariadb-dump", "mariadb-admin", "mariadb-check", "mariadb-import", "mariadb-show", "mariadb-slap":
		return "mysql"
	case "mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop":
		return "mongo"
	case "sshpass", "redis-cli", "curl", "wget", "openssl", "htpasswd", "vault":
		return base
	case "zip", "unzip", "zipcloak", "zipsplit":
		return "zip"
	case "7z", "7za", "7zr", "7zz":
		return "7z"
	case "rar", "unrar":
		return "rar"
	case "ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd", "ldapcompare", "ldapmodrdn", "ldapexop":
		return "ldap"
	case "smbclient", "rpcclient", "smbcacls", "smbget":
		return "smb"
	case "sqlcmd", "bcp":
		return "sqlcmd"
	case "ssh-keygen", "twine", "cqlsh":
		return base
	case "etcdctl":
		return "etcd"
	case "mosquitto_pub", "mosquitto_sub", "mosquitto_rr":
		return "mosquitto"
	case "sh", "bash", "dash", "zsh", "ash", "ksh", "mksh":
		return "shell"
	case "login":
		return "login" // docker|podman|helm registry|az|oc ... login
	}
	return ""
}

// isDashC: -c, or combined short flags ending in c (-ec, -lc).
func isDashC(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' || a[len(a)-1] != 'c' {
		return false
	}
	for i := 1; i < len(a); i++ {
		if c := a[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
