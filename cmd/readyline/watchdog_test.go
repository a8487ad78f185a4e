package main

import (
	"strings"
	"testing"
	"time"
)

// TestLoopWatchdog: healthy before the loop's first beat and while it
// beats; unhealthy, saying for how long and how much waits, once a beat is
// older than the stall; healthy again at the next beat. The clock is the
// test's: nothing here waits.
func TestLoopWatchdog(t *testing.T) {
	now := time.Unix(1000, 0)
	waiting := 0
	w := newLoopWatchdog(correlatorStall, func() int { return waiting }) // the daemon's, 30 s in the README
	w.now = func() time.Time { return now }
	w.base = now

	now = now.Add(time.Hour) // the sources loading, before the loop starts
	if err := w.Check(); err != nil {
		t.Errorf("before the first beat: %v", err)
	}
	w.Beat()
	for range 3 {
		now = now.Add(time.Second)
		w.Beat()
	}
	now = now.Add(29 * time.Second)
	if err := w.Check(); err != nil {
		t.Errorf("29 s after a beat: %v", err)
	}
	now = now.Add(2 * time.Second)
	waiting = 812
	err := w.Check()
	if err == nil || !strings.Contains(err.Error(), "31s") || !strings.Contains(err.Error(), "812 events waiting") {
		t.Errorf("31 s after a beat: %v, want an error with the time and the events waiting", err)
	}
	w.Beat()
	if err := w.Check(); err != nil {
		t.Errorf("after the loop came round again: %v", err)
	}

	var none *loopWatchdog
	none.Beat()
	if err := none.Check(); err != nil {
		t.Errorf("nil watchdog: %v", err)
	}
}
