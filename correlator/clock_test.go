package correlator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// boot0 is CLOCK_BOOTTIME at t0 in the clock tests.
const boot0 = 5000 * time.Second

// wallStep is how the sources stamp a scenario's events when the node's
// wall clock steps by step at from (seconds after t0, true time): a time
// after from moves by step, except in the kernel's events (exec, exit,
// fork, CRI calls, connections), which the sources convert with the boot
// clock's offset they re-sample only every stale: those happening within
// stale after the step keep the old offset. Each event's times move
// together for the kernel (one conversion), one by one for the others (the
// runtime, the kubelet and the watch stamp each time when it happens).
type wallStep struct {
	from  float64
	step  time.Duration
	stale time.Duration
}

func (w wallStep) wall(t time.Time) time.Time {
	if t.Before(at(w.from)) {
		return t
	}
	return t.Add(w.step)
}

// stamp returns the event as the sources deliver it (a copy).
func (w wallStep) stamp(ev event.Event) event.Event {
	c := reflect.New(reflect.TypeOf(ev).Elem())
	c.Elem().Set(reflect.ValueOf(ev).Elem())
	f := w.wall
	switch ev.(type) {
	case *event.ProcessExec, *event.ProcessExit, *event.ProcessFork, *event.CRICall, *event.TCPConnection:
		d := time.Duration(0)
		if t := ev.When(); !t.Before(at(w.from).Add(w.stale)) {
			d = w.step
		}
		f = func(t time.Time) time.Time { return t.Add(d) }
	}
	mapTimes(c.Elem(), f, map[uintptr]reflect.Value{})
	return c.Interface().(event.Event)
}

// tickedRun feeds the events with the daemon's ticks (each second, with
// CLOCK_BOOTTIME) as w stamps them, 10 s of ticks after the last one, and
// returns the timelines with the true time (seconds after t0) of the tick
// or event that completed each. It also returns the stream it fed.
func tickedRun(t *testing.T, cfg Config, evs []event.Event, w wallStep) ([]*Timeline, []float64, []event.Event) {
	return tickedRunFor(t, cfg, evs, w, 10)
}

// tickedRunFor is tickedRun with tail seconds of ticks after the events.
func tickedRunFor(t *testing.T, cfg Config, evs []event.Event, w wallStep, tail float64) ([]*Timeline, []float64, []event.Event) {
	t.Helper()
	c := New(cfg)
	var out []*Timeline
	var when []float64
	var fed []event.Event
	handle := func(ev event.Event, s float64) {
		fed = append(fed, ev)
		for _, tl := range c.Handle(ev) {
			out = append(out, tl)
			when = append(when, s)
		}
	}
	next := 0.0
	tick := func() {
		tt := at(next)
		handle(&event.Tick{Time: w.wall(tt), Mono: boot0 + tt.Sub(t0)}, next)
		next++
	}
	stepTold := false
	for _, ev := range evs {
		for !at(next).After(ev.When()) {
			tick()
		}
		if tt := ev.When(); !stepTold && !tt.Before(at(w.from)) {
			// The daemon reads its clocks as each event arrives and ticks
			// at once when the wall clock moved (collector.ClockWatch).
			stepTold = true
			handle(&event.Tick{Time: w.wall(tt), Mono: boot0 + tt.Sub(t0)}, tt.Sub(t0).Seconds())
		}
		handle(w.stamp(ev), ev.When().Sub(t0).Seconds())
	}
	for end := next + tail; next < end; {
		tick()
	}
	return out, when, fed
}

