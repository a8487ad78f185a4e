package redact

import "strings"

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
