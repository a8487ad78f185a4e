package redact

import "strings"

// urlPasswords redacts the password of every scheme://user:password@ in w.
// The userinfo ends at the last '@' before the next URL, so a password
// with a raw '/' or '@' goes too; a port and a path with an '@' in it
// (http://host:4873/@scope/pkg) is left alone. atEnd says w ends its
// argument, where the kernel may have cut it: a URL there with no '@'
// after user:pass... fails closed and loses what follows the colon, unless
// that is a port.
func urlPasswords(w string, atEnd bool) string {
	e := edit{s: w}
	for from := 0; ; {
		k := strings.Index(w[from:], "://")
		if k < 0 {
			return e.result()
		}
		start := from + k + 3
		region := w[start:]
		last := true // the region runs to the end of w
		if n := strings.Index(region, "://"); n >= 0 {
			region, last = region[:n], false
		}
		from = start
		at := strings.LastIndexByte(region, '@')
		colon := strings.IndexByte(region, ':')
		if colon < 0 || colon > at && at >= 0 || strings.ContainsAny(region[:colon], "/?#@;&=[") {
			continue
		}
		if at < 0 {
			if !atEnd || !last {
				continue
			}
			at = len(region) // cut inside user:password
		}
		pw := region[colon+1 : at]
		if pw == "" || isRedacted(pw) || isPortThenPath(pw) || at == len(region) && isDigits(pw) {
			continue
		}
		e.replace(start+colon+1, start+at, Marker)
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isDSNAddress: what follows the '@' of a Go MySQL DSN, tcp(host:3306)/db,
// unix(/path)/db, /db.
func isDSNAddress(s string) bool {
	for _, p := range []string{"tcp(", "tcp6(", "unix(", "(", "/"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isPortThenPath: host:port/path (or JDBC's host:port;params), not
// user:password.
func isPortThenPath(s string) bool {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && strings.IndexByte("/?#;", s[i]) >= 0
}

// dsnPassword redacts the password of a DSN without a scheme:
// user:password@tcp(host:3306)/db (Go's MySQL driver, whose password may
// hold any character, even "//": the last '@' ends it) or user:password@host. An image
// reference (nginx:1.25@sha256:...) is not one.
func dsnPassword(w string) string {
	at := strings.LastIndexByte(w, '@')
	if at < 0 {
		return w
	}
	rest := w[at+1:]
	if !isDSNAddress(rest) && strings.Contains(w, "://") {
		return w // a URL: urlPasswords
	}
	colon := strings.IndexByte(w, ':')
	if colon < 0 || colon > at {
		return w
	}
	for i := 0; i < colon; i++ {
		if c := w[i]; !isNameChar(c) && c != '+' && c != '%' {
			return w
		}
	}
	if strings.HasPrefix(rest, "sha256:") || strings.HasPrefix(rest, "sha512:") {
		return w
	}
	if pw := w[colon+1 : at]; pw == "" || isRedacted(pw) {
		return w
	}
	return w[:colon+1] + Marker + w[at:]
}

// params redacts the values of secret parameters in a URL query or a
// connection string: ?token=, &access_token=, #access_token=, JDBC
// ;password=, ODBC ;Pwd=. A value ends where the next parameter starts (a
// separator before a name=, see paramEnd), or at the end of a {braced}
// value (ODBC and SQL Server quote a value holding ';' so, doubling '}').
func params(w string) string {
	e := edit{s: w}
	for i := 0; i < len(w); i++ {
		if !isParamSep(w[i]) {
			continue
		}
		j := paramName(w, i+1)
		if j < 0 || !isSecretParam(w[i+1:j]) {
			continue
		}
		k := paramEnd(w, j+1, w[i] == ';')
		if v := w[j+1 : k]; v != "" && !isRedacted(v) && v != "{"+Marker+"}" {
			if v[0] == '{' && k > j+2 && w[k-1] == '}' {
				e.replace(j+2, k-1, Marker)
			} else {
				e.replace(j+1, k, Marker)
			}
		}
		i = k - 1
	}
	return e.result()
}

func isParamSep(c byte) bool { return c == '?' || c == '&' || c == ';' || c == '#' }

// paramName returns the index of the '=' of the parameter name at w[i:],
// or -1.
func paramName(w string, i int) int {
	j := i
	for j < len(w) && isNameChar(w[j]) {
		j++
	}
	if j == i || j == len(w) || w[j] != '=' {
		return -1
	}
	return j
}

// paramEnd returns the end of the parameter value at w[i:]: the next
// ;name= in a connection string (semi), the next &name=, ;name= or #name=
// in a URL.
func paramEnd(w string, i int, semi bool) int {
	if i < len(w) && w[i] == '{' {
		for k := i + 1; k < len(w); k++ {
			if w[k] == '}' {
				if k+1 < len(w) && w[k+1] == '}' {
					k++
					continue
				}
				return k + 1
			}
		}
		return len(w)
	}
	for k := i; k < len(w); k++ {
		if (w[k] == ';' || !semi && isParamSep(w[k]) && w[k] != '?') && paramName(w, k+1) >= 0 {
			return k
		}
	}
	return len(w)
}

// jsonValues redacts the values of secret keys in JSON, YAML flow maps and
// Python dicts anywhere in s: "password": "x", 'token':'x', and the
// escaped {\"password\":\"x\"} of a double-quoted shell string. It reads s
// before it is split into words, so spaces around the colon are fine.
func jsonValues(s string) string {
	if strings.IndexByte(s, ':') < 0 || !containsQuote(s) {
		return s
	}
	e := edit{s: s}
	quotes := quoteFinder{-2, -2}
	for i := 0; ; i++ {
		if i = quotes.next(s, i); i < 0 {
			break
		}
		q := s[i]
		j := i + 1
		for j < len(s) && isNameChar(s[j]) {
			j++
		}
		key := s[i+1 : j]
		if j+1 < len(s) && s[j] == '\\' && s[j+1] == q {
			j++
		}
		if key == "" || j == len(s) || s[j] != q {
			continue
		}
		k := skipSpaces(s, j+1)
		if k == len(s) || s[k] != ':' || !isSecretJSONKey(key) {
			continue
		}
		vs, ve := jsonValue(s, skipSpaces(s, k+1))
		if v := s[vs:ve]; v != "" && !isRedacted(v) {
			e.replace(vs, ve, Marker)
		}
		i = ve - 1
	}
	return e.result()
}

// quoteFinder finds the quotes of a string left to right, each kind with
// IndexByte (vectorised) and looked for again only once passed.
type quoteFinder struct {
	dq, sq int // the next " and ': an index, -1 for none left, -2 before the first look
}

// next returns the index of the first quote of s at or after i, or -1.
func (f *quoteFinder) next(s string, i int) int {
	f.dq = nextByte(s, '"', i, f.dq)
	f.sq = nextByte(s, '\'', i, f.sq)
	switch {
	case f.dq < 0:
		return f.sq
	case f.sq < 0:
		return f.dq
	}
	return min(f.dq, f.sq)
}

// nextByte returns the index of the first c in s at or after i; known is
// what it returned for an earlier i.
func nextByte(s string, c byte, i, known int) int {
	if known == -1 || known >= i {
		return known
	}
	if n := strings.IndexByte(s[i:], c); n >= 0 {
		return i + n
	}
	return -1
}

// jsonValue returns the bounds of the value at s[i]: inside its quotes
// (plain or backslash-escaped), or up to , } ] or whitespace. A value whose
// quote does not close runs to the end of s.
func jsonValue(s string, i int) (int, int) {
	if i == len(s) {
		return i, i
	}
	switch c := s[i]; {
	case c == '"' || c == '\'':
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case c:
				return i + 1, j
			case '\\':
				j++
			}
		}
		return i + 1, len(s)
	case c == '\\' && i+1 < len(s) && isQuote(s[i+1]):
		if e := strings.Index(s[i+2:], s[i:i+2]); e >= 0 {
			return i + 2, i + 2 + e
		}
		return i + 2, len(s)
	}
	j := i
	for j < len(s) && !isSpace(s[j]) && !strings.ContainsRune(",}]\"'", rune(s[j])) {
		j++
	}
	return i, j
}

func skipSpaces(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}
