package correlator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// feed runs events through a correlator, ticking every second until the
// last event plus tail, and returns every timeline it produced.
func feed(c *Correlator, events []event.Event, tail time.Duration) []*Timeline {
	var got []*Timeline
	for _, ev := range events {
		got = append(got, c.Handle(ev)...)
	}
	last := events[len(events)-1].When()
	for d := time.Second; d <= tail; d += time.Second {
		got = append(got, c.Handle(&event.Tick{Time: last.Add(d)})...)
	}
	return got
}

// notReady sets a condition False (a readiness probe that started failing).
func (sc *scenario) notReady(typ corev1.PodConditionType, s float64) {
	for i := range sc.pod.Status.Conditions {
		if sc.pod.Status.Conditions[i].Type == typ {
			sc.pod.Status.Conditions[i].Status = corev1.ConditionFalse
			sc.pod.Status.Conditions[i].LastTransitionTime.Time = at(s).Truncate(time.Second)
		}
	}
}

// readyPod is a one-container pod Ready at 1.8 s with an exec readiness probe.
func readyPod(t *testing.T, name string) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		ReadinessProbe: execProbe(0, 10, "check")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.exec(1.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.cond(corev1.PodReadyToStartContainers, 0.5)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 1.8)
	sc.cond(corev1.PodReady, 1.8)
	sc.update(1.8)
	return sc
}

// execProbeCall is an ExecSync call the kubelet's prober makes to a
// container: it names the container id only.
func (sc *scenario) execProbeCall(s float64, id string) {
	sc.call(s, s+0.02, "/runtime.v1.RuntimeService/ExecSync", func(c *event.CRICall) { c.ContainerID = id })
}

// TestReadinessFlapAfterReadyIsNoSecondStart: a pod Ready in 1.8 s whose
// readiness fails two minutes later, probed every 10 s for 15 minutes with
// a 40 s start timeout, has one start (ready in 1.8 s), and its probes are
// events after the start, not drops. Before, the pod was forgotten after
// Timeout + OrphanTTL and its NotReady update opened a "timeout 2m41s".
func TestReadinessFlapAfterReadyIsNoSecondStart(t *testing.T) {
	sc := readyPod(t, "flap")
	for s := 10.0; s < 900; s += 10 {
		sc.execProbeCall(s, idMain)
		if s == 120 {
			sc.notReady(corev1.ContainersReady, s)
			sc.notReady(corev1.PodReady, s)
			sc.status(false, running("app", idMain, 1, true, false))
			sc.update(s + 0.1)
		}
	}
	c := New(Config{Timeout: 40 * time.Second, OrphanTTL: 30 * time.Second})
	got := feed(c, sc.events, 2*time.Minute)
	if len(got) != 1 {
		for _, tl := range got {
			t.Logf("timeline: %s %s in %v", tl.Pod, tl.Outcome, tl.End.Sub(tl.Start))
		}
		t.Fatalf("%d timelines for one pod incarnation, want 1", len(got))
	}
	if tl := got[0]; tl.Outcome != OutcomeReady || !tl.End.Equal(at(1.8)) {
		t.Errorf("the start: %s at %v, want ready at 1.8 s", tl.Outcome, tl.End.Sub(t0))
	}
	st := c.Stats()
	if st.Orphaned != 0 {
		t.Errorf("%d events counted as orphans (unknown pod); the pod is alive and known", st.Orphaned)
	}
	if st.AfterStart < 80 {
		t.Errorf("%d events after the start, want the ~89 probe calls", st.AfterStart)
	}
}