// shiftedBy is tl with every time moved by d (what the same start looks
// like on a wall clock d ahead).
func shiftedBy(tl *Timeline, d time.Duration) *Timeline {
	c := *tl
	mapTimes(reflect.ValueOf(&c).Elem(), func(t time.Time) time.Time { return t.Add(d) }, map[uintptr]reflect.Value{})
	return &c
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClockStepDuringStart: the wall clock steps back, or ahead, at some
// moment of lifecycle-demo's 20 s start, with the kernel's times on the old
// offset for 5 s more. The start is one timeline, completed no later than
// without a step (not an hour later, not as a timeout), identical to the
// start without a step as the clock after the step tells it, and marked
// with the step.
func TestClockStepDuringStart(t *testing.T) {
	cfg := Config{Timeout: 60 * time.Second}
	plain, plainWhen, _ := tickedRun(t, cfg, lifecycleDemo(t).events, wallStep{from: 1e6})
	if len(plain) != 1 || plain[0].Outcome != OutcomeReady || plain[0].Marks != nil {
		t.Fatalf("without a step: %d timelines %+v", len(plain), plain)
	}
	steps := []time.Duration{-2 * time.Hour, -time.Hour, -10 * time.Minute, -30 * time.Second, -5 * time.Second, -3 * time.Second,
		3 * time.Second, 5 * time.Second, 30 * time.Second, time.Hour}
	for _, from := range []float64{0.5, 6, 10.5, 13.1, 19.5} {
		for _, step := range steps {
			t.Run(fmt.Sprintf("%v@%.1fs", step, from), func(t *testing.T) {
				got, when, _ := tickedRun(t, cfg, lifecycleDemo(t).events, wallStep{from: from, step: step, stale: 5 * time.Second})
				if len(got) != 1 {
					t.Fatalf("%d timelines, want the start's one: %s", len(got), mustJSON(t, got))
				}
				tl := got[0]
				if when[0] > plainWhen[0] {
					t.Errorf("completed at %.1fs, later than without a step (%.1fs)", when[0], plainWhen[0])
				}
				if len(tl.ClockSteps) != 1 || tl.ClockSteps[0].Step != step || len(tl.Marks) != 1 || tl.Marks[0] != MarkClockStep {
					t.Fatalf("marks %v, steps %+v: want the one step of %v", tl.Marks, tl.ClockSteps, step)
				}
				if d := tl.ClockSteps[0].At.Sub(at(from)); d < step || d > step+time.Second {
					t.Errorf("step at %v, want when it happened on the clock after it", tl.ClockSteps[0].At)
				}
				want := shiftedBy(plain[0], step)
				want.Marks, want.ClockSteps = tl.Marks, tl.ClockSteps
				if g, w := mustJSON(t, tl), mustJSON(t, want); g != w {
					t.Errorf("timeline across the step differs from the start without it on the new clock:\n got %s\nwant %s", g, w)
				}
			})
		}
	}
}

// TestClockStepLegacyTicks is what the monotonic reading fixes: with ticks
// of the wall clock only, one tick an hour ahead reports the start in
// progress as timed out.
func TestClockStepLegacyTicks(t *testing.T) {
	c := New(Config{Timeout: 60 * time.Second})
	var got []*Timeline
	for _, ev := range lifecycleDemo(t).events {
		if ev.When().After(at(10)) {
			got = append(got, c.Handle(&event.Tick{Time: at(10).Add(time.Hour)})...)
			break
		}
		got = append(got, c.Handle(ev)...)
	}
	if len(got) != 1 || !got[0].Partial || got[0].Outcome != OutcomeTimeout {
		t.Fatalf("%d timelines %+v: want the timeout report the legacy clock makes", len(got), got)
	}
}

// TestClockTickAheadOnce: one tick an hour ahead, the next back on time
// (two steps): the start in progress does not time out and its times are
// untouched (the clock it ends on is the one it began on).
func TestClockTickAheadOnce(t *testing.T) {
	sc := lifecycleDemo(t)
	c := New(Config{Timeout: 60 * time.Second})
	var got []*Timeline
	next := 0.0
	for _, ev := range sc.events {
		for !at(next).After(ev.When()) {
			wall := at(next)
			if next == 10 {
				wall = wall.Add(time.Hour)
			}
			got = append(got, c.Handle(&event.Tick{Time: wall, Mono: boot0 + at(next).Sub(t0)})...)
			next++
		}
		got = append(got, c.Handle(ev)...)
	}
	for end := next + 5; next < end; next++ {
		got = append(got, c.Handle(&event.Tick{Time: at(next), Mono: boot0 + at(next).Sub(t0)})...)
	}
	if len(got) != 1 || got[0].Outcome != OutcomeReady || got[0].Partial {
		t.Fatalf("%d timelines: %s", len(got), mustJSON(t, got))
	}
	if st := c.Stats(); st.ClockSteps != 2 || st.ClockStep != -time.Hour {
		t.Errorf("stats %+v: want two steps, the last one back", st)
	}
	if tl := got[0]; !tl.Start.Equal(t0) || !tl.End.Equal(at(20)) || len(tl.ClockSteps) != 2 {
		t.Errorf("start %v end %v steps %+v: want t0..20s with both steps", tl.Start, tl.End, tl.ClockSteps)
	}
}

// TestClockStepBackThenNewPod: after the clock steps back an hour, a pod
// that starts later is traced at once, with its own times unchanged and no
// mark: it never saw the step.
func TestClockStepBackThenNewPod(t *testing.T) {
	w := wallStep{from: 0.5, step: -time.Hour, stale: 5 * time.Second}
	// The pod starts at 10 s: its events all come after the step and after
	// the kernel sources re-sampled their offset.
	sc := newScenario(t, "after", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}})
	sc.cond(corev1.PodScheduled, 10)
	sc.update(10.05)
	sc.sandboxCall(10.2, 10.6, sandboxID, 0, 100)
	sc.cond(corev1.PodReadyToStartContainers, 10.6)
	sc.update(10.7)
	sc.runtime(11.0, idMain, "app", 0, 10.9, 10.95, 0, 0)
	sc.exec(10.96, idMain, 400, shimPID, "app")
	sc.status(false, running("app", idMain, 10.95, true, true))
	sc.cond(corev1.ContainersReady, 11.0)
	sc.cond(corev1.PodReady, 11.0)
	sc.update(11.1)
	got, when, _ := tickedRun(t, Config{}, sc.events, w)
	if len(got) != 1 {
		t.Fatalf("%d timelines", len(got))
	}
	tl := got[0]
	if when[0] > 13.5 {
		t.Errorf("completed %.1fs after t0, want within the grace period of Ready at 11.1s", when[0])
	}
	// Its times as the sources stamped them: creation at t0 (before the
	// step, the API server's), Ready observed at 11.1 - 1 h.
	if !tl.End.Equal(at(11.1).Add(-time.Hour)) || tl.Outcome != OutcomeReady {
		t.Errorf("end %v, want Ready's observation on the clock after the step", tl.End)
	}
	if sb := tl.Sandbox; sb == nil || sb.Call == nil || !sb.Call.Start.Equal(at(10.2).Add(-time.Hour)) {
		t.Errorf("sandbox %+v: want the RunPodSandbox call at its own time", tl.Sandbox)
	}
	for _, p := range tl.Phases {
		if p.Duration() < 0 || p.Duration() > 20*time.Second {
			t.Errorf("phase %s lasts %v", p.Name, p.Duration())
		}
	}
}

