package correlator

import (
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// TestOrphanedToldWhenDropped: the events of a pod that never shows up are
// handed to Config.Orphaned as they are dropped, with what they were.
func TestOrphanedToldWhenDropped(t *testing.T) {
	var gotKey, gotKinds string
	var got int
	c := New(Config{OrphanTTL: time.Second, Orphaned: func(key string, first time.Time, events []event.Event) {
		gotKey, got, gotKinds = key, len(events), OrphanKinds(events)
	}})
	const uid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	proc := event.Process{PID: 42, PodUID: uid, Scope: event.ScopePod}
	c.Handle(&event.ProcessExec{Time: at, Process: proc, Filename: "/bin/sh"})
	c.Handle(&event.ProcessExit{Time: at.Add(time.Millisecond), Process: proc})
	c.Handle(&event.ProcessExit{Time: at.Add(2 * time.Millisecond), Process: proc})
	c.Handle(&event.CRICall{Time: at.Add(3 * time.Millisecond), Method: event.CRIExecSync, PodUID: uid})
	for i := 1; i <= 120 && gotKey == ""; i++ {
		c.Handle(&event.Tick{Time: at.Add(time.Duration(i) * time.Second)})
	}
	if gotKey != uid || got != 4 {
		t.Fatalf("told of %q with %d events, want %s with 4", gotKey, got, uid)
	}
	if want := "exit 2, ExecSync 1, exec 1"; gotKinds != want {
		t.Errorf("kinds %q, want %q", gotKinds, want)
	}
	if st := c.Stats(); st.Orphaned != 4 {
		t.Errorf("Stats.Orphaned %d, want 4", st.Orphaned)
	}
}
