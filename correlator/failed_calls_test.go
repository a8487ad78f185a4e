package correlator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// TestFailedSandboxThenSuccess: the first RunPodSandbox fails (a CNI
// error): the call reaches the pod by the UID in its request, is kept as a
// failed call, and the sandbox phase starts with it.
func TestFailedSandboxThenSuccess(t *testing.T) {
	sc := newScenario(t, "cni-retry", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.call(0.3, 0.8, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.Err = sc.uid, true })
	sc.call(2.3, 2.9, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = sc.uid, sandboxID })
	sc.sandboxUp(2.4)
	sc.cond(corev1.PodReadyToStartContainers, 3)
	sc.runtime(3.2, idMain, "app", 0, 3.1, 3.2, 0, 0)
	sc.exec(3.21, idMain, 1100, shimPID, "sleep", "3600")
	sc.status(false, running("app", idMain, 3.2, true, true))
	sc.cond(corev1.PodInitialized, 0.05)
	sc.cond(corev1.ContainersReady, 3.5)
	sc.cond(corev1.PodReady, 3.5)
	sc.update(3.5)
	tl := sc.run(Config{})
	if tl.Outcome != OutcomeReady {
		t.Fatalf("outcome %s %q", tl.Outcome, tl.Reason)
	}
	sb := tl.Sandbox
	if sb == nil || sb.ID != sandboxID || sb.Call == nil || sb.Call.Err || !sb.Call.Start.Equal(at(2.3)) {
		t.Fatalf("sandbox %+v, want the successful call", sb)
	}
	if len(sb.FailedCalls) != 1 || !sb.FailedCalls[0].Err || !sb.FailedCalls[0].Start.Equal(at(0.3)) || !sb.FailedCalls[0].End.Equal(at(0.8)) {
		t.Errorf("failed calls %+v", sb.FailedCalls)
	}
	if len(tl.EarlierSandboxes) != 0 || hasInsight(tl, InsightSandboxChanged, "") {
		t.Errorf("earlier sandboxes %+v: a failed call that made no sandbox is no replaced sandbox", tl.EarlierSandboxes)
	}
	for _, ph := range tl.Phases {
		switch ph.Name {
		case PhaseWaitSandbox:
			if !ph.End.Equal(at(0.3)) {
				t.Errorf("wait_sandbox ends %v, want the first call", ph.End.Sub(t0))
			}
		case PhaseSandbox:
			if !ph.Start.Equal(at(0.3)) || !ph.End.Equal(at(2.9)) {
				t.Errorf("sandbox phase %v..%v, want 0.3..2.9", ph.Start.Sub(t0), ph.End.Sub(t0))
			}
		}
	}
}