// TestClockReplayMatchesLive: a recording of a run whose wall clock
// stepped replays to the same timelines, and handling the events does not
// modify them (the daemon records each event before the correlator reads
// it).
func TestClockReplayMatchesLive(t *testing.T) {
	w := wallStep{from: 10.5, step: -time.Hour, stale: 5 * time.Second}
	cfg := Config{Timeout: 60 * time.Second}
	live, _, fed := tickedRun(t, cfg, lifecycleDemo(t).events, w)
	var before bytes.Buffer
	rec := event.NewWriter(&before)
	for _, ev := range fed {
		if err := rec.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	// The fed events, written again after the correlator read them.
	var after bytes.Buffer
	rec = event.NewWriter(&after)
	for _, ev := range fed {
		_ = rec.Write(ev)
	}
	_ = rec.Flush()
	if before.String() != after.String() {
		t.Error("handling the events modified them")
	}
	c := New(cfg)
	var replayed []*Timeline
	if err := c.Replay(bytes.NewReader(before.Bytes()), func(tl *Timeline) error { replayed = append(replayed, tl); return nil }); err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, replayed), mustJSON(t, live); g != w {
		t.Errorf("replay differs from the live run:\n replay %s\n live %s", g, w)
	}
	if c.Stats().ClockSteps != 1 {
		t.Errorf("replay stats %+v: want the step", c.Stats())
	}
}

// TestMapTimesCopies: moving a timeline's times moves every non-zero time
// (zero stays unobserved) and leaves what it shares with the correlator's
// state alone.
func TestMapTimesCopies(t *testing.T) {
	earlier := []time.Time{at(1)}
	code := 0
	call := &CRICall{Start: at(2), End: at(3)}
	tl := &Timeline{Start: at(0), End: at(5),
		Conditions: []ConditionTransition{{Type: CondReady, Observed: at(5), EarlierObserved: earlier}},
		Containers: []Container{{Attempts: []ContainerAttempt{{Created: at(2),
			PostStart: &Hook{Start: at(3), Call: call}, Probes: []ProbeAttempt{{Start: at(4), Call: call}},
			Process: &Process{Exec: at(2.5), ExitCode: &code}}}}},
	}
	got := shiftedBy(tl, time.Hour)
	if !earlier[0].Equal(at(1)) || !call.Start.Equal(at(2)) || !tl.Conditions[0].Observed.Equal(at(5)) {
		t.Fatal("the original's times moved")
	}
	a := got.Containers[0].Attempts[0]
	for name, tt := range map[string]time.Time{
		"start": got.Start, "earlier": got.Conditions[0].EarlierObserved[0], "hook": a.PostStart.Start,
		"call": a.PostStart.Call.Start, "probe call": a.Probes[0].Call.End, "exec": a.Process.Exec,
	} {
		if tt.Sub(tl.Start) < time.Hour-time.Second || tt.Sub(tl.Start) > time.Hour+5*time.Second {
			t.Errorf("%s at %v: not moved by an hour", name, tt)
		}
	}
	if a.PostStart.Call != a.Probes[0].Call {
		t.Error("a pointer shared in the timeline is no longer shared")
	}
	if !a.Process.Exit.IsZero() || !a.Started.IsZero() {
		t.Error("a zero time was moved")
	}
}

