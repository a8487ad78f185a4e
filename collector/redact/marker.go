package redact

import "strings"

// replaceAll redacts all of s.
func replaceAll(s string) string {
	if s == "" || isRedacted(s) {
		return s
	}
	return Marker
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
