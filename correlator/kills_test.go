package correlator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// startedApp is a pod of spec whose container app (pid 700, idMain) runs
// from 1.0 s in the sandbox made at 0.3 s.
func startedApp(t testing.TB, name string, spec corev1.PodSpec) *scenario {
	sc := newScenario(t, name, spec)
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runIn(1.0, sandboxID, idMain, "app", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idMain, 700, shimPID, "app")
	return sc
}

// gracefulKills is an app that traps SIGTERM and exits 0, with a
// startupProbe (exec, failureThreshold 3, every second) that never
// succeeds: the kubelet kills each attempt after three failures
// (StopContainer) and the app exits 0; between attempts, the crash-loop
// back-off. It stays in CrashLoopBackOff: a start in progress.
func gracefulKills(t *testing.T, withCalls bool) *scenario {
	sc := newScenario(t, "graceful", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		StartupProbe: execProbe(0, 1, "check-started")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	ids := []string{idMain, idMain2, "5e" + idMain[2:], "6f" + idMain[2:]}
	start, pid := 1.0, uint32(700)
	for i, id := range ids {
		sc.runIn(start, sandboxID, id, "app", uint32(i), start-0.05, start, 0, 0, "")
		sc.exec(start+0.01, id, pid, shimPID, "app")
		entry := pid
		for k := 1; k <= 3; k++ {
			s := start + float64(k)
			pid++
			sc.call(s-0.01, s+0.05, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = id, []string{"check-started"}, false })
			sc.exec(s, id, pid, shimPID, "check-started")
			sc.exit(s+0.02, id, pid, 1)
		}
		stop := start + 3.1
		if withCalls {
			sc.call(stop, stop+0.3, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = id })
		}
		sc.exit(stop+0.25, id, entry, 0) // the app's own exit on SIGTERM
		sc.runIn(stop+0.3, sandboxID, id, "app", uint32(i), start-0.05, start, stop+0.25, 0, "Completed")
		sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", "back-off 20s restarting failed container=app pod=graceful_default(uid)"), id, 0, int32(i+1)))
		sc.update(stop + 0.5)
		pid++
		start = stop + 0.5 + float64(10*(i+1))
	}
	sc.ticks(1, start)
	return sc
}

func TestKilledByTheKubeletWhateverTheExit(t *testing.T) {
	sc := gracefulKills(t, true)
	tl := snapshotAt(t, sc, 80)
	atts := findContainer(t, tl, "app").Attempts
	if len(atts) != 4 {
		t.Fatalf("%d attempts, want 4", len(atts))
	}
	for _, a := range atts {
		if a.KilledBy != ProbeStartup {
			t.Errorf("attempt %d: killed by %q, want startup (exit %v)", a.Attempt, a.KilledBy, a.ExitCode)
		}
	}
	want := "app: killed 4 times after its startupProbe failed 3 times in a row; CrashLoopBackOff 20s"
	if !strings.Contains(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q", tl.Waiting, want)
	}
	// Without the CRI calls (the kubelet not probed), an exit 0 is no kill:
	// nothing says the kubelet acted.
	tl = snapshotAt(t, gracefulKills(t, false), 80)
	for _, a := range findContainer(t, tl, "app").Attempts {
		if a.KilledBy != "" {
			t.Errorf("without StopContainer: attempt %d killed by %q", a.Attempt, a.KilledBy)
		}
	}
}

// TestKilledByTheKubeletsEvent: an httpGet liveness probe, whose results
// the kernel does not see, kills the app; the kubelet's Killing event
// says why.
func TestKilledByTheKubeletsEvent(t *testing.T) {
	sc := startedApp(t, "http-live", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		LivenessProbe: httpProbe(0, 1)}}})
	sc.exit(5.2, idMain, 700, 0)
	sc.runIn(5.3, sandboxID, idMain, "app", 0, 0.95, 1.0, 5.2, 0, "Completed")
	sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=x"), idMain, 0, 1))
	sc.update(5.5)
	sc.events = append(sc.events, &event.PodEvents{Time: at(6), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name,
		Events: []event.PodEvent{
			{Type: "Warning", Reason: "Unhealthy", FieldPath: "spec.containers{app}", Message: "Liveness probe failed: HTTP probe failed with statuscode: 500", Count: 3, First: at(2).Truncate(time.Second), Last: at(4).Truncate(time.Second)},
			{Type: "Normal", Reason: "Killing", FieldPath: "spec.containers{app}", Message: "Container app failed liveness probe, will be restarted", Count: 1, First: at(4).Truncate(time.Second), Last: at(4).Truncate(time.Second)},
		}})
	sc.ticks(1, 8)
	tl := snapshotAt(t, sc, 8)
	a := findContainer(t, tl, "app").Attempts[0]
	if a.KilledBy != ProbeLiveness {
		t.Errorf("killed by %q, want liveness from the Killing event", a.KilledBy)
	}
	if !strings.Contains(tl.Waiting, "app: killed once after its livenessProbe failed 3 times in a row; CrashLoopBackOff 10s") {
		t.Errorf("waiting %q", tl.Waiting)
	}
	if evs := findContainer(t, tl, "app").Events; len(evs) != 2 || evs[0].Reason != "Unhealthy" {
		t.Errorf("container events %+v", evs)
	}
}

