package correlator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// readyThenCrash is a pod without a readiness probe, Ready at 1.5 s; its app
// exits 3 at 4.0 s, the API shows it not Ready at 4.6 s and in
// CrashLoopBackOff; the kubelet creates a new attempt at 14.0 s, Ready
// again at 14.6 s.
func readyThenCrash(t *testing.T) *scenario {
	sc := readyApp(t, "crash-after", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.ticks(2, 4)
	sc.exit(4.0, idMain, 700, 3)
	sc.notReady(corev1.ContainersReady, 4.6)
	sc.notReady(corev1.PodReady, 4.6)
	sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=x"), idMain, 3, 1))
	sc.update(4.6)
	sc.ticks(5, 13)
	sc.call(14.0, 14.05, event.CRICreateContainer, func(c *event.CRICall) { c.PodUID, c.ContainerName, c.ContainerID = sc.uid, "app", idMain2 })
	sc.call(14.06, 14.1, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = idMain2 })
	sc.exec(14.11, idMain2, 800, shimPID, "app")
	sc.status(false, func() corev1.ContainerStatus {
		cs := running("app", idMain2, 14, true, true)
		cs.RestartCount = 1
		return cs
	}())
	sc.cond(corev1.ContainersReady, 14.6)
	sc.cond(corev1.PodReady, 14.6)
	sc.update(14.6)
	sc.ticks(15, 20)
	return sc
}

// readyApp is startedApp with the kubelet's CreateContainer and
// StartContainer calls, Ready at 1.5 s.
func readyApp(t *testing.T, name string, spec corev1.PodSpec) *scenario {
	sc := startedApp(t, name, spec)
	sc.call(0.9, 0.95, event.CRICreateContainer, func(c *event.CRICall) { c.PodUID, c.ContainerName, c.ContainerID = sc.uid, "app", idMain })
	sc.call(0.96, 1.0, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 1.5)
	sc.cond(corev1.PodReady, 1.5)
	sc.update(1.5)
	return sc
}

func TestAfterReadyCrashAndRecovery(t *testing.T) {
	sc := readyThenCrash(t)
	c := New(Config{})
	var tls []*Timeline
	var recs []Recovery
	var mid *After
	for _, ev := range sc.events {
		tls = append(tls, c.Handle(ev)...)
		recs = append(recs, c.TakeRecoveries()...)
		if ev.When().Equal(at(10)) {
			mid, _ = c.After(sc.uid)
		}
	}
	if len(tls) != 1 || tls[0].Outcome != OutcomeReady {
		t.Fatalf("timelines %+v, want the one start, Ready", tls)
	}
	if !tls[0].End.Equal(at(1.5)) {
		t.Errorf("the start ended at %v, want Ready at +1.5s: it is not stretched by what came after", tls[0].End.Sub(t0))
	}
	if mid == nil {
		t.Fatal("no After while the pod was crash-looping")
	}
	want := "then: app exited 3 at +4.0s; app restarted once, CrashLoopBackOff; not Ready since +4.6s"
	if got := mid.Summary(t0); got != want {
		t.Errorf("after at +10s:\n got %s\nwant %s", got, want)
	}
	if len(recs) != 1 {
		t.Fatalf("%d recoveries, want 1", len(recs))
	}
	r := recs[0]
	if !r.Start.Equal(at(4.0)) || !r.End.Equal(at(14.6)) || r.Cause != "app exited 3" {
		t.Errorf("recovery %v -> %v cause %q, want the exit at +4.0s to Ready at +14.6s", r.Start.Sub(t0), r.End.Sub(t0), r.Cause)
	}
	var sum time.Duration
	kinds := map[ShareKind]time.Duration{}
	for _, s := range r.Breakdown {
		sum += s.Duration
		kinds[s.Kind] = s.Duration
	}
	if sum != r.Duration() {
		t.Errorf("recovery breakdown sums to %v, want %v: %+v", sum, r.Duration(), r.Breakdown)
	}
	approx(t, "back-off", kinds[ShareBackOff], 10*time.Second)
	approx(t, "calls", kinds[ShareCalls], 110*time.Millisecond)
	if af, ok := c.After(sc.uid); !ok || !af.Ready || len(af.Recoveries) != 1 || !strings.Contains(af.Summary(t0), "Ready again once, the last after 10.6s") {
		t.Errorf("after at the end: %+v, %q", af, af.Summary(t0))
	}
}