// TestFailedCallsStuck: a sandbox that never comes up, and a container
// whose CreateContainer and StartContainer fail.
func TestFailedCallsStuck(t *testing.T) {
	t.Run("no sandbox", func(t *testing.T) {
		sc := newScenario(t, "cni-broken", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
		sc.cond(corev1.PodScheduled, 0)
		sc.status(false, waiting("app", "ContainerCreating", ""))
		sc.update(0.05)
		for _, s := range []float64{0.3, 1.5, 4} {
			sc.call(s, s+0.5, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.Err = sc.uid, true })
		}
		tl := sc.run(Config{Timeout: 10 * time.Second})
		if want := "not Ready within 10s: RunPodSandbox failed 3 times; app: ContainerCreating"; tl.Reason != want {
			t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
		}
		if sb := tl.Sandbox; sb == nil || sb.ID != "" || sb.Call != nil || len(sb.FailedCalls) != 3 {
			t.Fatalf("sandbox %+v, want only the 3 failed calls", sb)
		}
	})
	t.Run("container calls", func(t *testing.T) {
		sc := stuckPod(t, "create-fails", corev1.Container{Name: "app"})
		sc.call(1, 1.2, event.CRICreateContainer, func(c *event.CRICall) {
			c.PodUID, c.PodSandboxID, c.ContainerName, c.Err = sc.uid, sandboxID, "app", true
		})
		sc.status(false, waiting("app", "CreateContainerError", "failed to reserve container name"))
		sc.update(1.3)
		sc.call(11, 11.2, event.CRICreateContainer, func(c *event.CRICall) {
			c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = sc.uid, sandboxID, "app", idMain
		})
		sc.call(11.3, 11.4, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID, c.Err = idMain, true })
		sc.runtime(11.5, idMain, "app", 0, 11.2, 0, 11.4, 128)
		sc.status(false, waiting("app", "RunContainerError", "exec: \"nope\": executable file not found in $PATH"))
		sc.update(11.6)
		tl := sc.run(Config{Timeout: 20 * time.Second})
		app := findContainer(t, tl, "app")
		if len(app.FailedCalls) != 1 || app.FailedCalls[0].Method != event.CRICreateContainer || !app.FailedCalls[0].Err {
			t.Errorf("failed calls %+v, want the failed CreateContainer", app.FailedCalls)
		}
		if len(app.Attempts) != 1 {
			t.Fatalf("attempts %+v", app.Attempts)
		}
		calls := app.Attempts[0].Calls
		if len(calls) != 2 || calls[0].Err || calls[1].Method != event.CRIStartContainer || !calls[1].Err {
			t.Errorf("attempt calls %+v, want CreateContainer then the failed StartContainer", calls)
		}
		wantWaiting(t, app.Waiting,
			WaitingReason{Reason: "CreateContainerError", Message: "failed to reserve container name", First: at(1.3), Last: at(1.3), Times: 1},
			WaitingReason{Reason: "RunContainerError", Message: "exec: \"nope\": executable file not found in $PATH", First: at(11.6), Last: at(11.6), Times: 1})
		if want := "not Ready within 20s: app: RunContainerError (exec: \"nope\": executable file not found in $PATH)"; tl.Reason != want {
			t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
		}
	})
}

// sandboxedApp is a pod of one container, app, whose sandbox is made by
// 0.8 s (RunPodSandbox from 0.3 s, its CNI plugin, pid 3100, and pause, pid
// 100), PodReadyToStartContainers observed at 0.9 s.
func sandboxedApp(t *testing.T, name string) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxCall(0.3, 0.8, sandboxID, 0, 100)
	sc.cond(corev1.PodReadyToStartContainers, 0.9)
	sc.update(0.9)
	return sc
}

// sandboxDiesThenRetries: the first sandbox dies at 3 s with app in it;
// the kubelet's RunPodSandbox calls at 4 s and 6 s fail; when replaced,
// a third call at 8.5 s makes sandbox2 and app runs again in it.
func sandboxDiesThenRetries(t *testing.T, replaced bool) *Timeline {
	sc := sandboxedApp(t, "cni-broke-later")
	sc.runIn(1.05, sandboxID, idMain, "app", 0, 1.0, 1.04, 0, 0, "")
	sc.exec(1.05, idMain, 1100, shimPID, "sleep", "3600")
	sc.kill(3, sandboxID, 100, 9)
	sc.kill(3.01, idMain, 1100, 9)
	sc.runIn(3.1, sandboxID, idMain, "app", 0, 1.0, 1.04, 3.01, 137, "Error")
	sc.notTrue(corev1.PodReadyToStartContainers)
	sc.status(false, terminated("app", idMain, 137, 0))
	sc.update(3.2)
	for _, s := range []float64{4, 6} {
		sc.call(s, s+0.5, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.Err = sc.uid, true })
	}
	if !replaced {
		return sc.run(Config{Timeout: 10 * time.Second})
	}
	sc.sandboxCall(8.5, 9.0, sandbox2ID, 1, 101)
	sc.cond(corev1.PodReadyToStartContainers, 9.1)
	sc.update(9.1)
	sc.runIn(9.25, sandbox2ID, idMain2, "app", 1, 9.2, 9.24, 0, 0, "")
	sc.exec(9.25, idMain2, 1200, shimPID, "sleep", "3600")
	sc.status(false, running("app", idMain2, 9.24, true, true))
	sc.cond(corev1.ContainersReady, 9.6)
	sc.cond(corev1.PodReady, 9.6)
	sc.update(9.6)
	return sc.run(Config{})
}

