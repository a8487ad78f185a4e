package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReplayAbsurdTimes: a recording of a pod created in year 1 and a
// tick in year 9999 (it once made the waterfall loop for minutes) prints
// its timeline promptly, with a note that its times spread too far.
func TestReplayAbsurdTimes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runReplay(context.Background(), []string{filepath.Join("testdata", "absurd-times.jsonl")}, &stdout, &stderr)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("replay: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replay of 3 lines did not end within 10 s")
	}
	out := stdout.String()
	if !strings.Contains(out, "default/ancient") || !strings.Contains(out, "the bars show the first") {
		t.Errorf("want the timeline of default/ancient with a note on its times, got:\n%s", out)
	}
}

// TestReplaySaysClockSteps: a recording whose ticks show the wall clock
// stepping back an hour replays, and replay says so.
func TestReplaySaysClockSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	var lines []string
	for s := range 10 {
		wall := t0.Add(time.Duration(s) * time.Second)
		if s >= 5 {
			wall = wall.Add(-time.Hour)
		}
		lines = append(lines, fmt.Sprintf(`{"type":"tick","time":%q,"mono":%d}`, wall.Format(time.RFC3339Nano), (100+s)*int(time.Second)))
	}
	path := filepath.Join(t.TempDir(), "steps.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := runReplay(context.Background(), []string{path}, &stdout, &stderr); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stepped 1 times (the last by -1h0m0s)") {
		t.Errorf("stderr %q: want the step", stderr.String())
	}
}
