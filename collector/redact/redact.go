// Package redact removes secrets from what readyline sends off the node:
// command lines (process argv, the kubelet's ExecSync commands, the probe
// and hook commands of a pod spec) and the pod objects of a recording.
//
// It reads words, not lines: every argument is split into shell-ish words
// (at whitespace outside quotes; a quoted part is read again as a script of
// its own), and a word is secret by where it stands: the value of a
// --password flag or of a NAME_TOKEN= assignment, what follows an
// Authorization header name, mysql's glued -p<password>, redis-cli's -a,
// the password of curl -u user:password, of a URL's userinfo or of a DSN,
// a token= query or JDBC parameter, a "password": JSON value. Whatever is
// not secret is kept byte for byte.
//
// Redaction is idempotent: redacting a redacted command changes nothing,
// so a command redacted on one side (the kernel's argv) and one redacted on
// the other (a pod spec's probe) compare equal.
package redact

import (
	"strings"
)

// Marker replaces every redacted value.
const Marker = "<redacted>"

// Argv returns argv with its secrets replaced by Marker. argv itself is not
// modified: when something is redacted the result is a copy; when nothing
// is, the result is argv and Argv does not allocate. Argv is safe for
// concurrent use.
func Argv(argv []string) []string {
	var st state
	var out []string // a copy, made on the first change
	for i, arg := range argv {
		red, changed := st.arg(arg)
		if changed && out == nil {
			out = make([]string, len(argv))
			copy(out, argv)
		}
		if out != nil {
			out[i] = red
		}
	}
	if out == nil {
		return argv
	}
	return out
}

// tool is a program whose own flags carry secrets.
type tool uint8

const (
	toolOther   tool = iota
	toolMySQL        // -p<password>, glued (-p alone prompts; -p word is a database)
	toolRedis        // -a <password>
	toolCurl         // -u/--user user:password, -U/--proxy-user
	toolSSHPass      // -p <password>, -p<password>
	toolMongo        // -p <password>, -p<password>
)

var tools = map[string]tool{
	"mysql": toolMySQL, "mysqladmin": toolMySQL, "mysqldump": toolMySQL, "mysqlcheck": toolMySQL,
	"mysqlimport": toolMySQL, "mysqlshow": toolMySQL, "mysqlslap": toolMySQL, "mysqlpump": toolMySQL,
	"mariadb": toolMySQL, "mariadb-admin": toolMySQL, "mariadb-dump": toolMySQL, "mariadb-check": toolMySQL,
	"redis-cli": toolRedis, "valkey-cli": toolRedis, "keydb-cli": toolRedis,
	"curl":    toolCurl,
	"sshpass": toolSSHPass,
	"mongo":   toolMongo, "mongosh": toolMongo,
}

// pending says what the next word is.
type pending uint8

const (
	pendNone pending = iota
	pendArg          // a secret, even one that starts with a dash (--password, redis-cli -a, a header)
	pendUser         // user:password (curl -u)
	pendAuth         // an Authorization value: a scheme word, then secrets
	pendRest         // secret up to the end of the argument (Cookie, after a scheme)
)

// state is what the words read so far say about the next one: the program
// they are arguments of, and whether the next word is a flag's value.
type state struct {
	tool tool
	next pending
}

// arg redacts one argv element.
func (st *state) arg(s string) (string, bool) {
	switch k := st.next; {
	case k == pendArg || k == pendUser:
		// The value of the previous flag is the whole element, spaces and all.
		st.next = pendNone
		red := value(k, s)
		return red, red != s
	case k == pendRest:
		st.next = pendNone
		return replaceAll(s)
	case k != pendAuth:
		st.next = pendNone
	}
	red := st.script(s)
	return red, red != s
}

// replaceAll redacts all of s.
func replaceAll(s string) (string, bool) {
	if s == "" || s == Marker {
		return s, false
	}
	return Marker, true
}

