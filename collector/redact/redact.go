// Package redact removes secrets from what readyline sends off the node:
// command lines (process argv, the kubelet's ExecSync commands, the probe
// and hook commands of a pod spec) and the pod objects of a recording.
//
// It reads words, not lines: every argument is split into shell-ish words
// (at whitespace outside quotes; a quoted part is read again as a script of
// its own), and a word is secret by where it stands: the value of a
// --password flag or of a NAME_TOKEN= assignment, what follows an
// Authorization or Cookie header name, mysql's glued -p<password>,
// redis-cli's -a and the short flags of other tools (tools.go), a
// positional password (htpasswd -b, rabbitmqctl add_user, vault login,
// sqlplus user/password@db), the password of curl -u user:password, of a
// URL's userinfo or of a DSN, a token= query or JDBC parameter, a
// "password": JSON value. Before the words, every argument is searched
// for what is secret by its shape alone (tokens.go): PEM private keys,
// JWTs, GitHub, GitLab, Slack, AWS, Vault and Tailscale tokens, webhook
// URLs. Whatever is not secret is kept byte for byte.
//
// It fails closed: a quote that does not close (an argv the kernel cut,
// an ExecSync argument cut at 63 bytes) runs to the end of the argument,
// so a secret after it is redacted up to that end, and a token cut short
// at the end of an argument is redacted as a whole one would be.
//
// Redaction is idempotent: redacting a redacted command changes nothing,
// so a command redacted on one side (the kernel's argv) and one redacted on
// the other (a pod spec's probe) compare equal, and a redacted argv that
// the kernel cut is a prefix of the same command redacted whole.
//
// It takes time linear in its input, and reads at most MaxBytes of an
// argv: the rest is replaced by Marker.
package redact

import (
	"strings"
	"unicode/utf8"
)

// Marker replaces every redacted value, and what follows the first
// MaxBytes of an argv.
const Marker = "<redacted>"

// MaxBytes bounds what Argv reads of an argv: the bytes of its arguments,
// a Marker counting as one. An argv longer than that is cut after
// MaxBytes-1 of them and ends with Marker; the arguments after the cut are
// dropped. The kernel reports at most 512 bytes of argv, so a pod spec's
// command longer than MaxBytes still matches the process it starts.
const MaxBytes = 4096

// Argv returns argv with its secrets replaced by Marker, cut after
// MaxBytes. argv itself is not modified: when something is redacted the
// result is a copy; when nothing is, the result is argv and Argv does not
// allocate. A long argv (the script of a probe) is redacted once: the
// result is remembered for its next calls (memo.go). Argv is safe for
// concurrent use.
func Argv(argv []string) []string {
	in, cut := capped(argv, MaxBytes)
	if !cut && size(in) < memoMinBytes {
		return redactArgv(argv, false)
	}
	return argvMemo.redact(argv, in, cut)
}

// redactArgv redacts in, argv or, when cut, the prefix of it that capped
// returned, which it marks: the copy it returns then ends with Marker.
func redactArgv(in []string, cut bool) []string {
	var st state
	var out []string // a copy, made on the first change
	for i, arg := range in {
		red := st.arg(arg)
		if red != arg && out == nil {
			out = make([]string, len(in))
			copy(out, in)
		}
		if out != nil {
			out[i] = red
		}
	}
	if !cut {
		if out == nil {
			return in
		}
		return out
	}
	if out == nil {
		out = make([]string, len(in))
		copy(out, in)
	}
	// A word of its own: glued to the last word, it could make that word
	// read otherwise the next time (host:80 is a port, host:80<redacted>
	// a password).
	switch last := &out[len(out)-1]; {
	case strings.HasSuffix(*last, Marker):
	case *last == "" || isSpace((*last)[len(*last)-1]):
		*last += Marker
	default:
		*last += " " + Marker
	}
	return out
}