// TestStoppedForTheDeletionIsNoKill: the StopContainer of a pod being
// deleted is not a probe's kill, however the probe fared.
func TestStoppedForTheDeletionIsNoKill(t *testing.T) {
	sc := newScenario(t, "deleted", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		StartupProbe: execProbe(0, 1, "check-started")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runIn(1.0, sandboxID, idMain, "app", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idMain, 700, shimPID, "app")
	for k, s := range []float64{2, 3, 4} {
		pid := uint32(710 + k)
		sc.exec(s, idMain, pid, shimPID, "check-started")
		sc.exit(s+0.02, idMain, pid, 1)
	}
	now := sc.pod.CreationTimestamp
	sc.pod.DeletionTimestamp = &now
	sc.update(4.5)
	sc.call(4.6, 4.9, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.exit(4.8, idMain, 700, 0)
	sc.delete(5.5)
	tl := sc.run(Config{})
	if a := findContainer(t, tl, "app").Attempts[0]; a.KilledBy != "" {
		t.Errorf("killed by %q while the pod was deleted", a.KilledBy)
	}
}

// TestPostStartHookKill: a postStart hook that fails; the kubelet kills the
// container (FailedPostStartHook), which exits 0 on SIGTERM.
func TestPostStartHookKill(t *testing.T) {
	c := corev1.Container{Name: "app", Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"setup"}}}}}
	sc := startedApp(t, "hook-kill", corev1.PodSpec{Containers: []corev1.Container{c}})
	sc.call(1.05, 1.6, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = idMain, []string{"setup"}, true })
	sc.exec(1.06, idMain, 720, shimPID, "setup")
	sc.exit(1.55, idMain, 720, 2)
	sc.call(1.61, 1.9, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.exit(1.85, idMain, 700, 0)
	sc.runIn(1.95, sandboxID, idMain, "app", 0, 0.95, 1.0, 1.85, 0, "Completed")
	sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=x"), idMain, 0, 1))
	sc.update(2.2)
	sc.ticks(1, 5)
	tl := snapshotAt(t, sc, 5)
	if a := findContainer(t, tl, "app").Attempts[0]; a.KilledBy != KilledPostStart {
		t.Errorf("killed by %q, want postStart (hook %+v)", a.KilledBy, a.PostStart)
	}
	if !strings.Contains(tl.Waiting, "app: killed once after its postStart hook failed; CrashLoopBackOff 10s") {
		t.Errorf("waiting %q", tl.Waiting)
	}
}

