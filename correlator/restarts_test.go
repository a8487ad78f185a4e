package correlator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestSignalledProcessIsNoExitZero: a SIGKILLed entrypoint has no exit code
// (the kernel reports 0, which means nothing then); the attempt's status is
// 128+9 like a shell's.
func TestSignalledProcessIsNoExitZero(t *testing.T) {
	sc := newScenario(t, "killed", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.exec(1.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.kill(2, idMain, 1100, 9)
	sc.delete(2.5)
	tl := sc.run(Config{})
	a := findContainer(t, tl, "app").Attempts[0]
	if a.Process == nil || a.Process.Signal != 9 || a.Process.ExitCode != nil {
		t.Fatalf("process %+v, want signal 9 and no exit code", a.Process)
	}
	if a.ExitCode == nil || *a.ExitCode != 137 {
		t.Errorf("attempt exit code %v, want 137", a.ExitCode)
	}
}

const sandbox2ID = "6c00000000000000000000000000000000000000000000000000000000000000"

// sandboxRecreated: the first sandbox dies at 3 s with the container in it;
// the kubelet makes a new one at 6.5 s and starts the container again.
func sandboxRecreated(t *testing.T, watchSawTheFall bool) *Timeline {
	sc := sandboxedApp(t, "resandboxed")
	sc.runIn(1.05, sandboxID, idMain, "app", 0, 1.0, 1.04, 0, 0, "")
	sc.exec(1.05, idMain, 1100, shimPID, "sleep", "3600")
	sc.kill(3, sandboxID, 100, 9)
	sc.kill(3.01, idMain, 1100, 9)
	sc.runIn(3.1, sandboxID, idMain, "app", 0, 1.0, 1.04, 3.01, 137, "Error")
	if watchSawTheFall {
		sc.notTrue(corev1.PodReadyToStartContainers)
		sc.status(false, terminated("app", idMain, 137, 0))
		sc.update(3.2)
	}
	sc.sandboxCall(6.5, 7.0, sandbox2ID, 1, 101)
	sc.cond(corev1.PodReadyToStartContainers, 7.1)
	sc.update(7.1)
	sc.runIn(7.25, sandbox2ID, idMain2, "app", 1, 7.2, 7.24, 0, 0, "")
	sc.exec(7.25, idMain2, 1200, shimPID, "sleep", "3600")
	sc.status(false, running("app", idMain2, 7.24, true, true))
	sc.cond(corev1.ContainersReady, 7.6)
	sc.cond(corev1.PodReady, 7.6)
	sc.update(7.6)
	return sc.run(Config{})
}

// TestSandboxRecreated: the timeline's sandbox is the final one (the
// kubelet restarts every container in a new sandbox); the first is listed
// with its call and CNI; no condition reads a negative lag. Before, the
// earliest sandbox was taken: pod.wait_sandbox read 6.5 s and
// PodReadyToStartContainers -6.1 s.
func TestSandboxRecreated(t *testing.T) {
	for _, sawFall := range []bool{true, false} {
		tl := sandboxRecreated(t, sawFall)
		sb := tl.Sandbox
		if sb == nil || sb.ID != sandbox2ID || sb.Attempt != 1 || sb.Call == nil || !sb.Call.Start.Equal(at(6.5)) {
			t.Fatalf("sandbox %+v, want the second one (attempt 1, call at 6.5 s)", sb)
		}
		if len(sb.CNI) != 1 || !sb.CNI[0].Exec.Equal(at(6.55)) {
			t.Errorf("final sandbox CNI %+v, want the plugin inside its own call", sb.CNI)
		}
		if len(tl.EarlierSandboxes) != 1 {
			t.Fatalf("earlier sandboxes %+v, want the first one", tl.EarlierSandboxes)
		}
		e := tl.EarlierSandboxes[0]
		if e.ID != sandboxID || e.Call == nil || !e.Call.Start.Equal(at(0.3)) || len(e.CNI) != 1 || !e.CNI[0].Exec.Equal(at(0.35)) || !e.Ended.Equal(at(3)) {
			t.Errorf("earlier sandbox %+v", e)
		}
		if ph, _ := phaseOf(tl, PhaseWaitSandbox); !ph.End.Equal(at(0.3)) {
			t.Errorf("pod.wait_sandbox %v..%v, want it to end at the first RunPodSandbox (0.3 s)", ph.Start.Sub(t0), ph.End.Sub(t0))
		}
		if ph, ok := phaseOf(tl, PhaseSandboxReplaced); !ok || !ph.Start.Equal(at(0.3)) || !ph.End.Equal(at(6.5)) {
			t.Errorf("pod.sandbox_replaced %+v", ph)
		}
		if ph, _ := phaseOf(tl, PhaseSandbox); !ph.Start.Equal(at(6.5)) || !ph.End.Equal(at(7.0)) {
			t.Errorf("pod.sandbox %+v, want the final call", ph)
		}
		noNegativeLag(t, tl)
		ptsc := findCondition(t, tl, CondPodReadyToStartContainers)
		want := at(7.0)
		if !sawFall {
			want = at(0.8) // only the first rise was seen: the first sandbox caused it
		}
		if !ptsc.Cause.Equal(want) {
			t.Errorf("saw fall %v: PodReadyToStartContainers cause %v (%s), want %v", sawFall, ptsc.Cause.Sub(t0), ptsc.CauseEvent, want.Sub(t0))
		}
		if sawFall && (len(ptsc.EarlierObserved) != 1 || !ptsc.EarlierObserved[0].Equal(at(0.9))) {
			t.Errorf("earlier rises %v, want the first at 0.9 s", ptsc.EarlierObserved)
		}
		if !hasInsight(tl, InsightSandboxChanged, "sandbox changed: all containers restarted") {
			t.Errorf("no sandbox-changed insight: %+v", tl.Insights)
		}
		if len(tl.Breakdown) == 0 || tl.Breakdown[0].Kind == ShareWaitSandbox {
			t.Errorf("the wait before the sandbox called where the time went: %+v", tl.Breakdown)
		}
		atts := findContainer(t, tl, "app").Attempts
		if len(atts) != 2 || atts[1].SandboxID != sandbox2ID || atts[0].ExitCode == nil || *atts[0].ExitCode != 137 {
			t.Fatalf("app attempts %+v", atts)
		}
		if ph, _ := phaseOf(tl, PhaseContainers); !ph.Start.Equal(at(7.2)) {
			t.Errorf("pod.containers starts %v, want the attempt in the final sandbox (7.2 s)", ph.Start.Sub(t0))
		}
	}
}

// TestSidecarRestartsOnce: the sidecar counts as started at 1.1 s
// (Initialized at 1.5 s), crashes at 4 s and is restarted at 4.5 s. Before,
// Initialized's cause was the restart (lag -3.05 s) and pod.init ran over
// the main container.
func TestSidecarRestartsOnce(t *testing.T) {
	sc := newScenario(t, "sidecar-restart", corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: always(), Command: []string{"proxy"}}},
		Containers:     []corev1.Container{{Name: "app", Command: []string{"app"}, ReadinessProbe: execProbe(0, 1, "check")}},
	})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.cond(corev1.PodReadyToStartContainers, 0.5)
	sc.update(0.5)
	sc.runtime(1.05, idSidecar, "proxy", 0, 1.0, 1.08, 0, 0)
	sc.exec(1.1, idSidecar, 300, shimPID, "proxy")
	sc.status(true, running("proxy", idSidecar, 1.08, true, true))
	sc.cond(corev1.PodInitialized, 1.5)
	sc.update(1.5)
	sc.runtime(1.65, idMain, "app", 0, 1.6, 1.64, 0, 0)
	sc.exec(1.65, idMain, 400, shimPID, "app")
	sc.exit(4.0, idSidecar, 300, 1)
	sc.runtime(4.05, idSidecar, "proxy", 0, 1.0, 1.08, 4.0, 1)
	sc.runtime(4.55, idInit, "proxy", 1, 4.5, 4.54, 0, 0)
	sc.exec(4.55, idInit, 310, shimPID, "proxy")
	sc.status(true, running("proxy", idInit, 4.54, true, true))
	sc.update(4.7)
	sc.exec(6, idMain, 410, shimPID, "check")
	sc.exit(6.01, idMain, 410, 0)
	sc.status(false, running("app", idMain, 1.64, true, true))
	sc.cond(corev1.ContainersReady, 6.5)
	sc.cond(corev1.PodReady, 6.5)
	sc.update(6.5)
	tl := sc.run(Config{})

	noNegativeLag(t, tl)
	init := findCondition(t, tl, CondInitialized)
	if !init.Cause.Equal(at(1.1)) {
		t.Errorf("Initialized cause %v (%s), want the first attempt's start at 1.1 s", init.Cause.Sub(t0), init.CauseEvent)
	}
	ph, ok := phaseOf(tl, PhaseInit)
	app := findContainer(t, tl, "app").Attempts[0]
	if !ok || ph.End.After(app.Created) {
		t.Errorf("pod.init %v..%v overlaps app created at %v", ph.Start.Sub(t0), ph.End.Sub(t0), app.Created.Sub(t0))
	}
	atts := findContainer(t, tl, "proxy").Attempts
	if len(atts) != 2 {
		t.Fatalf("proxy attempts %+v", atts)
	}
	approx(t, "sidecar back-off", atts[1].BackOff, 500*time.Millisecond)
	if cr := findCondition(t, tl, CondContainersReady); !cr.Cause.Equal(at(6.01)) {
		t.Errorf("ContainersReady cause %v (%s)", cr.Cause.Sub(t0), cr.CauseEvent)
	}
}

