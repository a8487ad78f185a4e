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