// TestCrashLoopIsOneStart: a container that crash-loops for five minutes
// with a 40 s start timeout has one start, however many NotReady updates
// its restarts bring (before: "ready 2.2s" became "ready 3m17s", and the
// retry example's "timeout 40.4s" a "timeout 3m20s").
func TestCrashLoopIsOneStart(t *testing.T) {
	sc := newScenario(t, "crashloop", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	ids := []string{idMain, idMain2, idInit, idSidecar}
	s := 1.0
	for i := 0; s < 300; i++ {
		id := ids[i%len(ids)]
		sc.runtime(s, id, "app", uint32(i), s-0.05, s, s+0.5, 3)
		sc.exec(s+0.01, id, uint32(2000+i), shimPID, "false")
		sc.exit(s+0.5, id, uint32(2000+i), 3)
		sc.status(false, terminated("app", id, 3, int32(i)))
		sc.update(s + 0.6)
		s += 10 * float64(min(i+1, 4)) // the kubelet's back-off, capped here at 40 s
	}
	c := New(Config{Timeout: 40 * time.Second})
	got := feed(c, sc.events, 2*time.Minute)
	if len(got) != 1 {
		for _, tl := range got {
			t.Logf("timeline: %s %s in %v", tl.Pod, tl.Outcome, tl.End.Sub(tl.Start))
		}
		t.Fatalf("%d timelines for one crash-looping pod, want 1", len(got))
	}
	if st := c.Stats(); st.Orphaned != 0 {
		t.Errorf("%d events counted as orphans", st.Orphaned)
	}
}

// TestDeletedPodsLateEventsAreNotDrops: the exits of a deleted pod's
// processes come after the deletion; they are recognised for OrphanTTL,
// then the pod is forgotten.
func TestDeletedPodsLateEventsAreNotDrops(t *testing.T) {
	sc := readyPod(t, "deleted")
	sc.delete(60)
	sc.exit(61, idMain, 1100, 137)
	c := New(Config{OrphanTTL: 10 * time.Second})
	if got := feed(c, sc.events, 30*time.Second); len(got) != 1 {
		t.Fatalf("%d timelines, want 1", len(got))
	}
	st := c.Stats()
	if st.Orphaned != 0 || st.AfterStart == 0 {
		t.Errorf("late exit of a deleted pod: orphaned %d, after start %d; want 0 and > 0", st.Orphaned, st.AfterStart)
	}
	if _, ended := c.ended[sc.uid]; ended {
		t.Error("the deleted pod is still remembered OrphanTTL after its deletion")
	}
	// Its teardown can come later still on a busy node (bench-node: the
	// runtime's "exited" 30-37 s after the deletion, 454 "unknown_pod"
	// drops in 300 starts): for goneTTL it is no loss either.
	before := c.Stats().AfterStart
	last := sc.events[len(sc.events)-1].When().Add(30 * time.Second)
	c.Handle(&event.ContainerInfo{Time: last.Add(5 * time.Second), ContainerID: idMain, PodUID: sc.uid, State: "exited"})
	if st := c.Stats(); st.Orphaned != 0 || st.AfterStart != before+1 {
		t.Errorf("the runtime's word on a container 35 s after its pod was forgotten: orphaned %d, after start +%d; want 0 and +1",
			st.Orphaned, st.AfterStart-before)
	}
	// The kubelet's garbage collector, far behind on a busy node, stops
	// and removes the sandbox by id a quarter of an hour later.
	before = c.Stats().AfterStart
	gc := last.Add(15 * time.Minute)
	for i, method := range []string{"StopPodSandbox", "RemovePodSandbox"} {
		at := gc.Add(time.Duration(i) * 3 * time.Second)
		c.Handle(&event.CRICall{Time: at, End: at.Add(2 * time.Second), Method: event.CRIMethod("runtime.v1.RuntimeService/" + method), PodSandboxID: sandboxID})
	}
	feed(c, []event.Event{&event.Tick{Time: gc.Add(time.Minute)}}, 5*time.Second)
	if st := c.Stats(); st.Orphaned != 0 || st.AfterStart != before+2 {
		t.Errorf("the kubelet's garbage collector tearing down the sandbox 15 minutes after the deletion: orphaned %d, after start +%d; want 0 and +2",
			st.Orphaned, st.AfterStart-before)
	}
	feed(c, []event.Event{&event.Tick{Time: last.Add(goneTTL + time.Minute)}}, 5*time.Second)
	if c.knows(sc.uid) {
		t.Error("the deleted pod is still known goneTTL after it was forgotten")
	}
}

// TestUnknownTeardownIsNotADrop: a daemon started on a busy node sees the
// kubelet's garbage collector tear down pods deleted before it watched
// (bench-node: 747 such calls in the churn that followed the steady run);
// their ids were never known, and that is no loss. A process of a pod
// that never shows up still is.
func TestUnknownTeardownIsNotADrop(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c := New(Config{OrphanTTL: 10 * time.Second})
	var events []event.Event
	for i, m := range []event.CRIMethod{event.CRIStopContainer, event.CRIRemoveContainer, event.CRIStopPodSandbox, event.CRIRemovePodSandbox} {
		at := t0.Add(time.Duration(i) * time.Second)
		call := &event.CRICall{Time: at, End: at.Add(500 * time.Millisecond), Method: m}
		if strings.HasSuffix(string(m), "PodSandbox") {
			call.PodSandboxID = sandboxID
		} else {
			call.ContainerID = idMain
		}
		events = append(events, call)
	}
	events = append(events, &event.ProcessExec{Time: t0.Add(5 * time.Second), Filename: "/bin/app",
		Process: event.Process{PID: 4242, PodUID: "never-seen", ContainerID: idMain2, Scope: event.ScopePod}})
	feed(c, events, time.Minute)
	if st := c.Stats(); st.UnknownTeardown != 4 || st.Orphaned != 1 {
		t.Errorf("four teardown calls of unknown ids and one process of an unknown pod: teardown %d, orphaned %d; want 4 and 1",
			st.UnknownTeardown, st.Orphaned)
	}
}

// TestEndedPodsAreBounded: past MaxPods ended pods remembered, the oldest is
// forgotten and counted.
func TestEndedPodsAreBounded(t *testing.T) {
	c := New(Config{MaxPods: 2})
	var uids []string
	for i, name := range []string{"a", "b", "c"} {
		sc := readyPod(t, name)
		uids = append(uids, sc.uid)
		for _, ev := range sc.events {
			c.Handle(ev)
		}
		c.Handle(&event.Tick{Time: at(10 * float64(i+1))})
	}
	if st := c.Stats(); st.Forgotten != 1 || st.Timelines != 3 {
		t.Errorf("forgotten %d, timelines %d; want 1 and 3", st.Forgotten, st.Timelines)
	}
	if c.knows(uids[0]) || !c.knows(uids[1]) || !c.knows(uids[2]) {
		t.Errorf("remembered a=%v b=%v c=%v, want the oldest forgotten", c.knows(uids[0]), c.knows(uids[1]), c.knows(uids[2]))
	}
}

// TestReadyAfterTheDeadlineCompletesTheStart: the start timeout is a
// reporting deadline, not an outcome. A pod still starting at it is reported
// (partial, timeout) and stays tracked; its Ready, when it comes, completes
// the same start (before, it was "timeout" for good: 45 of 60 pods scaled at
// once on the local node, all Ready within 63 s).
func TestReadyAfterTheDeadlineCompletesTheStart(t *testing.T) {
	sc := newScenario(t, "slow", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.events = append(sc.events, &event.Tick{Time: at(40.5)}) // the daemon ticks every second
	sc.runtime(50, idMain, "app", 0, 49.9, 50, 0, 0)
	sc.exec(50.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.status(false, running("app", idMain, 50, true, true))
	sc.cond(corev1.PodReadyToStartContainers, 0.5)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.cond(corev1.ContainersReady, 63)
	sc.cond(corev1.PodReady, 63)
	sc.update(63)
	c := New(Config{Timeout: 40 * time.Second})
	got := feed(c, sc.events, 10*time.Second)
	if len(got) != 2 {
		t.Fatalf("%d timelines, want the report at the deadline and the completion", len(got))
	}
	report, done := got[0], got[1]
	if report.Outcome != OutcomeTimeout || !report.Partial || report.End.Sub(t0) < 40*time.Second || report.End.Sub(t0) > 41*time.Second {
		t.Errorf("report: %s partial=%v at +%v, want a partial timeout at +40s", report.Outcome, report.Partial, report.End.Sub(t0))
	}
	if done.Outcome != OutcomeReady || done.Partial || !done.End.Equal(at(63)) || !done.ReportedAt.Equal(report.End) {
		t.Errorf("completion: %s partial=%v at +%v reported_at %v, want ready at +63s, reported at the deadline", done.Outcome, done.Partial, done.End.Sub(t0), done.ReportedAt)
	}
	if len(findContainer(t, done, "app").Attempts) != 1 {
		t.Errorf("the completion lost the container")
	}
	if st := c.Stats(); st.Tracked != 0 || st.Timelines != 1 {
		t.Errorf("tracked %d, completed %d; want 0 and 1", st.Tracked, st.Timelines)
	}
}