// TestPropertyClockSteps: random pod starts (those of
// TestPropertyRandomStarts), with the wall clock stepping by a random
// amount at a random moment: each timeline holds what every timeline must
// (checkTimeline), the ones seen across the step are marked, and for a step of
// 45 s or more they are the timelines without the step, each on the clock
// of when it was made. (A smaller step back leaves some times ambiguous: a
// container's start reported 5 s late after a 5 s step back reads the
// same on either clock.)
func TestPropertyClockSteps(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	steps := []time.Duration{-2 * time.Hour, -time.Hour, -10 * time.Minute, -45 * time.Second, -5 * time.Second,
		5 * time.Second, 45 * time.Second, 10 * time.Minute, time.Hour}
	for seed := range seeds {
		r := rand.New(rand.NewSource(int64(seed)))
		var events []event.Event
		seen := map[string]time.Time{} // each pod's first sight: a pod scheduled late is seen then
		for p := range 1 + r.Intn(3) {
			sc := randomStart(t, r, fmt.Sprintf("rand-%d-%d", seed, p), p)
			events, seen[sc.pod.Name] = append(events, sc.events...), sc.events[0].When()
		}
		events = jumble(r, events)
		last := events[len(events)-1].When().Sub(t0).Seconds()
		w := wallStep{from: r.Float64() * last, step: steps[r.Intn(len(steps))], stale: time.Duration(r.Intn(6)) * time.Second}
		plain, _, _ := tickedRunFor(t, Config{}, events, wallStep{from: 1e9}, 180)
		got, when, _ := tickedRunFor(t, Config{}, events, w, 180)
		what := fmt.Sprintf("seed %d, %v at %.1fs", seed, w.step, w.from)
		if len(got) != len(plain) {
			t.Errorf("%s: %d timelines, %d without the step", what, len(got), len(plain))
			continue
		}
		for i, tl := range got {
			want := plain[i]
			if when[i] >= w.from {
				want = shiftedBy(want, w.step)
			}
			spans := !seen[tl.Pod.Name].After(at(w.from)) && !plain[i].End.Before(at(w.from))
			if spans && len(tl.ClockSteps) == 0 {
				t.Errorf("%s: %s spans the step, not marked", what, tl.Pod.Name)
			}
			checkTimeline(t, what+" "+tl.Pod.Name, shiftedBy(tl, -w.step))
			want.Marks, want.ClockSteps = tl.Marks, tl.ClockSteps
			if w.step.Abs() < 45*time.Second {
				continue
			}
			if g, w := mustJSON(t, tl), mustJSON(t, want); g != w {
				t.Errorf("%s: %s differs from the start without the step:\n got %s\nwant %s", what, tl.Pod.Name, g, w)
			}
		}
	}
}

// TestClockAnotherBoot: a recording of another boot appended (its
// monotonic readings start again near 0) does not stall the clock: the
// start in it completes within its grace period, on its own times.
func TestClockAnotherBoot(t *testing.T) {
	c := New(Config{})
	for s := 0.0; s < 5; s++ {
		c.Handle(&event.Tick{Time: at(s).Add(-time.Hour), Mono: boot0 + time.Duration(s)*time.Second})
	}
	var got []*Timeline
	next := 0.0
	for _, ev := range lifecycleDemo(t).events {
		for !at(next).After(ev.When()) {
			got = append(got, c.Handle(&event.Tick{Time: at(next), Mono: 30*time.Second + at(next).Sub(t0)})...)
			next++
		}
		got = append(got, c.Handle(ev)...)
	}
	for end := next + 3; next < end; next++ {
		got = append(got, c.Handle(&event.Tick{Time: at(next), Mono: 30*time.Second + at(next).Sub(t0)})...)
	}
	if len(got) != 1 || got[0].Outcome != OutcomeReady || !got[0].Start.Equal(t0) || !got[0].End.Equal(at(20)) {
		t.Fatalf("%d timelines: %s", len(got), mustJSON(t, got))
	}
	if st := c.Stats(); st.ClockSteps != 1 {
		t.Errorf("stats %+v: want the new boot counted as a step", st)
	}
}
