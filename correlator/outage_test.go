package correlator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// watchStatus emits the pod watch's status at s.
func (sc *scenario) watchStatus(s float64, up bool) {
	st := &event.SourceStatus{Time: at(s), Source: event.SourcePodWatch, Up: up}
	if !up {
		st.Reason = "disconnected"
	}
	sc.events = append(sc.events, st)
}

// quickStart is the node's side of a one-container pod that is Ready 1.2 s
// after its creation: the sandbox call (with its CNI plugin and pause), the
// container's CRI calls, its process and the runtime's word, with the
// kubelet's status for them set on sc.pod (not emitted: the caller decides
// when the watch delivers it). The API's lastTransitionTimes are truncated
// to the second: PodReadyToStartContainers 0 s, ContainersReady and Ready
// 1 s.
func quickStart(t *testing.T, name string) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}})
	sc.sandboxCall(0.2, 0.6, sandboxID, 0, 100)
	sc.call(0.7, 0.8, event.CRICreateContainer, func(c *event.CRICall) {
		c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = sc.uid, sandboxID, "app", idMain
	})
	sc.call(0.81, 0.9, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.exec(0.88, idMain, 400, shimPID, "app")
	sc.runIn(0.95, sandboxID, idMain, "app", 0, 0.8, 0.9, 0, 0, "")
	sc.startTime(0.1)
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.cond(corev1.PodInitialized, 0.1)
	sc.status(false, running("app", idMain, 0.9, true, true))
	sc.cond(corev1.ContainersReady, 1.2)
	sc.cond(corev1.PodReady, 1.2)
	sc.pod.Status.Phase = corev1.PodRunning
	return sc
}

// checkAPILag checks the conditions of a start whose kubelet conditions
// the watch delivered at delivered: each at its lastTransitionTime (or its
// cause within that second), Coarse, with no lag and no lag insight, the
// timeline marked.
func checkAPILag(t *testing.T, tl *Timeline, delivered time.Time) {
	t.Helper()
	if len(tl.Marks) != 1 || tl.Marks[0] != MarkAPILag {
		t.Errorf("marks %v, want api_lag", tl.Marks)
	}
	if !strings.Contains(strings.Join(tl.Missing, "; "), "lastTransitionTime") {
		t.Errorf("missing %q: want what the late delivery leaves out", tl.Missing)
	}
	for _, c := range tl.Conditions {
		if c.Type == CondPodScheduled || c.ReadinessGate {
			continue
		}
		if !c.Coarse || !c.Delivered.Equal(delivered) || c.Lag() != 0 {
			t.Errorf("%s: coarse %v delivered %v lag %v: want coarse, delivered at %v, no lag", c.Type, c.Coarse, c.Delivered, c.Lag(), delivered.Sub(t0))
		}
		if c.Observed.Before(c.LastTransitionTime) || !c.Observed.Before(c.LastTransitionTime.Add(time.Second)) {
			t.Errorf("%s observed %v: want inside its lastTransitionTime's second %v", c.Type, c.Observed.Sub(t0), c.LastTransitionTime.Sub(t0))
		}
	}
	for _, in := range tl.Insights {
		if in.Kind == InsightStatusLag {
			t.Errorf("status lag insight %q from a late delivery", in.Message)
		}
	}
	noNegativeLag(t, tl)
}

// TestOutagePodStartsInside: the pod watch is down from -5 s to 55 s; a pod
// created at 0 s starts and is Ready at 1.2 s, seen in the API only at the
// relist, already Ready. Its node facts waited (longer than OrphanTTL) and
// make its timeline: the sandbox call with CNI and pause, the container's
// calls and process, the conditions at their lastTransitionTime, a start
// 1 s long (not 55 s), marked api_lag and not taken for a late daemon.
func TestOutagePodStartsInside(t *testing.T) {
	for _, upFirst := range []bool{true, false} {
		name := "relisted-after-up"
		if !upFirst {
			name = "relisted-before-up"
		}
		t.Run(name, func(t *testing.T) {
			sc := quickStart(t, "inside")
			sc.events = append([]event.Event{&event.SourceStatus{Time: at(-5), Source: event.SourcePodWatch, Reason: "disconnected"}}, sc.events...)
			sc.ticks(1, 55)
			if upFirst {
				sc.watchStatus(55.2, true)
			}
			sc.update(55.3)
			if !upFirst {
				sc.watchStatus(55.4, true)
			}
			tl := sc.run(Config{})
			if tl.Outcome != OutcomeReady || !tl.Start.Equal(t0) || !tl.End.Equal(at(1)) {
				t.Errorf("outcome %s %v..%v: want ready t0..1s (Ready's lastTransitionTime)", tl.Outcome, tl.Start.Sub(t0), tl.End.Sub(t0))
			}
			if !tl.ObservedSince.IsZero() {
				t.Errorf("observed since %v: the node saw the start from the sandbox on", tl.ObservedSince.Sub(t0))
			}
			if sb := tl.Sandbox; sb == nil || sb.Call == nil || len(sb.CNI) != 1 || sb.PauseStart.IsZero() {
				t.Errorf("sandbox %+v: want the call, its CNI plugin and the pause process", tl.Sandbox)
			}
			a := findContainer(t, tl, "app").Attempts
			if len(a) != 1 || a[0].Process == nil || len(a[0].Calls) != 2 {
				t.Fatalf("app attempts %+v: want its process and its two calls", a)
			}
			checkAPILag(t, tl, at(55.3))
			if c := findCondition(t, tl, CondPodReadyToStartContainers); !c.Observed.Equal(at(0.6)) {
				t.Errorf("PodReadyToStartContainers at %v, want its cause (RunPodSandbox returned 0.6s) in its second", c.Observed.Sub(t0))
			}
			if c := findCondition(t, tl, CondPodScheduled); !c.Coarse || !c.Delivered.IsZero() {
				t.Errorf("PodScheduled %+v: coarse at first sight, the API server's clock: not judged", c)
			}
			if p, ok := phaseOf(tl, PhaseWaitSandbox); !ok || !p.Start.Equal(t0) || p.Source != "api-coarse" {
				t.Errorf("wait_sandbox %+v, %v: want from status.startTime (0 s)", p, ok)
			}
			for _, p := range tl.Phases {
				if p.Duration() > 2*time.Second {
					t.Errorf("phase %s lasts %v", p.Name, p.Duration())
				}
			}
		})
	}
}

