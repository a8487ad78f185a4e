package exporter

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/readyline/readyline/exporter/internal/fixtures"
)

// waterfallCorpus is the corpus of exporter/waterfall's FuzzWaterfall,
// whose inputs FuzzWaterfallHTML and the template tests draw too.
const waterfallCorpus = "waterfall/testdata/fuzz/FuzzWaterfall/*"

// FuzzWaterfallHTML draws the inputs of exporter/waterfall's FuzzWaterfall
// (fixtures whose every time and duration comes from the fuzzer, including
// the zero time, year 1 and year 9999) as the HTML page: RenderWaterfallHTML
// must return promptly and never panic, and write no more than the
// fixture's rows allow.
func FuzzWaterfallHTML(f *testing.F) {
	seeds := fixtures.WaterfallFuzzSeeds()
	corpus, err := filepath.Glob(waterfallCorpus)
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range corpus {
		seeds = append(seeds, readWaterfallCorpus(f, path))
	}
	for _, s := range seeds {
		f.Add(s.Fixture, s.Width, s.Times)
	}
	f.Fuzz(func(t *testing.T, fixture uint8, _ int, times []byte) {
		tl := fixtures.FuzzTimeline(fixture, times)
		var page bytes.Buffer
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			if err := RenderWaterfallHTML(&page, tl, "", ""); err != nil {
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
		// A page is a few KiB per row, whatever the times.
		if max := 120 << 12; page.Len() > max {
			t.Errorf("%d bytes of HTML, more than %d", page.Len(), max)
		}
	})
}
