package redact

import "strings"

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