// TestRestartedHookNeverEndsBeforeItBegan: web's httpGet postStart hook
// fails the first time (its server not listening yet), the kubelet kills
// web and creates mesh; web's second attempt, with its hook, comes after
// mesh was created. The second hook is inferred (no connection seen): its
// end is not mesh's creation, which came before it began, and no insight
// says mesh waited a negative time for it (seen on the node: "mesh was
// created -911ms after web's postStart hook began").
func TestRestartedHookNeverEndsBeforeItBegan(t *testing.T) {
	const idMesh = "7a00000000000000000000000000000000000000000000000000000000000000"
	hook := &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}}
	sc := newScenario(t, "shared-port", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Lifecycle: hook}, {Name: "mesh"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runIn(1.0, sandboxID, idMain, "web", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idMain, 700, shimPID, "httpd")
	sc.call(1.1, 3.0, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.kill(2.9, idMain, 700, 9)
	sc.runIn(3.0, sandboxID, idMain, "web", 0, 0.95, 1.0, 2.9, 137, "Error")
	sc.runIn(3.6, sandboxID, idMesh, "mesh", 0, 3.58, 3.6, 0, 0, "")
	sc.exec(3.62, idMesh, 710, shimPID, "sleep")
	sc.runIn(4.5, sandboxID, idMain2, "web", 1, 4.42, 4.45, 0, 0, "")
	sc.exec(4.5, idMain2, 720, shimPID, "httpd")
	sc.status(false, running("web", idMain2, 4.5, true, true))
	sc.status(false, running("mesh", idMesh, 3.6, true, true))
	sc.cond(corev1.ContainersReady, 5.5)
	sc.cond(corev1.PodReady, 5.5)
	sc.update(5.5)
	sc.ticks(1, 8)
	tl := sc.run(Config{})
	atts := findContainer(t, tl, "web").Attempts
	if len(atts) != 2 {
		t.Fatalf("web: %d attempts, want 2", len(atts))
	}
	for _, a := range atts {
		if h := a.PostStart; h != nil && !h.End.IsZero() && h.End.Before(h.Start) {
			t.Errorf("web attempt %d: hook %v..%v ends before it began", a.Attempt, h.Start.Sub(tl.Start), h.End.Sub(tl.Start))
		}
	}
	for _, in := range tl.Insights {
		if in.Duration < 0 || strings.Contains(in.Message, " -") {
			t.Errorf("insight with a negative time: %+v", in)
		}
	}
}

// TestEvictionTheKubeletDidNotTell: a pod of restartPolicy Always whose
// readiness probe failed 25 times is evicted; its app exits 0 on SIGTERM,
// so its phase is Succeeded with no reason. With its Evicted Event the
// reason is the eviction; without it (the kubelet's recorder drops a pod's
// Warning Events past 25, as seen on the node) the reason says what the
// kubelet's stop implies and why its Event is missing, not just "pod
// completed".
func TestEvictionTheKubeletDidNotTell(t *testing.T) {
	unhealthy := event.PodEvent{Type: "Warning", Reason: "Unhealthy", Component: "kubelet", FieldPath: "spec.containers{app}",
		Message: "Readiness probe failed: ", Count: 25, First: at(1).Truncate(time.Second), Last: at(48).Truncate(time.Second)}
	killing := event.PodEvent{Type: "Normal", Reason: "Killing", Component: "kubelet", FieldPath: "spec.containers{app}",
		Message: "Stopping container app", Count: 1, First: at(60).Truncate(time.Second), Last: at(60).Truncate(time.Second)}
	evicted := event.PodEvent{Type: "Warning", Reason: "Evicted", Component: "kubelet",
		Message: `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi".`, Count: 1, First: at(60).Truncate(time.Second), Last: at(60).Truncate(time.Second)}
	for _, tc := range []struct {
		name   string
		events []event.PodEvent
		want   []string
	}{
		{"told", []event.PodEvent{unhealthy, evicted, killing}, []string{`Evicted: Usage of EmptyDir volume "scratch" exceeds the limit`}},
		{"dropped", []event.PodEvent{unhealthy, killing}, []string{
			"the kubelet stopped the pod: with restartPolicy Always it does so only to evict it or to shut the node down, and its Events say neither",
			"it had sent 25 Warning Events about the pod, Unhealthy ×25: past 25 its recorder drops them"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := startedApp(t, "evicted-"+tc.name, corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
				ReadinessProbe: execProbe(0, 2, "false")}}})
			sc.status(false, running("app", idMain, 1, true, false))
			sc.update(1.2)
			sc.exit(60.5, idMain, 700, 0)
			sc.runIn(60.6, sandboxID, idMain, "app", 0, 0.95, 1.0, 60.5, 0, "Completed")
			sc.status(false, terminated("app", idMain, 0, 0))
			sc.pod.Status.Phase = corev1.PodSucceeded
			sc.update(60.7)
			sc.events = append(sc.events, &event.PodEvents{Time: at(60.8), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name, Events: tc.events})
			sc.ticks(1, 65)
			tl := sc.run(Config{})
			if tl.Outcome != OutcomeFailed {
				t.Errorf("outcome %s, want failed", tl.Outcome)
			}
			for _, w := range tc.want {
				if !strings.Contains(tl.Reason, w) {
					t.Errorf("reason %q\nwant %q", tl.Reason, w)
				}
			}
		})
	}
}
