package collector

import (
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

func TestRingLoss(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := ringLoss{source: event.SourceProcess}

	// Nothing lost between the attach and the reader's start: Up alone.
	evs := r.start(at(0), at(0.5), 0)
	if len(evs) != 1 || !evs[0].(*event.SourceStatus).Up || !evs[0].When().Equal(at(0.5)) {
		t.Fatalf("start: %+v, want one Up", evs)
	}
	if evs := r.check(at(1.5), 0); evs != nil {
		t.Errorf("no new drops: %+v", evs)
	}
	// 120 lost between the reads at 1.5 s and 2.5 s: one pair, since 1.5 s.
	evs = r.check(at(2.5), 120)
	want := []event.SourceStatus{
		{Time: at(2.5), Source: event.SourceProcess, Since: at(1.5), Reason: event.ReasonRingFull, Lost: 120},
		{Time: at(2.5), Source: event.SourceProcess, Up: true},
	}
	checkRingStatuses(t, "loss", evs, want)
	// The same total again: nothing new.
	if evs := r.check(at(3.5), 120); evs != nil {
		t.Errorf("no new drops: %+v", evs)
	}
	// A counter that started over (programs reloaded): all of it is new.
	checkRingStatuses(t, "counter restarted", r.check(at(4.5), 7), []event.SourceStatus{
		{Time: at(4.5), Source: event.SourceProcess, Since: at(3.5), Reason: event.ReasonRingFull, Lost: 7},
		{Time: at(4.5), Source: event.SourceProcess, Up: true},
	})

	// Records lost before the reader started: Down since the attach.
	r = ringLoss{source: event.SourceTCP}
	checkRingStatuses(t, "lost before the reader", r.start(at(0), at(0.2), 30), []event.SourceStatus{
		{Time: at(0.2), Source: event.SourceTCP, Since: at(0), Reason: event.ReasonRingFull, Lost: 30},
		{Time: at(0.2), Source: event.SourceTCP, Up: true},
	})
}

func checkRingStatuses(t *testing.T, what string, got []event.Event, want []event.SourceStatus) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d statuses %+v, want %+v", what, len(got), got, want)
	}
	for i := range want {
		st, ok := got[i].(*event.SourceStatus)
		if !ok || *st != want[i] {
			t.Errorf("%s: status %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}
