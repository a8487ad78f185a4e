package exporter

import (
	"strconv"
	"strings"
)

// htmlWriter builds a page of the UI (ui_pages.go): its markup as written,
// and the values in it escaped exactly as html/template escaped them when
// the pages were templates, in the only contexts the pages use: text, the
// text of a <title>, a quoted attribute and an href.
//
// The pages are plain Go code, not templates, for the size of the daemon:
// text/template calls reflect.Value.MethodByName with a name known only at
// run time, so the linker keeps every exported method of every type
// converted to an interface. Without html/template (and, with the build tag
// grpcnotrace, without golang.org/x/net/trace), the daemon's binary maps
// 24.5 MiB instead of 29.5 MiB, and its pages are most of its RSS. The
// templates are kept in testdata/ui: ui_template_test.go renders every page
// both ways and requires the same bytes.
type htmlWriter struct {
	b []byte
}

// raw writes markup as it is.
func (w *htmlWriter) raw(s string) {
	w.b = append(w.b, s...)
}

// text writes s escaped for HTML text, the body of a <title> or a quoted
// attribute value: html/template's escaper for all three. NUL becomes
// U+FFFD; " & ' + < > become entities; the rest, invalid UTF-8 included,
// is written as it is. The runes replaced are all ASCII, and an ASCII byte
// is never part of a longer (or invalid) UTF-8 sequence, so going byte by
// byte is the same as html/template's going rune by rune.
func (w *htmlWriter) text(s string) {
	done := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		w.b = append(w.b, s[done:i]...)
		w.b = append(w.b, repl...)
		done = i + 1
	}
	w.b = append(w.b, s[done:]...)
}

// int writes n in decimal, as fmt does.
func (w *htmlWriter) int(n int) {
	w.b = strconv.AppendInt(w.b, int64(n), 10)
}

// attr writes ` name="value"`, the value escaped.
func (w *htmlWriter) attr(name, value string) {
	w.raw(" " + name + `="`)
	w.text(value)
	w.raw(`"`)
}

// intAttr writes ` name="n"`.
func (w *htmlWriter) intAttr(name string, n int) {
	w.raw(" " + name + `="`)
	w.int(n)
	w.raw(`"`)
}

// title writes a <title> element (an SVG tooltip) of s.
func (w *htmlWriter) title(s string) {
	w.raw("<title>")
	w.text(s)
	w.raw("</title>")
}

// titleIf writes a <title> element of s when s is not "".
func (w *htmlWriter) titleIf(s string) {
	if s != "" {
		w.title(s)
	}
}

// optAttr writes ` name="value"` when value is not "" (a template's
// {{with .Value}} name="{{.}}"{{end}}).
func (w *htmlWriter) optAttr(name, value string) {
	if value != "" {
		w.attr(name, value)
	}
}

// url writes s as the whole value of a quoted href, as html/template does:
// a URL with a scheme other than http, https or mailto becomes
// "#ZgotmplZ"; every byte that is neither unreserved nor reserved in RFC
// 3986 (nor a % starting an escape) is percent-encoded; then the result is
// escaped as an attribute value (& and + are left by the encoding).
func (w *htmlWriter) url(s string) {
	if !isSafeURL(s) {
		s = "#ZgotmplZ"
	}
	w.text(normalizeURL(s))
}

// isSafeURL is html/template's: true for a relative URL and for one whose
// scheme is http, https or mailto (in any case, strings.EqualFold's).
func isSafeURL(s string) bool {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") {
		return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "mailto")
	}
	return true
}

// normalizeURL is html/template's URL normalizer: the RFC 3986 unreserved
// and reserved characters stay, a % before two hex digits stays, every
// other byte (quotes, spaces, controls, non-ASCII) is written %xx, in lower
// case.
func normalizeURL(s string) string {
	const hex = "0123456789abcdef"
	var b []byte
	done := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0:
			continue
		case c == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			continue
		}
		b = append(b, s[done:i]...)
		b = append(b, '%', hex[c>>4], hex[c&0xf])
		done = i + 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[done:]...))
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
