package correlator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
