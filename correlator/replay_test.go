package correlator

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReplayStops: Replay returns the first error of each, having made no
// call after it, and a recording's bad line as an error, not as its end.
func TestReplayStops(t *testing.T) {
	f, err := os.Open("testdata/recordings/demo-node.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop, calls := errors.New("stop"), 0
	if err := New(goldenConfig).Replay(f, func(*Timeline) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Replay: %v after %d calls, want stop after 1", err, calls)
	}
	err = New(Config{}).Replay(strings.NewReader("not a recording\n"), func(*Timeline) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("Replay of a bad line: %v, want its error", err)
	}
}
