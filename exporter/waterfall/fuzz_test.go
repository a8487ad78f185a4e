package waterfall

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/exporter/internal/fixtures"
)

// FuzzWaterfall renders fixtures whose every time and duration comes from
// the fuzzer, including the zero time, year 1 and year 9999: Render must
// return promptly and never panic, keep every line within the width, and
// write no more than the fixture's rows allow. (The exporter's
// FuzzWaterfallHTML draws the same inputs as its HTML page.)
func FuzzWaterfall(f *testing.F) {
	for _, s := range fixtures.WaterfallFuzzSeeds() {
		f.Add(s.Fixture, s.Width, s.Times)
	}
	f.Fuzz(func(t *testing.T, fixture uint8, width int, times []byte) {
		tl := fixtures.FuzzTimeline(fixture, times)
		w := width
		if w <= 0 {
			w = DefaultWidth
		}
		w = min(max(w, MinWidth), MaxWidth)

		var buf bytes.Buffer
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			if err := Render(&buf, tl, width); err != nil {
				panic(err)
			}
		}()
		select {
		case p := <-done:
			if p != nil {
				t.Fatalf("rendering panicked: %v", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("rendering did not return within 5 s")
		}
		// The fixtures have fewer than 80 rows, header and footer included.
		const maxLines = 120
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) > maxLines {
			t.Errorf("%d lines, more than %d", len(lines), maxLines)
		}
		if max := maxLines * (w + 1) * utf8.UTFMax; buf.Len() > max {
			t.Errorf("%d bytes of output, more than %d", buf.Len(), max)
		}
		for i, line := range lines {
			if n := utf8.RuneCountInString(line); n > w {
				t.Fatalf("line %d is %d columns wide, more than %d: %q", i+1, n, w, line)
			}
		}
	})
}