// TestAfterReadyFailed: a pod whose container exits 7 a second after it
// was Ready, restartPolicy Never: the start stays Ready, what came after
// says the phase.
func TestAfterReadyFailed(t *testing.T) {
	sc := startedApp(t, "fail-after", corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app"}}})
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 1.5)
	sc.cond(corev1.PodReady, 1.5)
	sc.update(1.5)
	sc.ticks(2, 3)
	sc.exit(3.0, idMain, 700, 7)
	sc.notReady(corev1.PodReady, 3.5)
	sc.status(false, terminated("app", idMain, 7, 0))
	sc.pod.Status.Phase = corev1.PodFailed
	sc.update(3.5)
	sc.ticks(4, 6)
	c := New(Config{})
	tls := feed(c, sc.events, time.Second)
	if len(tls) != 1 || tls[0].Outcome != OutcomeReady {
		t.Fatalf("%+v", tls)
	}
	af, ok := c.After(sc.uid)
	if !ok {
		t.Fatal("no After")
	}
	if got, want := af.Summary(t0), "then: app exited 7 at +3.0s; phase Failed"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

// TestAfterReadyBounds: the README's "bounded memory (32 events, 8 returns
// to Ready, 64 CRI calls a pod)". Of 40 things that happened the first 8
// and the latest 24 are kept, 8 counted as left out; of 10 returns to
// Ready the latest 8; of 70 CRI calls the latest 64.
func TestAfterReadyBounds(t *testing.T) {
	a := &afterState{}
	for i := range 40 {
		a.note(at(float64(i)), "app", fmt.Sprintf("exited %d", i))
	}
	for i := range 10 {
		a.take(Recovery{Start: at(float64(i)), End: at(float64(i) + 0.5)})
	}
	for i := range 70 {
		a.record(&event.CRICall{Method: event.CRIExecSync, Time: at(float64(i))})
	}
	if len(a.events) != 32 || a.omitted != 8 {
		t.Errorf("kept %d of 40 events, %d omitted: want 32 and 8", len(a.events), a.omitted)
	} else if a.events[7].What != "exited 7" || a.events[8].What != "exited 16" || a.events[31].What != "exited 39" {
		t.Errorf("kept %q, %q ... %q: want the first 8 and the latest 24", a.events[7].What, a.events[8].What, a.events[31].What)
	}
	if len(a.recs) != 8 || a.recsOmit != 2 || !a.recs[0].Start.Equal(at(2)) {
		t.Errorf("kept %d of 10 recoveries (%d omitted), the first from %v: want the latest 8", len(a.recs), a.recsOmit, a.recs[0].Start.Sub(t0))
	}
	if len(a.calls) != 64 || !a.calls[0].Time.Equal(at(6)) {
		t.Errorf("kept %d of 70 CRI calls, the first from %v: want the latest 64", len(a.calls), a.calls[0].Time.Sub(t0))
	}
}

// livenessKillAfterReady is readyThenCrash with a liveness probe (exec,
// failureThreshold 2) that starts failing at 6 s: the kubelet stops the
// container (StopContainer 7.5 s) and the app, which traps SIGTERM, exits
// 0 within the call; the API shows it not Ready at 7.9 s; the new attempt
// is Ready at 12.6 s. The kubelet's Killing Event says why.
func livenessKillAfterReady(t *testing.T, killingEvent bool) *scenario {
	probe := execProbe(0, 1, "alive")
	probe.FailureThreshold = 2
	sc := readyApp(t, "liveness-after", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", LivenessProbe: probe}}})
	sc.ticks(2, 5)
	for i, s := range []float64{6, 7} {
		pid := uint32(750 + i)
		sc.call(s-0.01, s+0.05, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = idMain, []string{"alive"}, true })
		sc.exec(s, idMain, pid, shimPID, "alive")
		sc.exit(s+0.02, idMain, pid, 1)
	}
	sc.exit(7.8, idMain, 700, 0) // the app's own exit on SIGTERM
	sc.call(7.5, 7.85, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.notReady(corev1.ContainersReady, 7.9)
	sc.notReady(corev1.PodReady, 7.9)
	sc.status(false, lastExit(waiting("app", "ContainerCreating", ""), idMain, 0, 1))
	sc.update(7.9)
	if killingEvent {
		sc.events = append(sc.events, &event.PodEvents{Time: at(9), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name,
			Events: []event.PodEvent{{Type: "Normal", Reason: reasonKilling, Message: "Container app failed liveness probe, will be restarted",
				FieldPath: "spec.containers{app}", Count: 1, First: at(7).Truncate(time.Second), Last: at(7).Truncate(time.Second)}}})
	}
	sc.ticks(8, 11)
	sc.call(12.0, 12.05, event.CRICreateContainer, func(c *event.CRICall) { c.PodUID, c.ContainerName, c.ContainerID = sc.uid, "app", idMain2 })
	sc.call(12.06, 12.1, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = idMain2 })
	sc.exec(12.11, idMain2, 800, shimPID, "app")
	sc.status(false, func() corev1.ContainerStatus {
		cs := running("app", idMain2, 12, true, true)
		cs.RestartCount = 1
		return cs
	}())
	sc.cond(corev1.ContainersReady, 12.6)
	sc.cond(corev1.PodReady, 12.6)
	sc.update(12.6)
	sc.ticks(13, 18)
	return sc
}

// TestAfterReadyLivenessKill: after Ready, a kill is told by the kubelet's
// action (its StopContainer, and its Killing Event for why), not by the
// exit 0 of an app that traps SIGTERM: on the after-the-start list, in its
// summary and in the Recovery's cause.
func TestAfterReadyLivenessKill(t *testing.T) {
	for _, withEvent := range []bool{true, false} {
		sc := livenessKillAfterReady(t, withEvent)
		c := New(Config{})
		var recs []Recovery
		for _, ev := range sc.events {
			c.Handle(ev)
			recs = append(recs, c.TakeRecoveries()...)
		}
		words, kind := "killed by its livenessProbe (2 failures)", CauseLivenessProbe
		if !withEvent {
			words, kind = "killed by the kubelet", CauseKilled
		}
		if len(recs) != 1 || recs[0].Cause != "app "+words+", restarted" || recs[0].CauseKind != kind || !recs[0].Start.Equal(at(7.8)) {
			t.Fatalf("with the Event %v: recoveries %+v, want one caused by %q from the exit at +7.8s", withEvent, recs, "app "+words+", restarted")
		}
		af, ok := c.After(sc.uid)
		if !ok {
			t.Fatal("no After")
		}
		if got := af.Summary(t0); !strings.HasPrefix(got, "then: app "+words+" at +7.8s; app restarted once; Ready again once") {
			t.Errorf("with the Event %v: summary %q", withEvent, got)
		}
		for _, e := range af.Events {
			if strings.Contains(e.What, "exited 0") {
				t.Errorf("with the Event %v: the kill is listed as %q", withEvent, e.What)
			}
		}
	}
}

// TestBusyWhileStartingOrRecovering: the correlator wants facts promptly
// while the start is open and while a return to Ready waits for them, not
// while the pod crash-loops between.
func TestBusyWhileStartingOrRecovering(t *testing.T) {
	sc := readyThenCrash(t)
	c := New(Config{})
	busy := map[float64]bool{}
	for _, ev := range sc.events {
		c.Handle(ev)
		if _, ok := ev.(*event.Tick); ok {
			busy[ev.When().Sub(t0).Seconds()] = c.Busy()
		}
	}
	// Ready at 1.5 s, its timeline built within the grace after; not Ready
	// from 4.6 s to 14.6 s, its Recovery built within the grace after.
	for at, want := range map[float64]bool{2: true, 3: false, 4: false, 5: false, 13: false, 15: true, 16: false, 20: false} {
		got, ok := busy[at]
		if !ok {
			t.Fatalf("no tick at +%vs: %v", at, busy)
		}
		if got != want {
			t.Errorf("Busy at +%vs: %v, want %v", at, got, want)
		}
	}
	if New(Config{}).Busy() {
		t.Error("a correlator with no pod is busy")
	}
}

// TestBusyNotPastTimeout: a start past its Timeout, still not Ready, can
// have its facts a second late; its Ready wants them at once.
func TestBusyNotPastTimeout(t *testing.T) {
	sc := startedApp(t, "stuck", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.ticks(1, 12)
	c := New(Config{Timeout: 10 * time.Second})
	for _, ev := range sc.events {
		c.Handle(ev)
		if ev.When().Equal(at(9)) && !c.Busy() {
			t.Error("a start within its timeout is not busy")
		}
	}
	if c.Busy() {
		t.Error("a start past its timeout is busy")
	}
	sc.events = nil
	sc.status(false, running("app", idMain, 12.5, true, true))
	sc.cond(corev1.ContainersReady, 12.5)
	sc.cond(corev1.PodReady, 12.5)
	sc.update(12.5)
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	if !c.Busy() {
		t.Error("a start Ready past its timeout, its timeline not built, is not busy")
	}
}

// TestRecoveryWaitsForItsFacts: a return to Ready is built once the
// kernel sources have read past the update that told it: the new attempt's
// exec, read after the update, is in its Recovery as if read before.
func TestRecoveryWaitsForItsFacts(t *testing.T) {
	sc := readyThenCrash(t)
	isExec := func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExec)
		return ok && e.Process.ContainerID == idMain2
	}
	// recovery handles events and returns the Recovery, checking that it
	// was built at the drained mark of +14.7s and busy until then.
	recovery := func(events []event.Event) Recovery {
		t.Helper()
		c := New(Config{})
		c.Handle(&event.SourceStatus{Time: t0.Add(-time.Minute), Source: event.SourceProcess, Up: true})
		var recs []Recovery
		for _, ev := range events {
			c.Handle(ev)
			got := c.TakeRecoveries()
			if len(got) > 0 && !ev.When().Equal(at(14.7)) {
				t.Fatalf("the Recovery was built at +%vs, want at the drained mark of +14.7s", ev.When().Sub(t0).Seconds())
			}
			recs = append(recs, got...)
			if _, ok := ev.(*event.PodUpdate); ok && ev.When().Equal(at(14.6)) && !c.Busy() {
				t.Error("a return to Ready waiting for its facts is not busy")
			}
		}
		if len(recs) != 1 {
			t.Fatalf("recoveries %+v, want one", recs)
		}
		if c.Busy() {
			t.Error("busy once the Recovery is built")
		}
		if af, _ := c.After(sc.uid); !af.NotReadySince.IsZero() || !strings.Contains(af.Summary(t0), "Ready again once") {
			t.Errorf("after: not Ready since %v, %q", af.NotReadySince, af.Summary(t0))
		}
		return recs[0]
	}
	var exec event.Event
	var inOrder, late, without []event.Event
	drained := &event.Drained{Time: at(14.7), Source: event.SourceProcess}
	for _, ev := range sc.events {
		if isExec(ev) {
			exec = ev
		} else {
			without = append(without, ev)
		}
		inOrder = append(inOrder, ev)
		if u, ok := ev.(*event.PodUpdate); ok && u.Time.Equal(at(14.6)) {
			inOrder = append(inOrder, drained)
			without = append(without, drained)
		}
	}
	for _, ev := range without {
		late = append(late, ev)
		if ev == drained {
			late = slices.Insert(late, len(late)-1, exec) // after the update, before the mark
		}
	}
	want := recovery(inOrder)
	if got := recovery(late); !reflect.DeepEqual(got, want) {
		t.Errorf("with the exec read after the update: %+v\nwant as read before: %+v", got, want)
	}
	if reflect.DeepEqual(recovery(without), want) {
		t.Error("the Recovery is the same without the new attempt's exec: this test shows nothing")
	}
}