// TestFailedSandboxCallsAfterReplacement: failed RunPodSandbox calls are
// failed calls of the sandbox the kubelet was trying to make, never
// sandboxes of their own: the replacement's, when it came (its phase
// starts with them), else the timeline's sandbox is one not made, the
// one that died is earlier, and the stuck reason counts the calls.
func TestFailedSandboxCallsAfterReplacement(t *testing.T) {
	t.Run("replaced", func(t *testing.T) {
		tl := sandboxDiesThenRetries(t, true)
		checkTimeline(t, "replaced", tl)
		sb := tl.Sandbox
		if sb == nil || sb.ID != sandbox2ID || sb.Call == nil || sb.Call.Err || len(sb.FailedCalls) != 2 || !sb.FailedCalls[0].Start.Equal(at(4)) {
			t.Fatalf("sandbox %+v, want sandbox2 with the two failed calls before it", sb)
		}
		if len(tl.EarlierSandboxes) != 1 || tl.EarlierSandboxes[0].ID != sandboxID || len(tl.EarlierSandboxes[0].FailedCalls) != 0 {
			t.Fatalf("earlier sandboxes %+v, want only the first one", tl.EarlierSandboxes)
		}
		for name, want := range map[string][2]float64{
			PhaseWaitSandbox: {0.05, 0.3}, PhaseSandboxReplaced: {0.3, 4}, PhaseSandbox: {4, 9.0},
		} {
			if ph, ok := phaseOf(tl, name); !ok || !ph.Start.Equal(at(want[0])) || !ph.End.Equal(at(want[1])) {
				t.Errorf("%s %+v, want %v..%v s", name, ph, want[0], want[1])
			}
		}
		if !hasInsight(tl, InsightSandboxChanged, "sandbox changed: all containers restarted") {
			t.Errorf("no sandbox-changed insight: %+v", tl.Insights)
		}
	})
	t.Run("never replaced", func(t *testing.T) {
		tl := sandboxDiesThenRetries(t, false)
		checkTimeline(t, "never replaced", tl)
		if want := "not Ready within 10s: RunPodSandbox failed 2 times; app: exited with code 137"; tl.Reason != want {
			t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
		}
		if sb := tl.Sandbox; sb == nil || sb.ID != "" || sb.Call != nil || len(sb.FailedCalls) != 2 {
			t.Fatalf("sandbox %+v, want one not made: only the 2 failed calls", sb)
		}
		if len(tl.EarlierSandboxes) != 1 || tl.EarlierSandboxes[0].ID != sandboxID || !tl.EarlierSandboxes[0].Ended.Equal(at(3)) {
			t.Fatalf("earlier sandboxes %+v, want the one that died", tl.EarlierSandboxes)
		}
		if ph, ok := phaseOf(tl, PhaseSandboxReplaced); !ok || !ph.Start.Equal(at(0.3)) || !ph.End.Equal(at(4)) {
			t.Errorf("pod.sandbox_replaced %+v, want 0.3..4 s", ph)
		}
		if ph, ok := phaseOf(tl, PhaseSandbox); ok {
			t.Errorf("pod.sandbox %+v for a sandbox not made", ph)
		}
		if !hasInsight(tl, InsightSandboxChanged, "sandbox changed: all containers restarted") {
			t.Errorf("no sandbox-changed insight: %+v", tl.Insights)
		}
	})
}
