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
	var got, gotLost int
	c := New(Config{OrphanTTL: time.Second, Orphaned: func(key string, first time.Time, events []event.Event, lost int) {
		gotKey, got, gotKinds, gotLost = key, len(events), OrphanKinds(events), lost
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
	if st := c.Stats(); st.Orphaned != 4 || gotLost != 4 {
		t.Errorf("Stats.Orphaned %d, told %d lost; want 4", st.Orphaned, gotLost)
	}
}

// TestRemainsOfDeletedPodAreTeardown: the runtime's first sync reports the
// sandbox and containers of a pod deleted before readyline ran, in whatever
// state its teardown left them; with its end among them (the sandbox not
// ready, a container exited, a StopPodSandbox), they are counted as
// UnknownTeardown, not as a loss. Without an end in sight they stay a loss:
// a running container of a pod the watch never showed is one.
func TestRemainsOfDeletedPodAreTeardown(t *testing.T) {
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	const gone, missed = "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e", "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"
	lost := map[string]int{}
	c := New(Config{OrphanTTL: time.Second, Orphaned: func(key string, _ time.Time, _ []event.Event, n int) { lost[key] = n }})
	reports := []*event.ContainerInfo{
		{ContainerID: "s1", Sandbox: true, PodUID: gone, State: "notready"},
		{ContainerID: "c1", SandboxID: "s1", PodUID: gone, ContainerName: "app", State: "running"},
		{ContainerID: "c1", SandboxID: "s1", PodUID: gone, ContainerName: "app", State: "exited"},
		{ContainerID: "s2", Sandbox: true, PodUID: missed, State: "ready"},
		{ContainerID: "c2", SandboxID: "s2", PodUID: missed, ContainerName: "app", State: "running"},
	}
	for i, r := range reports {
		r.Time = at.Add(time.Duration(i) * time.Millisecond)
		c.Handle(r)
	}
	c.Handle(&event.CRICall{Time: at.Add(10 * time.Millisecond), Method: event.CRIStopPodSandbox, PodUID: gone})
	for i := 1; i <= 120 && c.Stats().UnknownTeardown+c.Stats().Orphaned < 6; i++ {
		c.Handle(&event.Tick{Time: at.Add(time.Duration(i) * time.Second)})
	}
	if st := c.Stats(); st.UnknownTeardown != 4 || st.Orphaned != 2 {
		t.Errorf("UnknownTeardown %d, Orphaned %d; want 4 (the deleted pod's) and 2 (the running pod's)", st.UnknownTeardown, st.Orphaned)
	}
	// What the daemon logs follows the same split: the deleted pod's
	// teardown is no loss.
	if n, ok := lost[gone]; !ok || n != 0 {
		t.Errorf("told of the deleted pod: %v, lost %d; want told, 0 lost", ok, n)
	}
	if n := lost[missed]; n != 2 {
		t.Errorf("told the running pod lost %d events, want 2", n)
	}
}