// capped returns argv, or, when argv is longer than limit (see MaxBytes),
// its first limit-2 bytes as arguments, the last one cut (maybe to ""),
// and true: with " <redacted>" after it, the result is no longer than
// limit. It reads at most twice the bytes it keeps, plus one argument's
// Markers.
func capped(argv []string, limit int) ([]string, bool) {
	raw := 0
	for _, a := range argv {
		raw += len(a)
	}
	if raw <= limit || fits(argv, limit) {
		return argv, false
	}
	budget := limit - 2
	for i, a := range argv {
		n, used := prefixOfSize(a, budget)
		if n == len(a) {
			budget -= used
			continue
		}
		out := make([]string, i+1)
		copy(out, argv[:i])
		// A backslash at the cut would escape the space before the Marker.
		out[i] = strings.TrimRight(a[:n], `\`)
		return out, true
	}
	return argv, false // not reached: argv does not fit
}

// fits reports whether the arguments' size is at most budget.
func fits(argv []string, budget int) bool {
	for _, a := range argv {
		n, used := prefixOfSize(a, budget)
		if n < len(a) {
			return false
		}
		budget -= used
	}
	return true
}

// prefixOfSize returns the length of the longest prefix of s whose size
// (bytes, a Marker counting as one) is at most budget, ending on a rune
// boundary and outside a Marker, and that size.
func prefixOfSize(s string, budget int) (n, used int) {
	i := 0
	for used < budget && i < len(s) {
		take := min(len(s)-i, budget-used) // what fits if no Marker is in it
		k := strings.IndexByte(s[i:i+take], '<')
		if k < 0 {
			i, used = i+take, used+take
			break
		}
		i, used = i+k+1, used+k+1
		if strings.HasPrefix(s[i-1:], Marker) {
			i += len(Marker) - 1
		}
	}
	for i < len(s) && i > 0 && !utf8.RuneStart(s[i]) {
		i--
		used--
	}
	return i, used
}

// size is the size of an argv as MaxBytes counts it.
func size(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) - (len(Marker)-1)*strings.Count(a, Marker)
	}
	return n
}

// pending says what the next word is.
type pending uint8

const (
	pendNone   pending = iota
	pendArg            // a secret, even one that starts with a dash (--password, redis-cli -a, a header)
	pendUser           // user:password (curl -u): the user is kept
	pendPct            // user%password (smbclient -U)
	pendCookie         // cookie data (curl -b name=value), or a file name, which is kept
	pendAuth           // an Authorization value: a scheme word, then the rest of the line
	pendRest           // secret up to the end of the line (Cookie, after a scheme)
	pendSkip           // a flag's value that is no positional argument (htpasswd -C 10)
	pendKey            // the KEY of config set KEY VALUE, which says whether VALUE is secret
)

// state is what the words read so far say about the next one: the program
// they are arguments of, the positional arguments of the tools that take
// a secret so, and whether the next word is a flag's value.
type state struct {
	tool  tool
	next  pending
	pos   trackers // tools.go
	login bool     // a "login" word in this command: -p is a password (docker, podman, helm, oc, az)
	conf  bool     // the last word was config or configure: a set after it takes KEY VALUE
	pem   bool     // inside a PEM private key that an earlier argument began
	atEnd bool     // the word being read ends its argument (where the kernel may have cut it)
}

// arg redacts one argv element.
func (st *state) arg(s string) string {
	if st.pem {
		s = st.pemContinued(s)
	}
	s = st.shapes(s)
	switch k := st.next; k {
	case pendArg, pendUser, pendPct, pendCookie:
		// The value of the previous flag is the whole element, spaces and all.
		st.next = pendNone
		return value(k, tokens(s, true))
	case pendRest:
		st.next = pendNone
		return replaceAll(s)
	}
	return st.script(s, true)
}

// replaceAll redacts all of s.
func replaceAll(s string) string {
	if s == "" || isRedacted(s) {
		return s
	}
	return Marker
}

// script redacts s read as shell words; whole says s is a whole argument
// (not a quoted part of one), so that its last word ends the argument.
func (st *state) script(s string, whole bool) string {
	e := edit{s: s}
	for i := 0; i < len(s); {
		for i < len(s) && wordByte[s[i]] == byteSpace {
			i++
		}
		if i == len(s) {
			break
		}
		j, m := wordEnd(s, i)
		if st.next == pendAuth {
			st.next = pendRest
			if isAuthScheme(s[i:j]) { // Bearer: kept, what follows is not
				i = j
				continue
			}
		}
		if st.next == pendRest {
			st.next = pendNone
			end := lineEnd(s, i)
			if v := s[i:end]; !isRedacted(v) {
				e.replace(i, end, Marker)
			}
			i = end
			continue
		}
		st.atEnd = whole && j == len(s)
		if red := st.word(s[i:j], m); red != s[i:j] {
			e.replace(i, j, red)
		}
		i = j
	}
	return e.result()
}

// lineEnd returns the end of the line at s[i], trailing spaces left out.
func lineEnd(s string, i int) int {
	end := len(s)
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		end = i + n
	}
	for end > i && isSpace(s[end-1]) {
		end--
	}
	return end
}

// nested redacts a quoted part of a word as a script of its own: `su -c
// '...'`, a header in `curl -H "..."`, `sqlplus "sys/pw as sysdba"`. The
// part's words are arguments of the same program; st is left as it was.
func (st *state) nested(s string, whole bool) string {
	inner := state{tool: st.tool, pos: st.pos.nested()}
	return inner.script(s, whole)
}

// word redacts one shell word, which holds the chars m.
func (st *state) word(w string, m chars) string {
	if m&hasShape != 0 {
		w = tokens(w, st.atEnd)
	}
	k := st.next
	st.next = pendNone
	switch k {
	case pendNone, pendSkip, pendKey:
	default:
		return value(k, w)
	}
	red := st.plainWord(w, m, k != pendSkip)
	if k == pendKey && isSecretName(unquote(w)) { // config set aws_secret_access_key VALUE
		st.next = pendArg
	}
	return red
}

// plainWord redacts a word that is no flag's value; positional says it
// counts among the positional arguments of the command.
func (st *state) plainWord(w string, m chars, positional bool) string {
	if m == 0 && w[0] != '-' && !st.pos.any {
		// No rule but the keywords' and the tools' reads a word without
		// those bytes, and no tool counts it.
		if positional {
			st.keyword(w)
		}
		st.commandOf(w, 0)
		return w
	}
	if positional && st.positional(w) {
		red := st.positionalSecret(w)
		st.command(red)
		return red
	}
	if m&hasQuote != 0 && isQuote(w[0]) && quoteClose(w, 0) == len(w) {
		inner := w[1:quoteInnerEnd(w, 0)]
		if red := st.nested(inner, st.atEnd && !closes(w, 0)); red != inner {
			return w[:1] + red + w[1+len(inner):]
		}
		return w
	}
	red := st.rules(w, m)
	if m&hasQuote != 0 {
		red = st.quoted(red)
	}
	st.commandOf(red, m)
	return red
}

// positionalSecret redacts a positional argument that is a secret
// (htpasswd -nb u PW; ...). Such a word is one of a command line: when
// more of the script follows, the separators after it (;, &&, |) are the
// script's and are kept, so that the next command is read as one.
func (st *state) positionalSecret(w string) string {
	if st.atEnd {
		return redactFrom(w, 0)
	}
	v := strings.TrimRight(w, ";&|")
	if v == "" {
		return w
	}
	return redactFrom(v, 0) + w[len(v):]
}

// value redacts w, the value that a flag before it announced.
func value(k pending, w string) string {
	switch k {
	case pendUser:
		return userFrom(w, 0, ':')
	case pendPct:
		return userFrom(w, 0, '%')
	case pendCookie:
		if strings.IndexByte(w, '=') < 0 {
			return w // a file to read cookies from
		}
	}
	return redactFrom(w, 0)
}

// userFrom redacts the password of the user:password at w[i:] (sep is
// the colon), keeping the user. Without a colon there is no password (curl
// asks for it); with nothing after it (curl -u "$API_KEY:"), the user is
// the secret.
func userFrom(w string, i int, sep byte) string {
	c := strings.IndexByte(w[i:], sep)
	if c < 0 {
		return w
	}
	if pw := strings.Trim(w[i+c+1:], `"'`); pw == "" {
		return redactFrom(w[:i+c], i) + w[i+c:]
	}
	return redactFrom(w, i+c+1)
}

// command notes the program a word names, and forgets it at a shell
// separator (; && || | and the opening of a subshell). A flag names no
// program (and a -p<password> may hold a ';').
func (st *state) command(w string) { st.commandOf(w, charsOf(w)) }

// commandOf is command for a word that holds no more than m.
func (st *state) commandOf(w string, m chars) {
	if w == "" || w[0] == '-' {
		return
	}
	if m&hasSeparator != 0 {
		if i := lastSeparator(w); i >= 0 {
			st.reset()
			w = w[i+1:]
		}
	}
	if w == "" || w[0] == '-' {
		return
	}
	if m&hasSlash != 0 {
		if i := strings.LastIndexByte(w, '/'); i >= 0 {
			w = w[i+1:]
		}
	}
	if w == "" || len(w) >= 32 || toolLengths[w[0]]&(1<<len(w)) == 0 {
		return
	}
	if t, ok := tools[w]; ok {
		st.tool = t
		st.pos.start(t)
	}
}

// reset forgets the command so far, at a shell separator.
func (st *state) reset() {
	st.tool, st.login, st.conf = toolOther, false, false
	st.pos = trackers{}
}

// rules redacts the secrets of an unquoted word, which holds no more than
// m.
func (st *state) rules(w string, m chars) string {
	if w[0] != '-' {
		return st.inner(w, m)
	}
	if red, ok := st.toolFlag(w); ok {
		return red
	}
	if st.login && len(w) >= 2 && w[1] == 'p' { // docker login -p PW, oc login -pPW
		if len(w) == 2 {
			st.next = pendArg
			return w
		}
		return redactFrom(w, 2)
	}
	name, val, eq := w, "", false
	if m&hasEq != 0 {
		name, val, eq = strings.Cut(w, "=")
	}
	if isCredsName(name) { // skopeo --src-creds user:password
		if eq {
			return userFrom(w, len(name)+1, ':')
		}
		st.next = pendUser
		return w
	}
	if isSecretName(name) {
		if eq {
			return redactFrom(w, len(name)+1)
		}
		st.next = pendArg
		return w
	}
	if eq { // --from-literal=password=x, --dsn=..., --header=Authorization: ...
		if red := st.inner(val, m); red != val {
			return w[:len(name)+1] + red
		}
	}
	return w
}

// inner redacts the secrets of a word that is not a flag, or of a flag's
// value: NAME_PASSWORD=x (also after other assignments: A=B=x), Name: or
// Name:value of a secret header or key, URL and DSN passwords, secret
// query and JDBC parameters, sqlplus's user/password. w holds no more
// than m.
func (st *state) inner(w string, m chars) string {
	off := 0 // w[:off] are the assignments before the value
	for m&hasEq != 0 {
		n := assignment(w[off:])
		if n == 0 {
			break
		}
		name := w[off : off+n]
		if isSecretName(name) {
			return redactFrom(w, off+n+1)
		}
		if st.pos.on(posSQLPlus) && strings.EqualFold(name, "userid") { // expdp userid=system/pw@db
			return w[:off+n+1] + userPassword(w[off+n+1:])
		}
		off += n + 1
	}
	v := w[off:]
	if m&hasColon != 0 {
		// A header may follow the escaped quote of a string inside
		// another: su -c "curl -H \"Authorization: Bearer x\"". (One
		// that a real quote opens is a script of its own: quoted.)
		q := 0
		for q+1 < len(v) && v[q] == '\\' && isQuote(v[q+1]) {
			q += 2
		}
		if n := headerName(v[q:]); n > 0 && isSecretKey(v[q:q+n]) {
			return w[:off+q] + st.header(v[q:], n)
		}
	}
	red := v
	if m&(hasParamSep|hasEq) == hasParamSep|hasEq {
		red = params(red) // first: a braced JDBC password may hold "@(" or "://"
	}
	if m&hasColon != 0 {
		red = urlPasswords(red, st.atEnd)
		if m&hasAt != 0 {
			red = dsnPassword(red)
		}
	}
	if m&hasSlash != 0 && st.pos.on(posSQLPlus) && off == 0 {
		red = userPassword(red)
	}
	if red == v {
		return w
	}
	return w[:off] + red
}

// header redacts the value of the secret header or key Name: at the start
// of w (n is the colon's index): what is glued to it, or the rest of the
// line after it (a header value may hold spaces). An Authorization value
// keeps its scheme word (Bearer).
func (st *state) header(w string, n int) string {
	auth := isAuthHeader(w[:n])
	if n+1 == len(w) {
		st.next = pendRest
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

// quoted redacts the quoted parts of a word as scripts: FOO="a --token=x".
// A quote that does not close runs to the end of the word.
func (st *state) quoted(w string) string {
	if !containsQuote(w) {
		return w
	}
	e := edit{s: w}
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '\\':
			i++
		case '"', '\'':
			end := quoteInnerEnd(w, i)
			inner := w[i+1 : end]
			if red := st.nested(inner, st.atEnd && !closes(w, i)); red != inner {
				e.replace(i+1, end, red)
			}
			i = quoteClose(w, i) - 1
		}
	}
	return e.result()
}

// redactFrom replaces w[i:] by Marker, keeping the quotes around it and
// shell punctuation after them: -p'x' -> -p'<redacted>', 'admin:x' ->
// 'admin:<redacted>', PW='x'; -> PW='<redacted>';. An unquoted value goes
// whole, separators and all: in an exec form argv (mysql -px;) they are
// the password's. A quote that does not close is kept, and what follows
// it goes: -p'x -> -p'<redacted>, a prefix of what the whole -p'x' gives.
func redactFrom(w string, i int) string {
	v := w[i:]
	open, close := 0, 0
	switch {
	case len(v) >= 1 && isQuote(v[0]):
		e := quoteEnd(v, 0)
		if e < 0 {
			open = 1
			break
		}
		if punct := v[e:]; strings.Trim(punct, ";&|),}]") == "" {
			open, close = 1, len(punct)+1
		}
	case i > 0 && len(w) >= 2 && isQuote(w[0]) && w[len(w)-1] == w[0]:
		close = 1
	}
	inner := v[min(open, len(v)) : len(v)-min(close, len(v))]
	if inner == "" || isRedacted(inner) {
		return w
	}
	return w[:i+open] + Marker + v[len(v)-close:]
}

// isRedacted reports whether v holds nothing but Markers (and spaces):
// what redaction made of a value, which it leaves as it is.
func isRedacted(v string) bool {
	if v == Marker {
		return true
	}
	seen := false
	for i := 0; i < len(v); {
		switch {
		case strings.HasPrefix(v[i:], Marker):
			i += len(Marker)
			seen = true
		case isSpace(v[i]):
			i++
		default:
			return false
		}
	}
	return seen
}

// wordEnd returns the end of the shell word at s[i] (the first whitespace
// outside quotes; a quote that does not close runs to the end of s) and
// the chars it holds, hasShape when a token may start in it.
func wordEnd(s string, i int) (int, chars) {
	var m chars
	for i < len(s) {
		if alnumU[s[i]] { // a run of word characters, where a token may start
			m |= shapeAt(s, i)
			for i++; i < len(s) && alnumU[s[i]]; i++ {
			}
			continue
		}
		switch c := s[i]; wordByte[c] {
		case byteSpace:
			return i, m
		case byteBackslash:
			i++
			if i < len(s) && !alnumU[s[i]] { // an escaped quote or space
				m |= charClass[s[i]]
				i++
			}
		case byteQuote:
			m |= hasQuote
			i++
			for i < len(s) && s[i] != c {
				if alnumU[s[i]] {
					m |= shapeAt(s, i)
					for i++; i < len(s) && alnumU[s[i]]; i++ {
					}
					continue
				}
				m |= charClass[s[i]]
				if s[i] == '\\' && c == '"' && i+1 < len(s) && !alnumU[s[i+1]] {
					i++
					m |= charClass[s[i]]
				}
				i++
			}
			i++
		default:
			m |= charClass[c]
			i++
		}
	}
	return len(s), m
}

// What a byte is to wordEnd.
const (
	bytePlain = iota
	byteSpace
	byteBackslash
	byteQuote
)

var wordByte = func() (k [256]uint8) {
	for c := range k {
		switch b := byte(c); {
		case isSpace(b):
			k[c] = byteSpace
		case b == '\\':
			k[c] = byteBackslash
		case isQuote(b):
			k[c] = byteQuote
		}
	}
	return k
}()

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

// quoteClose is quoteEnd, with len(s) for a quote that does not close.
func quoteClose(s string, i int) int {
	if e := quoteEnd(s, i); e >= 0 {
		return e
	}
	return len(s)
}

// quoteInnerEnd returns the end of what the quote at s[i] holds: before
// its closing quote, or len(s).
func quoteInnerEnd(s string, i int) int {
	if e := quoteEnd(s, i); e >= 0 {
		return e - 1
	}
	return len(s)
}

// closes reports whether the quote at s[i] closes.
func closes(s string, i int) bool { return quoteEnd(s, i) >= 0 }

// unquote returns w without the quotes around it.
func unquote(w string) string {
	if len(w) >= 2 && isQuote(w[0]) && w[len(w)-1] == w[0] {
		return w[1 : len(w)-1]
	}
	return w
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

// edit builds a string from s with spans replaced, found left to right, in
// one pass: result is s itself when nothing was replaced.
type edit struct {
	s    string
	b    strings.Builder
	last int // s[last:] is not yet in b
}

// replace puts with in place of s[i:j]; i is at or after the previous j.
func (e *edit) replace(i, j int, with string) {
	if e.b.Cap() == 0 {
		e.b.Grow(len(e.s) + len(with))
	}
	e.b.WriteString(e.s[e.last:i])
	e.b.WriteString(with)
	e.last = j
}

func (e *edit) result() string {
	if e.b.Cap() == 0 {
		return e.s
	}
	e.b.WriteString(e.s[e.last:])
	return e.b.String()
}

func containsQuote(s string) bool {
	return strings.IndexByte(s, '"') >= 0 || strings.IndexByte(s, '\'') >= 0
}

// chars are the bytes of a word that rules look for: a rule that needs
// one the word lacks is not tried.
type chars uint8

const (
	hasEq        chars = 1 << iota // =
	hasColon                       // :
	hasAt                          // @
	hasParamSep                    // ? & ; #
	hasQuote                       // ' "
	hasSeparator                   // ; & | ( `
	hasSlash                       // /
	hasShape                       // a token may start (tokens.go)
)

var charClass = func() (c [256]chars) {
	c['='], c[':'], c['@'], c['/'] = hasEq, hasColon, hasAt, hasSlash
	c['?'], c['#'] = hasParamSep, hasParamSep
	c[';'], c['&'] = hasParamSep|hasSeparator, hasParamSep|hasSeparator
	c['|'], c['('], c['`'] = hasSeparator, hasSeparator, hasSeparator
	c['\''], c['"'] = hasQuote, hasQuote
	return c
}()

// charsOf returns the chars w holds.
func charsOf(w string) chars {
	var m chars
	for i := 0; i < len(w); i++ {
		m |= charClass[w[i]]
	}
	return m
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
