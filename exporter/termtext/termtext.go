// Package termtext makes text that a pod, the runtime or the API server
// controls safe to print on a terminal. A pod names its containers, the
// files it execs and their arguments, and the messages of its waiting
// states; printed as they are, an ESC or a C1 CSI in them can retitle the
// operator's terminal, clear the screen or draw lines that readyline never
// wrote (kubectl escapes such text since CVE-2021-25743).
//
// Escape is the one function for it: the text waterfall, `readyline
// explain`'s list and the kubectl plugin's tables call it where they write
// such a string. HTML pages (html.EscapeString) and JSON (encoding/json) have
// escaping of their own and do not use it.
package termtext

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every character a terminal could act on written
// as visible text, the way Go quotes strings: the C0 controls
// U+0000-U+001F (newline and tab included) and DEL as \xNN, or \a \b \f
// \n \r \t \v; the C1 controls U+0080-U+009F as \u00NN; the characters
// that change what is shown without being shown, as \uNNNN (\UNNNNNNNN
// past U+FFFF): bidirectional controls (a right-to-left override makes
// "exe.txt" of "txt.exe"), zero-width and other invisible format characters
// (Unicode's Cf: a soft hyphen, a byte order mark, tag characters) and the
// line and paragraph separators; and each byte that
// is not part of valid UTF-8 as \xNN. Everything else,
// backslashes included, is kept as it is, so the result is for reading,
// not for parsing back. Escape(Escape(s)) == Escape(s), and s is returned
// unchanged (not copied) when there is nothing to escape.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeByteEscape(&b, s[i])
		case r < 0x20 && shortEscapes[r] != "":
			b.WriteString(shortEscapes[r])
		case r < 0x20 || r == 0x7f:
			writeByteEscape(&b, byte(r))
		case r >= 0x80 && r <= 0x9f:
			b.WriteString(`\u00`)
			writeHex(&b, byte(r))
		case invisible(r):
			q := strconv.QuoteRuneToASCII(r) // '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte of s that Escape changes, or
// len(s).
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f { // printable ASCII, the common case
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r == utf8.RuneError && size == 1) || invisible(r) {
			return i
		}
		i += size
	}
	return len(s)
}

// invisible says whether r changes how text is shown without being shown:
// a format character (Cf: bidirectional controls and marks, zero-width
// characters, the byte order mark, tags) or a line or paragraph separator.
func invisible(r rune) bool {
	return r >= 0xa0 && (unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029')
}

// WriteJSON writes v as JSON (one line, or indented by indent when it is
// not empty) and a newline, made safe for a terminal (JSON): what
// `-o json` prints.
func WriteJSON(w io.Writer, v any, indent string) error {
	var b []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", indent)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(append(JSON(b), '\n'))
	return err
}

// JSON returns the JSON text b with every character Escape would escape
// that encoding/json writes as it is (the C1 controls, the invisible
// characters) written as a JSON \u escape: the same JSON, which a terminal
// it is printed on cannot act on. Outside strings JSON has none of them.
func JSON(b []byte) []byte {
	if firstUnsafe(string(b)) == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if (r >= 0x80 && r <= 0x9f) || invisible(r) {
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// shortEscapes are the C0 controls Go's string literals name with a letter.
var shortEscapes = [0x20]string{'\a': `\a`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`}

func writeByteEscape(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	writeHex(b, c)
}

func writeHex(b *strings.Builder, c byte) {
	if c < 0x10 {
		b.WriteByte('0')
	}
	b.WriteString(strconv.FormatUint(uint64(c), 16))
}

// Writer escapes what is written through it as Escape does, except that it
// keeps newlines: it is for a stream of lines that a program which already
// escaped its fields (`readyline explain` in a readyline pod) wrote, so
// that a readyline older than that, or any other writer, still cannot act
// on the terminal. A UTF-8 sequence split across two Writes is kept whole;
// Flush writes (escaped) what is left of an unfinished one at the end.
// A Writer is not safe for concurrent use.
type Writer struct {
	w    io.Writer
	tail []byte // the start of a UTF-8 sequence the last Write ended in
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// Write escapes p and writes it; it returns len(p) when the underlying
// writer took all of it.
func (w *Writer) Write(p []byte) (int, error) {
	buf := append(w.tail, p...)
	w.tail = nil
	// Hold back a rune that may be completed by the next Write.
	if cut := incompleteSuffix(buf); cut < len(buf) {
		w.tail = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	if err := w.writeLines(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held of an unfinished UTF-8 sequence, escaped as
// the invalid bytes it is.
func (w *Writer) Flush() error {
	tail := w.tail
	w.tail = nil
	return w.writeLines(tail)
}

func (w *Writer) writeLines(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var out strings.Builder
	for line := range strings.SplitAfterSeq(string(b), "\n") {
		text, nl := strings.CutSuffix(line, "\n")
		out.WriteString(Escape(text))
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w.w, out.String())
	return err
}

// incompleteSuffix is where an unfinished UTF-8 sequence at the end of b
// begins (a lead byte followed by fewer continuation bytes than it needs),
// or len(b) when b does not end inside one.
func incompleteSuffix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) {
			return i
		}
		break
	}
	return len(b)
}