// TestOutageReadyDeliveredLate: the pod is seen at its creation, then the
// watch is down from 0.5 s to 60.5 s while the pod starts: the rest of its
// status comes 60 s late. The start is 1 s long, each condition at its
// lastTransitionTime, with no lag.
func TestOutageReadyDeliveredLate(t *testing.T) {
	sc := quickStart(t, "late-ready")
	pod := sc.pod.DeepCopy()
	sc.pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.pod = pod
	sc.watchStatus(0.5, false)
	sc.ticks(1, 60)
	sc.watchStatus(60.5, true)
	sc.update(60.6)
	tl := sc.run(Config{})
	if tl.Outcome != OutcomeReady || !tl.End.Equal(at(1)) {
		t.Errorf("outcome %s %v..%v: want ready at 1s, not 60.6s", tl.Outcome, tl.Start.Sub(t0), tl.End.Sub(t0))
	}
	checkAPILag(t, tl, at(60.6))
	if c := findCondition(t, tl, CondPodScheduled); c.Coarse || !c.Observed.Equal(at(0.05)) {
		t.Errorf("PodScheduled %+v: observed in time", c)
	}
	if c := findCondition(t, tl, CondContainersReady); c.Cause.IsZero() {
		t.Errorf("ContainersReady %+v: want its cause (app's exec), found before the end of its second", c)
	}
	if p, ok := phaseOf(tl, PhaseContainers); !ok || p.End.After(at(1)) {
		t.Errorf("pod.containers %+v: want it to end at ContainersReady's cause", p)
	}
}

// TestWatchInTimeNoLag: the same start with the watch delivering each
// status at once: no mark, no coarse condition (the normal case, which the
// goldens also hold).
func TestWatchInTimeNoLag(t *testing.T) {
	sc := quickStart(t, "in-time")
	pod := sc.pod.DeepCopy()
	sc.pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.pod = pod
	sc.update(1.3)
	tl := sc.run(Config{})
	if len(tl.Marks) != 0 || !tl.End.Equal(at(1.3)) {
		t.Errorf("marks %v end %v: want none, Ready observed at 1.3s", tl.Marks, tl.End.Sub(t0))
	}
	for _, c := range tl.Conditions {
		if c.Coarse || !c.Delivered.IsZero() {
			t.Errorf("%s %+v: delivered in time", c.Type, c)
		}
	}
}

// TestFirstSeenReadyWithoutOutage: with no outage of the watch, a pod first
// seen Ready started before readyline saw it (a restarted daemon), even
// with node facts: not traced, as before.
func TestFirstSeenReadyWithoutOutage(t *testing.T) {
	sc := quickStart(t, "before")
	sc.ticks(1, 20)
	sc.update(20.1)
	c := New(Config{})
	var got []*Timeline
	for _, ev := range sc.events {
		got = append(got, c.Handle(ev)...)
	}
	for s := 21.0; s < 30; s++ {
		got = append(got, c.Handle(&event.Tick{Time: at(s)})...)
	}
	if len(got) != 0 {
		t.Errorf("%d timelines for a pod first seen Ready without an outage", len(got))
	}
}