// TestCrashLoopBackOffs: the container exits 1 three times; each restart
// waits the kubelet's back-off (10 s, 20 s, 40 s after the exit), kept on the
// attempt and summed in the insight.
func TestCrashLoopBackOffs(t *testing.T) {
	sc := newScenario(t, "backoff", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	ids := []string{idMain, idMain2, idInit, idSidecar}
	s := 1.0
	for i, id := range ids {
		last := i == len(ids)-1
		fin, code := s+0.5, int32(1)
		if last {
			fin, code = 0, 0
		}
		sc.runIn(s, sandboxID, id, "app", uint32(i), s-0.05, s, fin, code, "Error")
		sc.exec(s+0.01, id, uint32(2000+i), shimPID, "app")
		if !last {
			sc.exit(s+0.5, id, uint32(2000+i), 1)
			sc.status(false, terminated("app", id, 1, int32(i)))
			sc.update(s + 0.6)
		}
		s += 0.5 + 10*float64(int(1)<<i)
	}
	sc.status(false, running("app", idSidecar, s, true, true))
	sc.cond(corev1.ContainersReady, 73.0)
	sc.cond(corev1.PodReady, 73.0)
	sc.update(73.0)
	tl := sc.run(Config{})
	atts := findContainer(t, tl, "app").Attempts
	if len(atts) != 4 {
		t.Fatalf("%d attempts, want 4", len(atts))
	}
	for i, want := range []time.Duration{0, 10*time.Second - 50*time.Millisecond, 20*time.Second - 50*time.Millisecond, 40*time.Second - 50*time.Millisecond} {
		approx(t, fmt.Sprintf("attempt %d back-off", i), atts[i].BackOff, want)
		if i < 3 && atts[i].Reason != "Error" {
			t.Errorf("attempt %d reason %q, want the runtime's Error", i, atts[i].Reason)
		}
	}
	if !hasInsight(tl, InsightRetries, "ran 4 times (exit codes 1, 1, 1, running)") || !hasInsight(tl, InsightRetries, "of it back-off (9.9s, 19.9s, ") {
		t.Errorf("retries insight: %+v", tl.Insights)
	}
	noNegativeLag(t, tl)
	if cr := findCondition(t, tl, CondContainersReady); !cr.Cause.Equal(at(72.51)) {
		t.Errorf("ContainersReady cause %v (%s), want the last attempt's exec", cr.Cause.Sub(t0), cr.CauseEvent)
	}
}

// TestLivenessKill: three liveness failures in a row (failureThreshold 3),
// then SIGKILL: the attempt says the kubelet killed it for its probe.
func TestLivenessKill(t *testing.T) {
	sc := newScenario(t, "liveness", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		ReadinessProbe: execProbe(0, 1, "check-ready"), LivenessProbe: execProbe(4, 1, "check-live")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runIn(1.0, sandboxID, idMain, "app", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idMain, 700, shimPID, "app")
	pid := uint32(710)
	probe := func(s float64, code int, cmd string) {
		sc.exec(s, idMain, pid, shimPID, cmd)
		sc.exit(s+0.01, idMain, pid, code)
		pid++
	}
	for _, s := range []float64{2, 3, 4} {
		probe(s, 1, "check-ready")
	}
	for _, s := range []float64{5, 6, 7} {
		probe(s, 1, "check-live")
	}
	sc.kill(7.5, idMain, 700, 9)
	sc.runIn(7.6, sandboxID, idMain, "app", 0, 0.95, 1.0, 7.5, 137, "Error")
	sc.status(false, terminated("app", idMain, 137, 0))
	sc.update(7.7)
	sc.runIn(8.0, sandboxID, idMain2, "app", 1, 7.95, 8.0, 0, 0, "")
	sc.exec(8.01, idMain2, 800, shimPID, "app")
	sc.exec(9, idMain2, 810, shimPID, "check-ready")
	sc.exit(9.01, idMain2, 810, 0)
	sc.status(false, running("app", idMain2, 8, true, true))
	sc.cond(corev1.ContainersReady, 9.3)
	sc.cond(corev1.PodReady, 9.3)
	sc.update(9.3)
	tl := sc.run(Config{})
	atts := findContainer(t, tl, "app").Attempts
	if len(atts) != 2 {
		t.Fatalf("attempts %+v", atts)
	}
	if atts[0].KilledBy != ProbeLiveness || atts[0].Reason != "Error" || atts[0].Process.ExitCode != nil || atts[0].Process.Signal != 9 {
		t.Errorf("first attempt killed by %q reason %q process %+v, want liveness, Error, signal 9", atts[0].KilledBy, atts[0].Reason, atts[0].Process)
	}
	if atts[1].KilledBy != "" {
		t.Errorf("second attempt killed by %q", atts[1].KilledBy)
	}
	if !hasInsight(tl, InsightRetries, "exit codes 137 (killed: livenessProbe), running") {
		t.Errorf("retries insight: %+v", tl.Insights)
	}
	if cr := findCondition(t, tl, CondContainersReady); !cr.Cause.Equal(at(9.01)) {
		t.Errorf("ContainersReady cause %v (%s)", cr.Cause.Sub(t0), cr.CauseEvent)
	}
}

// gated is a one-container pod with a readiness gate set True at gateAt;
// the container is ready at 5.01 s (ContainersReady observed at 5.5 s).
func gated(t *testing.T, gateAt float64) *Timeline {
	const gate corev1.PodConditionType = "example.com/lb-ready"
	sc := newScenario(t, "gate", corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
		Containers: []corev1.Container{{Name: "app", ReadinessProbe: execProbe(0, 1, "check")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.exec(1.01, idMain, 1100, shimPID, "app")
	if gateAt < 5 {
		sc.cond(gate, gateAt)
		sc.update(gateAt)
	}
	sc.exec(5, idMain, 1110, shimPID, "check")
	sc.exit(5.01, idMain, 1110, 0)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 5.5)
	sc.update(5.5)
	if gateAt >= 5 {
		sc.cond(gate, gateAt)
		sc.update(gateAt)
	}
	sc.cond(corev1.PodReady, max(gateAt, 5.5)+0.1)
	sc.update(max(gateAt, 5.5) + 0.1)
	return sc.run(Config{})
}

// TestReadinessGateEarly: the gate was True before the containers were
// ready: Ready's cause is ContainersReady's, and the gate is drawn as a
// condition of its own.
func TestReadinessGateEarly(t *testing.T) {
	tl := gated(t, 2)
	g := findCondition(t, tl, "example.com/lb-ready")
	if !g.ReadinessGate || !g.Observed.Equal(at(2)) || !g.Cause.IsZero() {
		t.Errorf("gate condition %+v", g)
	}
	cr, r := findCondition(t, tl, CondContainersReady), findCondition(t, tl, CondReady)
	if !r.Cause.Equal(cr.Cause) || !cr.Cause.Equal(at(5.01)) {
		t.Errorf("Ready cause %v (%s), ContainersReady's %v", r.Cause.Sub(t0), r.CauseEvent, cr.Cause.Sub(t0))
	}
	for _, s := range tl.CriticalPath {
		if strings.HasPrefix(s.Name, "readinessGate/") {
			t.Errorf("an early gate on the critical path: %+v", tl.CriticalPath)
		}
	}
}

// TestReadinessGateLate: the gate came 17 s after the containers were
// ready: Ready's cause is the gate, and its wait is on the critical path.
func TestReadinessGateLate(t *testing.T) {
	tl := gated(t, 22)
	r := findCondition(t, tl, CondReady)
	if !r.Cause.Equal(at(22)) || r.CauseEvent != "readiness gate example.com/lb-ready True" {
		t.Errorf("Ready cause %v (%s), want the gate at 22 s", r.Cause.Sub(t0), r.CauseEvent)
	}
	cp := tl.CriticalPath
	last := cp[len(cp)-1]
	if last.Name != "readinessGate/example.com/lb-ready" || !last.Start.Equal(at(5.01)) || !last.End.Equal(at(22)) {
		t.Errorf("critical path %+v, want it to end with the gate's wait 5.01 s -> 22 s", cp)
	}
	checkCriticalPath(t, tl)
}

// TestPostStartOnCriticalPath: main's 4 s hook holds second's creation back;
// the hook is a step of the critical path, between the two containers.
func TestPostStartOnCriticalPath(t *testing.T) {
	sc := newScenario(t, "hook-path", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "main", Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 4"}}}}},
		{Name: "second"},
	}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.4)
	sc.runtime(1.05, idMain, "main", 0, 1.0, 1.1, 0, 0)
	sc.exec(1.12, idMain, 500, shimPID, "sleep", "3600")
	sc.exec(1.2, idMain, 510, shimPID, "sh", "-c", "sleep 4")
	sc.exit(5.2, idMain, 510, 0)
	sc.runtime(5.35, idMain2, "second", 0, 5.3, 5.4, 0, 0)
	sc.exec(5.42, idMain2, 600, shimPID, "sleep", "3600")
	sc.status(false, running("main", idMain, 1.1, true, true))
	sc.status(false, running("second", idMain2, 5.4, true, true))
	sc.cond(corev1.ContainersReady, 6)
	sc.cond(corev1.PodReady, 6)
	sc.update(6)
	tl := sc.run(Config{})
	var names []string
	for _, s := range tl.CriticalPath {
		if n := len(names); n == 0 || names[n-1] != s.Name { // a container's calls, run, probes: one name
			names = append(names, s.Name)
		}
	}
	want := "[pod.schedule pod.wait_sandbox pod.sandbox container/main postStart/main container/second]"
	if fmt.Sprint(names) != want {
		t.Errorf("critical path %v, want %s", names, want)
	}
	checkCriticalPath(t, tl)
}

// checkCriticalPath: steps in time order, inside the start, summing to no
// more than it.
func checkCriticalPath(t *testing.T, tl *Timeline) {
	t.Helper()
	var sum time.Duration
	for i, s := range tl.CriticalPath {
		if s.End.Before(s.Start) || s.Start.Before(tl.Start) || s.End.After(tl.End) {
			t.Errorf("step %s %v..%v outside the start %v..%v", s.Name, s.Start.Sub(t0), s.End.Sub(t0), tl.Start.Sub(t0), tl.End.Sub(t0))
		}
		if i > 0 && s.Start.Before(tl.CriticalPath[i-1].End) {
			t.Errorf("step %s starts before %s ended", s.Name, tl.CriticalPath[i-1].Name)
		}
		sum += s.End.Sub(s.Start)
	}
	if sum > tl.End.Sub(tl.Start) {
		t.Errorf("critical path sums to %v, more than the start's %v", sum, tl.End.Sub(tl.Start))
	}
}
