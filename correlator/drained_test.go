package correlator

import (
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// TestDrainedBuildsBeforeGrace: a finished start is built as soon as the
// kernel sources have drained past the moment its outcome was seen and the
// runtime told its containers' starts; otherwise at the end of its grace
// period, as without marks.
func TestDrainedBuildsBeforeGrace(t *testing.T) {
	const grace = 10 * time.Second
	ready := at(20) // lifecycle-demo's Ready update, its last event
	drain := func(source string, s float64) event.Event {
		return &event.Drained{Time: ready.Add(time.Duration(s * float64(time.Second))), Source: source}
	}
	all := func(s float64) []event.Event {
		return []event.Event{drain(event.SourceProcess, s), drain(event.SourceKubeletCalls, s), drain(event.SourceTCP, s)}
	}
	tcpDown := &event.SourceStatus{Time: ready.Add(-time.Second), Source: event.SourceTCP, Reason: event.ReasonRingFull}
	criDown := &event.SourceStatus{Time: ready.Add(-time.Second), Source: event.SourceRuntime, Reason: event.ReasonDisconnected}
	// The daemon's sources say Up as they start.
	var up []event.Event
	for _, s := range []string{event.SourceProcess, event.SourceKubeletCalls, event.SourceTCP, event.SourceRuntime, event.SourcePodWatch} {
		up = append(up, &event.SourceStatus{Time: t0.Add(-time.Minute), Source: s, Up: true})
	}
	cases := []struct {
		name string
		// before: events handed over before the start's own (the marks of
		// an earlier moment, the statuses); after: after its Ready update,
		// up to and including the one that must build it.
		before, after []event.Event
		// dropRuntime: the runtime's word on nginx never comes.
		dropRuntime bool
		// built: after how many of after's events the timeline comes;
		// -1: only at the end of the grace period; -2: not even then.
		built int
	}{
		{name: "no marks: the grace period", after: []event.Event{&event.Tick{Time: ready.Add(time.Second)}}, built: -1},
		{name: "all drained past", after: all(0.05), built: 3},
		{name: "marks from before the start do not count", before: all(-25), after: all(0.02), built: 3},
		{name: "one behind waits",
			after: []event.Event{drain(event.SourceProcess, 0.05), drain(event.SourceKubeletCalls, 0.05),
				drain(event.SourceTCP, -0.01), drain(event.SourceProcess, 0.1), drain(event.SourceTCP, 0.06)},
			built: 5},
		{name: "a blind source is not waited for", before: []event.Event{drain(event.SourceTCP, -2), tcpDown},
			after: []event.Event{drain(event.SourceProcess, 0.05), drain(event.SourceKubeletCalls, 0.05)}, built: 2},
		{name: "the runtime's word is waited for", dropRuntime: true, after: all(0.05), built: -1},
		{name: "and waited for while the runtime's source is blind", before: []event.Event{criDown},
			after: all(0.05), built: -2},
		{name: "a source up that never said how far is waited for",
			after: []event.Event{drain(event.SourceProcess, 0.05), drain(event.SourceTCP, 0.05)}, built: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := lifecycleDemo(t)
			c := New(Config{Grace: grace})
			for _, ev := range append(up, tc.before...) {
				c.Handle(ev)
			}
			for _, ev := range sc.events {
				if info, ok := ev.(*event.ContainerInfo); ok && tc.dropRuntime && info.ContainerID == idMain {
					continue
				}
				if got := c.Handle(ev); len(got) != 0 {
					t.Fatalf("built at %v, before its Ready update was handled", ev.When())
				}
			}
			for i, ev := range tc.after {
				got := c.Handle(ev)
				switch {
				case len(got) == 1 && i+1 == tc.built:
					if got[0].Outcome != OutcomeReady {
						t.Errorf("outcome %s", got[0].Outcome)
					}
					return
				case len(got) != 0:
					t.Fatalf("built after %d events, want %d", i+1, tc.built)
				}
			}
			if tc.built >= 0 {
				t.Fatalf("not built after %d events", len(tc.after))
			}
			if got := c.Handle(&event.Tick{Time: ready.Add(grace - 200*time.Millisecond)}); len(got) != 0 {
				t.Fatal("built before the end of the grace period")
			}
			if got := c.Handle(&event.Tick{Time: ready.Add(grace + 200*time.Millisecond)}); len(got) != 1 && tc.built == -1 {
				t.Fatal("not built at the end of the grace period")
			} else if len(got) != 0 && tc.built == -2 {
				t.Fatal("built at the end of the grace period, the runtime's source still blind")
			}
		})
	}
}