// script redacts s read as shell words.
func (st *state) script(s string) string {
	s = jsonValues(s)
	var b []byte // the result, from the first change
	last := 0    // s[last:] is not yet in b
	for i := 0; i < len(s); {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		j := wordEnd(s, i)
		if st.next == pendAuth {
			st.next = pendRest
			if isAuthScheme(s[i:j]) { // Bearer: kept, what follows is not
				i = j
				continue
			}
		}
		if st.next == pendRest {
			st.next = pendNone
			end := len(s)
			for end > i && isSpace(s[end-1]) {
				end--
			}
			if s[i:end] != Marker {
				b = append(b, s[last:i]...)
				b = append(b, Marker...)
				last = end
			}
			break
		}
		if red := st.word(s[i:j]); red != s[i:j] {
			b = append(b, s[last:i]...)
			b = append(b, red...)
			last = j
		}
		i = j
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// nested redacts a quoted part of a word as a script of its own: `su -c
// '...'`, a header in `curl -H "..."`. It leaves st as it was.
func (st *state) nested(s string) string {
	var inner state
	return inner.script(s)
}

// word redacts one shell word.
func (st *state) word(w string) string {
	if k := st.next; k != pendNone {
		st.next = pendNone
		return value(k, w)
	}
	if isQuote(w[0]) && quoteEnd(w, 0) == len(w) {
		inner := w[1 : len(w)-1]
		if red := st.nested(inner); red != inner {
			return w[:1] + red + w[len(w)-1:]
		}
		return w
	}
	st.command(w)
	red := st.rules(w)
	return st.quoted(red)
}

// value redacts w, the value that a flag before it announced.
func value(k pending, w string) string {
	if k == pendUser {
		return userFrom(w, 0)
	}
	return redactFrom(w, 0)
}

// userFrom redacts the password of the user:password at w[i:], keeping the
// user. Without a colon there is no password (curl asks for it).
func userFrom(w string, i int) string {
	c := strings.IndexByte(w[i:], ':')
	if c < 0 {
		return w
	}
	return redactFrom(w, i+c+1)
}

// command notes the program a word names, and forgets it at a shell
// separator (; && || | and the opening of a subshell). A flag names no
// program (and a -p<password> may hold a ';').
func (st *state) command(w string) {
	if w[0] == '-' {
		return
	}
	if i := lastSeparator(w); i >= 0 {
		st.tool = toolOther
		w = w[i+1:]
	}
	if w == "" || w[0] == '-' || len(w) < 4 {
		return
	}
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	if t, ok := tools[w]; ok {
		st.tool = t
	}
}

// rules redacts the secrets of an unquoted word.
func (st *state) rules(w string) string {
	if w[0] != '-' {
		return st.inner(w)
	}
	if red, ok := st.toolFlag(w); ok {
		return red
	}
	name, val, eq := strings.Cut(w, "=")
	if isSecretName(name) {
		if eq {
			return redactFrom(w, len(name)+1)
		}
		st.next = pendArg
		return w
	}
	if eq { // --from-literal=password=x, --dsn=..., --header=Authorization: ...
		if red := st.inner(val); red != val {
			return w[:len(name)+1] + red
		}
	}
	return w
}

// toolFlag redacts the flags of the known tools.
func (st *state) toolFlag(w string) (string, bool) {
	if len(w) < 2 || w[1] == '-' && st.tool != toolCurl {
		return w, false
	}
	switch st.tool {
	case toolMySQL:
		if w[1] == 'p' && len(w) > 2 {
			return redactFrom(w, 2), true
		}
	case toolRedis:
		if w == "-a" {
			st.next = pendArg
			return w, true
		}
	case toolSSHPass, toolMongo:
		if w == "-p" {
			st.next = pendArg
			return w, true
		}
		if w[1] == 'p' {
			return redactFrom(w, 2), true
		}
	case toolCurl:
		switch {
		case w == "--user" || w == "--proxy-user":
			st.next = pendUser
			return w, true
		case w[1] == 'u' || w[1] == 'U':
			if len(w) == 2 {
				st.next = pendUser
				return w, true
			}
			return userFrom(w, 2), true
		case isCurlCluster(w):
			st.next = pendUser
			return w, true
		}
	}
	return w, false
}

// isCurlCluster: curl boolean short flags ending in u or U (-su, -fsSLu),
// whose value is the next word.
func isCurlCluster(w string) bool {
	last := w[len(w)-1]
	if len(w) < 3 || last != 'u' && last != 'U' {
		return false
	}
	for _, c := range w[1 : len(w)-1] {
		if !strings.ContainsRune("sSfLkvIigNq#", c) {
			return false
		}
	}
	return true
}

// inner redacts the secrets of a word that is not a flag, or of a flag's
// value: NAME_PASSWORD=x, Name: or Name:value of a secret header or key,
// URL and DSN passwords, secret query and JDBC parameters.
func (st *state) inner(w string) string {
	if n := assignment(w); n > 0 {
		if isSecretName(w[:n]) {
			return redactFrom(w, n+1)
		}
		v := w[n+1:]
		if red := st.inner(v); red != v {
			return w[:n+1] + red
		}
		return w
	}
	if n := headerName(w); n > 0 && isSecretKey(w[:n]) {
		auth := isAuthHeader(w[:n])
		if n+1 == len(w) {
			st.next = pendArg
			if auth {
				st.next = pendAuth
			}
			return w
		}
		if auth {
			st.next = pendRest
			if isAuthScheme(w[n+1:]) {
				return w
			}
		}
		return redactFrom(w, n+1)
	}
	// Parameters first: a braced JDBC password may hold "@(" or "://".
	w = params(w)
	w = urlPasswords(w)
	return dsnPassword(w)
}

// quoted redacts the quoted parts of a word as scripts: FOO="a --token=x".
func (st *state) quoted(w string) string {
	if !hasQuote(w) {
		return w
	}
	var b []byte
	last := 0
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '\\':
			i++
		case '"', '\'':
			e := quoteEnd(w, i)
			if e < 0 {
				continue
			}
			inner := w[i+1 : e-1]
			if red := st.nested(inner); red != inner {
				b = append(b, w[last:i+1]...)
				b = append(b, red...)
				last = e - 1
			}
			i = e - 1
		}
	}
	if b == nil {
		return w
	}
	return string(append(b, w[last:]...))
}

