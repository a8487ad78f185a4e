package waterfall

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRenderWaterfallGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tl    *correlator.Timeline
		width int
	}{
		{"lifecycle-demo", fixtures.LifecycleDemo(), 100},
		{"lifecycle-demo-narrow", fixtures.LifecycleDemo(), 72},
		{"init-failure-never", fixtures.InitFailureNever(), 100},
		{"poststart-demo", fixtures.PostStartDemo(), 100},
		{"probe-retries", fixtures.ProbeRetries(), 100},
		{"restarts", fixtures.Restarts(), 100},
		{"stuck-crashloop", fixtures.StuckCrashLoop(), 100},
		{"stuck-crashloop-narrow", fixtures.StuckCrashLoop(), 72},
		{"late-seen", fixtures.LateSeen(), 100},
		{"blind-sources", fixtures.BlindSources(), 100},
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
	if err := Render(&buf, fixtures.StaticPod(), 100); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "static pod (config hash "+fixtures.StaticHash+")") {
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

// TestWaterfallBlindSources: the header has a line per blind source, its
// times from the start like the rows'.
func TestWaterfallBlindSources(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, fixtures.BlindSources(), 120); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  blind: cri_calls: kubelet_restarted -3.000s–+1.200s: kubelet calls in this window are not seen\n",
		"  blind: process: ring_full +9.100s–+10.100s, ring_full +22.000s–+23.000s (150 records lost): process execs and exits in\n" +
			"         these windows may be missing\n",
		"  blind: pod_watch: disconnected since +26.000s (still blind): pod updates in this window are seen late or not at all\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in\n%s", want, buf.String())
		}
	}
}
