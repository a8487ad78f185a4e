package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCap: an argv longer than MaxBytes is cut to MaxBytes, Markers
// counting as one byte, ends with Marker, and redacting it again changes
// nothing (the cut of a redacted argv is not cut again). A secret the cut
// falls in goes whole.
func TestCap(t *testing.T) {
	long := strings.Repeat("x", MaxBytes)
	for _, tt := range []struct {
		name string
		in   []string
		want []string // nil: only the properties
	}{
		{"one long argument", []string{"sh", "-c", long}, []string{"sh", "-c", long[:MaxBytes-6] + " " + R}},
		{"the cut at an argument's start", []string{strings.Repeat("y", MaxBytes-2), "zz", "ww"}, []string{strings.Repeat("y", MaxBytes-2), R}},
		{"exactly MaxBytes", []string{long[:MaxBytes-2], "ab"}, []string{long[:MaxBytes-2], "ab"}},
		{"Markers count as one", []string{strings.Repeat(R, MaxBytes)}, []string{strings.Repeat(R, MaxBytes)}},
		{"the cut in a token", []string{"sh", "-c", long[:MaxBytes-40] + " ghp_0123456789abcdefghijABCDEFGHIJ0123456789"}, nil},
		{"the cut in a quoted header", []string{"sh", "-c", long[:MaxBytes-40] + ` -H "Authorization: Bearer 0123456789abcdefghijABCDEFGHIJ"`}, nil},
		{"the cut in a rune", []string{"sh", "-c", long[:MaxBytes-5] + "ééé"}, nil},
		{"a trailing backslash", []string{"sh", "-c", long[:MaxBytes-6] + `\\\\\\`}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Argv(tt.in)
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("Argv: got %q\nwant %q", abbrev(got), abbrev(tt.want))
			}
			if n := size(got); n > MaxBytes {
				t.Errorf("%d bytes, more than MaxBytes", n)
			}
			if size(tt.in) > MaxBytes && !strings.HasSuffix(got[len(got)-1], R) {
				t.Errorf("a cut argv that does not end with the Marker: %q", abbrev(got))
			}
			for _, secret := range []string{"0123", "hunter"} {
				if strings.Contains(strings.Join(got, " "), secret) {
					t.Errorf("%q left in %q", secret, abbrev(got))
				}
			}
			for _, a := range got {
				if !isValidUTF8(a) {
					t.Errorf("an argument cut inside a rune: %q", a)
				}
			}
			if again := Argv(got); !slices.Equal(again, got) {
				t.Errorf("not idempotent:\n once  %q\n twice %q", abbrev(got), abbrev(again))
			}
		})
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// TestCapProperties: random argvs around MaxBytes, with Markers, runes and
// backslashes where the cut may fall.
func TestCapProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc ", R, "é", `\`, "--password=", "ghp_", "'", "\n"}
	for range 300 {
		var argv []string
		for range 1 + rng.IntN(4) {
			var b strings.Builder
			for b.Len() < rng.IntN(2*MaxBytes) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			argv = append(argv, b.String())
		}
		got := Argv(argv)
		if size(got) > MaxBytes {
			t.Fatalf("%d bytes", size(got))
		}
		if again := Argv(got); !slices.Equal(again, got) {
			t.Fatalf("not idempotent:\n once  %q\n twice %q", abbrev(got), abbrev(again))
		}
		for _, a := range got {
			if !isValidUTF8(a) {
				t.Fatalf("an argument cut inside a rune: %q", abbrev([]string{a}))
			}
		}
	}
}

// abbrev shortens long arguments for a message.
func abbrev(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if len(a) > 80 {
			a = a[:20] + "…" + a[len(a)-60:]
		}
		out[i] = a
	}
	return out
}

// TestMemo: a long argv is redacted once (the next calls are answered from
// the memo), the answer is the caller's to change, a different argv of the
// same length is not taken for it, and the memo keeps at most memoEntries.
func TestMemo(t *testing.T) {
	m := newMemo()
	redact := func(argv []string) []string {
		in, cut := capped(argv, MaxBytes)
		return m.redact(argv, in, cut)
	}
	secret := benchScript(2 * memoMinBytes)
	first := redact(secret)
	first[0] = "changed by the caller"
	if again := redact(secret); again[0] != "sh" || m.misses.Load() != 1 {
		t.Errorf("again: %q..., %d redactions, want the memo's copy and 1", again[0], m.misses.Load())
	}
	other := slices.Clone(secret)
	other[2] = strings.Replace(other[2], "hunter2", "hunter3", 1)
	if got := redact(other); m.misses.Load() != 2 || strings.Contains(strings.Join(got, " "), "hunter3") {
		t.Errorf("another argv of the same length: %d redactions", m.misses.Load())
	}
	plain := []string{"sh", "-c", strings.Repeat("echo ok; ", memoMinBytes/8)}
	if got := redact(plain); &got[0] != &plain[0] {
		t.Error("an argv with nothing to redact is not returned as it is")
	}
	for i := range 3 * memoEntries {
		redact([]string{"sh", "-c", plain[2] + strings.Repeat(" ", i)})
	}
	if n := len(m.entries); n > memoEntries {
		t.Errorf("%d entries, more than memoEntries", n)
	}
}

// TestContainsSecretWord: the automaton finds what strings.Contains does.
func TestContainsSecretWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "pasTOKENwrdsecrtbaiy-_kvlhPASSWORDx."
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		want := false
		for _, w := range secretWords {
			want = want || strings.Contains(strings.ToLower(s), w)
		}
		if got := containsSecretWord(s); got != want {
			t.Fatalf("containsSecretWord(%q) = %v, want %v", s, got, want)
		}
	}
}
