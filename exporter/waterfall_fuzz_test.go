package exporter

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
)

// timeSource hands out times and durations decoded from fuzz bytes: each
// takes a selector byte (zero time, near year 1, near year 9999, Unix
// nanoseconds, Unix seconds, near the fixture's creation) and eight bytes
// of offset. Out of bytes, it hands out zero values.
type timeSource struct{ b []byte }

func (s *timeSource) next() (sel byte, v int64) {
	if len(s.b) == 0 {
		return 0, 0
	}
	sel, s.b = s.b[0], s.b[1:]
	var buf [8]byte
	n := copy(buf[:], s.b)
	s.b = s.b[n:]
	return sel, int64(binary.LittleEndian.Uint64(buf[:]))
}

func (s *timeSource) time() time.Time {
	sel, v := s.next()
	switch sel % 6 {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(v))
	case 2:
		return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Add(time.Duration(v))
	case 3:
		return time.Unix(0, v).UTC()
	case 4:
		return time.Unix(v, 0).UTC()
	default: // within ±2^31 ms of the fixture: plausible times, odd order
		return t0.Add(time.Duration(int32(v)) * time.Millisecond)
	}
}

func (s *timeSource) duration() time.Duration {
	_, v := s.next()
	return time.Duration(v)
}

// setTimes replaces every time.Time and time.Duration reachable from v
// (through pointers, structs and slices) with the next one from src.
func setTimes(v reflect.Value, src *timeSource) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			setTimes(v.Elem(), src)
		}
	case reflect.Slice:
		for i := range v.Len() {
			setTimes(v.Index(i), src)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(src.time()))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				setTimes(f, src)
			}
		}
	case reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(src.duration()))
		}
	}
}

// waterfallFuzzFixtures are the timelines FuzzWaterfall sets the times of.
var waterfallFuzzFixtures = []func() *correlator.Timeline{lifecycleDemo, stuckCrashLoop, restarts}

// waterfallFuzzSeed is an input of FuzzWaterfall.
type waterfallFuzzSeed struct {
	fixture uint8
	width   int
	times   []byte
}

// waterfallFuzzSeeds are FuzzWaterfall's seeds (ui_template_test.go draws
// their pages too).
func waterfallFuzzSeeds() []waterfallFuzzSeed {
	word := func(sel byte, v int64) []byte {
		return binary.LittleEndian.AppendUint64([]byte{sel}, uint64(v))
	}
	// Year 1 at 00:00:00 is the zero time; a second later is not.
	year1, year9999, zero := word(1, int64(time.Second)), word(2, 0), word(0, 0)
	return []waterfallFuzzSeed{
		{0, 100, bytes.Repeat(zero, 4)},
		{0, 100, append(year1, year9999...)},            // Start year 1, End year 9999
		{1, 72, append(year9999, year1...)},             // End before Start
		{2, 100, append(word(5, 0), word(5, -1000)...)}, // End 1 s before Start
		{0, 1 << 20, bytes.Repeat(word(4, 1<<62), 40)},  // past year 9999, very wide
		{1, -5, bytes.Repeat(append(year1, year9999...), 30)},
		{2, 64, bytes.Repeat(word(3, -1<<63), 50)},
	}
}

// FuzzWaterfall renders fixtures whose every time and duration comes from
// the fuzzer, including the zero time, year 1 and year 9999: RenderWaterfall
// and RenderWaterfallHTML must return promptly and never panic, the text
// must keep every line within the width, and neither may write more than
// the fixture's rows allow.
func FuzzWaterfall(f *testing.F) {
	for _, s := range waterfallFuzzSeeds() {
		f.Add(s.fixture, s.width, s.times)
	}
	fixtures := waterfallFuzzFixtures
	f.Fuzz(func(t *testing.T, fixture uint8, width int, times []byte) {
		tl := fixtures[int(fixture)%len(fixtures)]()
		setTimes(reflect.ValueOf(tl), &timeSource{b: times})
		w := width
		if w <= 0 {
			w = DefaultWaterfallWidth
		}
		w = min(max(w, waterfallMinWidth), waterfallMaxWidth)

		var buf, page bytes.Buffer
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			if err := RenderWaterfall(&buf, tl, width); err != nil {
				panic(err)
			}
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
