package exporter

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRenderWaterfallGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tl    *correlator.Timeline
		width int
	}{
		{"lifecycle-demo", lifecycleDemo(), 100},
		{"lifecycle-demo-narrow", lifecycleDemo(), 72},
		{"init-failure-never", initFailureNever(), 100},
		{"poststart-demo", postStartDemo(), 100},
		{"probe-retries", probeRetries(), 100},
		{"restarts", restarts(), 100},
		{"stuck-crashloop", stuckCrashLoop(), 100},
		{"stuck-crashloop-narrow", stuckCrashLoop(), 72},
		{"late-seen", lateSeen(), 100},
		{"blind-sources", blindSources(), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tc.tl, tc.width); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > tc.width {
					t.Errorf("line %d is %d columns wide, more than %d: %q", i+1, n, tc.width, line)
				}
			}
			golden := filepath.Join("testdata", "waterfall-"+tc.name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("waterfall differs from %s (rerun with -update if intended)\n got:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
			}
			// Deterministic: a second rendering is identical.
			var again bytes.Buffer
			if err := Render(&again, tc.tl, tc.width); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Error("two renderings differ")
			}
		})
	}
}

// TestWaterfallStaticPod: the header says the pod is static and which
// config hash its node facts carry; its coarse conditions show no lag.
func TestWaterfallStaticPod(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, staticPod(), 100); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "static pod (config hash "+staticHash+")") {
		t.Errorf("no static pod line in\n%s", out)
	}
	if strings.Contains(out, "saw this pod from") {
		t.Errorf("a static pod seen from its start says it was seen late:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  Ready ") && (!strings.Contains(line, "coarse") || strings.Contains(line, string(glyphLag))) {
			t.Errorf("coarse Ready row %q: want \"coarse\" and no lag", line)
		}
	}
}