// redactFrom replaces w[i:] by Marker, keeping the quotes around it and
// shell punctuation after them: -p'x' -> -p'<redacted>', 'admin:x' ->
// 'admin:<redacted>', PW='x'; -> PW='<redacted>';.
func redactFrom(w string, i int) string {
	v := w[i:]
	open, close := 0, 0
	switch e := -1; {
	case len(v) >= 2 && isQuote(v[0]):
		if e = quoteEnd(v, 0); e < 0 || strings.Trim(v[e:], ";&|),}]") != "" {
			break
		}
		open, close = 1, len(v)-e+1
	case i > 0 && len(w) >= 2 && isQuote(w[0]) && w[len(w)-1] == w[0]:
		close = 1
	}
	inner := v[min(open, len(v)) : len(v)-min(close, len(v))]
	if inner == "" || inner == Marker {
		return w
	}
	return w[:i+open] + Marker + v[len(v)-close:]
}

// wordEnd returns the end of the shell word at s[i]: the first whitespace
// outside quotes. An unmatched quote is an ordinary character.
func wordEnd(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case isSpace(c):
			return i
		case c == '\\':
			i += 2
		case c == '"' || c == '\'':
			if e := quoteEnd(s, i); e > 0 {
				i = e
			} else {
				i++
			}
		default:
			i++
		}
	}
	return len(s)
}

// quoteEnd returns the index after the quote that closes the one at s[i],
// or -1. Backslash escapes count inside double quotes only.
func quoteEnd(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case q:
			return j + 1
		case '\\':
			if q == '"' {
				j++
			}
		}
	}
	return -1
}

// lastSeparator returns the index of the last shell separator in w
// (; & | and the ( or ` of a subshell), or -1.
func lastSeparator(w string) int {
	for i := len(w) - 1; i >= 0; i-- {
		switch w[i] {
		case ';', '&', '|', '(', '`':
			return i
		}
	}
	return -1
}

func hasQuote(s string) bool {
	return strings.IndexByte(s, '"') >= 0 || strings.IndexByte(s, '\'') >= 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isQuote(c byte) bool { return c == '"' || c == '\'' }

// isNameChar: a character of a variable, flag, key or parameter name.
func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// assignment returns the index of '=' when w starts with NAME=, else 0
// (also for an empty w: the value of "NAME=" or "--flag=").
func assignment(w string) int {
	if w == "" {
		return 0
	}
	if c := w[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_') {
		return 0
	}
	for i := 1; i < len(w); i++ {
		if w[i] == '=' {
			return i
		}
		if !isNameChar(w[i]) {
			return 0
		}
	}
	return 0
}

// headerName returns the index of ':' when w starts with Name: (a header,
// a YAML key), else 0.
func headerName(w string) int {
	for i := 0; i < len(w); i++ {
		if w[i] == ':' {
			return i
		}
		if !isNameChar(w[i]) {
			return 0
		}
	}
	return 0
}