// TestOutageKeepsHeldEvents: held events outlive OrphanTTL while the watch
// is down, and are dropped OrphanTTL after it is back when their pod never
// shows up.
func TestOutageKeepsHeldEvents(t *testing.T) {
	sc := quickStart(t, "never-seen")
	sc.events = append([]event.Event{&event.SourceStatus{Time: at(-1), Source: event.SourcePodWatch, Reason: "disconnected"}}, sc.events...)
	c := New(Config{})
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	held := c.Stats().Held
	if held == 0 {
		t.Fatal("nothing held")
	}
	for s := 1.0; s <= 300; s++ {
		c.Handle(&event.Tick{Time: at(s)})
	}
	if st := c.Stats(); st.Held != held || st.Orphaned != 0 {
		t.Fatalf("after 300 s down: %+v, want the %d events still held", st, held)
	}
	c.Handle(&event.SourceStatus{Time: at(300.5), Source: event.SourcePodWatch, Up: true})
	for s := 301.0; s < 330; s++ {
		c.Handle(&event.Tick{Time: at(s)})
	}
	if st := c.Stats(); st.Held != held {
		t.Fatalf("29 s after the watch's return: %+v, want them held for OrphanTTL from it", st)
	}
	for s := 330.0; s < 332; s++ {
		c.Handle(&event.Tick{Time: at(s)})
	}
	if st := c.Stats(); st.Held != 0 || st.HeldBytes != 0 || st.Orphaned != uint64(held) {
		t.Errorf("OrphanTTL after the return: %+v, want the %d events dropped as orphans", st, held)
	}
}

// TestHeldBytesBound: held events are bounded by MaxOrphanBytes in all.
func TestHeldBytesBound(t *testing.T) {
	c := New(Config{MaxOrphanBytes: 4096})
	c.Handle(&event.SourceStatus{Time: at(0), Source: event.SourcePodWatch})
	for i := range 200 {
		p := event.Process{PID: uint32(1000 + i), ContainerID: idMain, PodUID: "00000000-0000-4000-8000-00000000beef", Scope: event.ScopePod}
		c.Handle(&event.ProcessExec{Time: at(float64(i) / 100), Process: p, Filename: "/bin/sh", Argv: []string{"sh", "-c", strings.Repeat("x", 100)}})
	}
	st := c.Stats()
	if st.HeldBytes > 4096 || st.Held == 0 || st.Overflow == 0 || uint64(st.Held)+st.Overflow != 200 {
		t.Errorf("stats %+v: want at most 4096 bytes held, the rest counted as overflow", st)
	}
}

// TestAPILagEdge: the README's "a condition the API delivered more than 2 s
// after its lastTransitionTime takes that time". PodReadyToStartContainers
// (lastTransitionTime 0 s) delivered at 1.9 s keeps its observation and
// lag; delivered at 2.1 s it takes its lastTransitionTime, coarse, and the
// start is marked api_lag.
func TestAPILagEdge(t *testing.T) {
	for _, c := range []struct {
		delivered float64
		late      bool
	}{{1.9, false}, {2.1, true}} {
		sc := quickStart(t, fmt.Sprintf("delivered-%v", c.delivered))
		pod := sc.pod.DeepCopy()
		sc.pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
		sc.cond(corev1.PodScheduled, 0)
		sc.update(0.05)
		sc.pod = pod
		sc.update(c.delivered)
		tl := sc.run(Config{})
		rtsc := findCondition(t, tl, string(corev1.PodReadyToStartContainers))
		marked := len(tl.Marks) == 1 && tl.Marks[0] == MarkAPILag
		if marked != c.late || rtsc.Coarse != c.late {
			t.Errorf("delivered %v s after its lastTransitionTime: marks %v, coarse %v; want late %v", c.delivered, tl.Marks, rtsc.Coarse, c.late)
		}
	}
}

// TestHeldBytesDefaultBound: the README's "the node's facts of pods not yet
// seen wait while the watch is down (bounded, 16 MiB)": with the default
// config, 24 MiB of exec events for a pod the API has not shown are held
// up to 16 MiB, not more and not much less.
func TestHeldBytesDefaultBound(t *testing.T) {
	c := New(Config{})
	c.Handle(&event.SourceStatus{Time: at(0), Source: event.SourcePodWatch, Reason: "disconnected"})
	arg := strings.Repeat("x", 4096)
	for i := range 6 * 1024 {
		p := event.Process{PID: uint32(1000 + i), ContainerID: idMain, PodUID: "00000000-0000-4000-8000-00000000beef", Scope: event.ScopePod}
		c.Handle(&event.ProcessExec{Time: at(float64(i) / 1000), Process: p, Filename: "/bin/sh", Argv: []string{"sh", "-c", arg}})
	}
	st := c.Stats()
	if st.HeldBytes > 16<<20 || st.HeldBytes < 15<<20 || st.Overflow == 0 {
		t.Errorf("held %d bytes (%.1f MiB), %d overflowed: want up to 16 MiB held", st.HeldBytes, float64(st.HeldBytes)/(1<<20), st.Overflow)
	}
}