// TestRecoveryLostAgainWaitsFromItsOwnUpdate: Ready back at +14.6s, lost
// again at +14.65s before that return was built (so it is built then),
// back at +15.0s. The second return waits for the facts up to its own
// update: a drained mark past +14.6s but not +15.0s builds nothing.
func TestRecoveryLostAgainWaitsFromItsOwnUpdate(t *testing.T) {
	sc := readyThenCrash(t)
	sc.events = slices.DeleteFunc(sc.events, func(ev event.Event) bool {
		_, tick := ev.(*event.Tick)
		return tick && ev.When().After(at(14.6))
	})
	sc.exit(14.65, idMain2, 800, 4)
	sc.notReady(corev1.ContainersReady, 14.65)
	sc.notReady(corev1.PodReady, 14.65)
	sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", "back-off 20s restarting failed container=app pod=x"), idMain2, 4, 2))
	sc.update(14.65)
	lostAgain := len(sc.events) - 1
	sc.cond(corev1.ContainersReady, 15.0)
	sc.cond(corev1.PodReady, 15.0)
	sc.status(false, func() corev1.ContainerStatus {
		cs := running("app", idMain2, 14, true, true)
		cs.RestartCount = 2
		return cs
	}())
	sc.update(15.0)
	backAgain := len(sc.events) - 1
	early := &event.Drained{Time: at(14.8), Source: event.SourceProcess} // past the first return only
	late := &event.Drained{Time: at(15.1), Source: event.SourceProcess}
	sc.events = append(sc.events, early, late)

	c := New(Config{})
	c.Handle(&event.SourceStatus{Time: t0.Add(-time.Minute), Source: event.SourceProcess, Up: true})
	built := map[int]int{} // event index -> recoveries built on it
	for i, ev := range sc.events {
		c.Handle(ev)
		if n := len(c.TakeRecoveries()); n > 0 {
			built[i] = n
		}
		if (i == backAgain || ev == early) && !c.Busy() {
			t.Errorf("not busy at +%vs with a return to Ready waiting for its facts", ev.When().Sub(t0).Seconds())
		}
	}
	if want := map[int]int{lostAgain: 1, len(sc.events) - 1: 1}; !reflect.DeepEqual(built, want) {
		t.Errorf("recoveries built on events %v, want one on Ready lost again (#%d) and one on the drained mark past +15.0s (#%d)",
			built, lostAgain, len(sc.events)-1)
	}
	if c.Busy() {
		t.Error("busy once both returns are built")
	}
}
