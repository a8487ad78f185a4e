package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "nginx", "nginx"},
		{"empty", "", ""},
		{"non-ASCII kept", "café ✗ █ 日本", "café ✗ █ 日本"},
		{"backslash kept", `C:\x1b`, `C:\x1b`},
		{"title change", "\x1b]0;pwned\x07app", `\x1b]0;pwned\aapp`},
		{"screen clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"carriage return hides the start", "evil\rgood", `evil\rgood`},
		{"fake line", "a\nreadyline-demo/web  Ready in 0.1s", `a\nreadyline-demo/web  Ready in 0.1s`},
		{"tab and the other named controls", "a\tb\a\b\f\v", `a\tb\a\b\f\v`},
		{"ESC has no short name", "\x1b\x01\x1f", `\x1b\x01\x1f`},
		{"NUL", "a\x00b", `a\x00b`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 NEL and APC", "\u0085\u009f", `\u0085\u009f`},
		{"first after C1 is kept", "\u00a0x", "\u00a0x"},
		{"invalid UTF-8", "a\xffb\xc2", `a\xffb\xc2`},
		{"lone continuation byte", "\x9b2J", `\x9b2J`},
		{"surrogate half", "\xed\xa0\x80", `\xed\xa0\x80`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Escape(tc.in)
			if got != tc.want {
				t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := Escape(got); again != got {
				t.Errorf("Escape is not idempotent: %q -> %q", got, again)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Escape(%q) = %q is not valid UTF-8", tc.in, got)
			}
		})
	}
}

// TestEscapeEveryByte: whatever the input, the output holds no byte a
// terminal acts on (no C0 but none at all, no DEL, no C1 code point) and
// is valid UTF-8.
func TestEscapeEveryByte(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c), 'x')
	}
	for r := rune(0x80); r <= 0x9f; r++ {
		all = utf8.AppendRune(all, r)
	}
	out := Escape(string(all))
	if !utf8.ValidString(out) {
		t.Fatalf("not valid UTF-8: %q", out)
	}
	for _, r := range out {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("%U left in %q", r, out)
		}
	}
}

func TestEscapeReturnsSafeStringAsIs(t *testing.T) {
	s := strings.Repeat("web-7d4b9c-x2x ", 4)
	if got := Escape(s); got != s {
		t.Fatalf("Escape(%q) = %q", s, got)
	}
	if n := testing.AllocsPerRun(100, func() { Escape(s) }); n != 0 {
		t.Errorf("Escape of a safe string allocates %v times", n)
	}
}

// TestWriterKeepsNewlines: the stream's newlines stay, everything else is
// escaped as Escape does, whatever the Writes' boundaries (here: inside a
// UTF-8 sequence, a C1 one and a box character).
func TestWriterKeepsNewlines(t *testing.T) {
	in := "pod \x1b[2Jweb\r █ ok\n  process \u009bsh\xff\n"
	want := `pod \x1b[2Jweb\r █ ok` + "\n" + `  process \u009bsh\xff` + "\n"
	for split := range len(in) + 1 {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, part := range []string{in[:split], in[split:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("split %d: Write = %d, %v", split, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("split at %d: %q, want %q", split, out.String(), want)
		}
	}
}

// TestWriterFlushesUnfinishedRune: a stream that ends inside a UTF-8
// sequence shows its bytes, escaped, after Flush.
func TestWriterFlushesUnfinishedRune(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("end \xe2\x96"))
	if got := out.String(); got != "end " {
		t.Errorf("before Flush: %q, want the unfinished rune held back", got)
	}
	w.Flush()
	if got, want := out.String(), `end \xe2\x96`; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
}

// TestEscapeInvisible: bidirectional controls, zero-width and other format
// characters, and the line separators are shown, not acted on; other
// non-ASCII text stays as it is.
func TestEscapeInvisible(t *testing.T) {
	cases := map[string]string{
		"evil\u202egnp.exe":     `evil\u202egnp.exe`,
		"a\u2066b\u2069c":       `a\u2066b\u2069c`,
		"zero\u200bwidth\ufeff": `zero\u200bwidth\ufeff`,
		"soft\u00adhyphen":      `soft\u00adhyphen`,
		"tag\U000E0041":         `tag\U000e0041`,
		"line\u2028para\u2029":  `line\u2028para\u2029`,
		"日本語 ünïcödé ✓":         "日本語 ünïcödé ✓",
		"rtl text: שלום مرحبا":  "rtl text: שלום مرحبا",
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if Escape(Escape(in)) != Escape(in) {
			t.Errorf("Escape is not idempotent on %q", in)
		}
	}
}

// TestWriteJSON: -o json is the same JSON, with the C1 controls and the
// invisible characters that encoding/json writes raw escaped.
func TestWriteJSON(t *testing.T) {
	v := map[string]string{"msg": "csi\u009b31m red \u202eevil\U000E0041 ok ✓\x1b"}
	var b strings.Builder
	if err := WriteJSON(&b, v, "  "); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, r := range []string{"\u009b", "\u202e", "\U000E0041", "\x1b"} {
		if strings.Contains(out, r) {
			t.Errorf("%q left raw in %q", r, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil || back["msg"] != v["msg"] {
		t.Errorf("not the same JSON: %v, %q", err, back["msg"])
	}
	if !strings.Contains(out, "✓") {
		t.Errorf("printable text escaped: %q", out)
	}
}
