package main

import (
	"bytes"
	"context"
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
