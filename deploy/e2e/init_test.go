//go:build e2e

package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// appNeverStarted fails the test if any recorded event shows the app container
// running or terminated.
func appNeverStarted(t *testing.T, rec *PodRecorder, app string) {
	t.Helper()
	if ev, ok := rec.First(func(p *corev1.Pod) bool {
		s, ok := ContainerStatus(p, app)
		return ok && (s.State.Running != nil || s.State.Terminated != nil || s.RestartCount > 0)
	}); ok {
		t.Errorf("container %s started although its init container failed: %s", app, DescribeStatus(ev.Pod))
	}
}

// TestInitFailureNever: with restartPolicy Never a failing init container is not
// retried and the pod fails (seed 003).
func TestInitFailureNever(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 2*time.Minute)
	rec := recordPod(t, ns, "init-container-failure-never")
	applyExample(t, ns, "init-failure-never.yaml")

	failed, err := rec.WaitFor(ctx, PhaseIs(corev1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)
	s, _ := ContainerStatus(failed.Pod, "fail-on-purpose")
	if s.State.Terminated == nil || s.State.Terminated.ExitCode != 42 {
		t.Errorf("init container state %+v, want terminated with exit code 42", s.State)
	}
	if s.RestartCount != 0 {
		t.Errorf("init container restarted %d times under restartPolicy Never", s.RestartCount)
	}
	if got := ConditionStatus(failed.Pod, corev1.PodInitialized); got != corev1.ConditionFalse {
		t.Errorf("Initialized = %q, want False", got)
	}
	appNeverStarted(t, rec, "app")
}

// TestInitFailureRetry: with restartPolicy Always a failing init container is
// retried with back-off, the pod stays Pending and the app never starts (seed 003).
func TestInitFailureRetry(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 3*time.Minute)
	rec := recordPod(t, ns, "init-container-failure-retry")
	applyExample(t, ns, "init-failure-retry.yaml")

	retried, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		s, ok := ContainerStatus(p, "fail-on-purpose")
		return ok && s.RestartCount >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)
	s, _ := ContainerStatus(retried.Pod, "fail-on-purpose")
	if s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("last termination %+v, want exit code 1", s.LastTerminationState)
	}
	if ev, ok := rec.First(func(p *corev1.Pod) bool { return p.Status.Phase != "" && p.Status.Phase != corev1.PodPending }); ok {
		t.Errorf("pod left Pending while its init container kept failing: %s", DescribeStatus(ev.Pod))
	}
	if got := ConditionStatus(retried.Pod, corev1.PodInitialized); got != corev1.ConditionFalse {
		t.Errorf("Initialized = %q, want False", got)
	}
	appNeverStarted(t, rec, "app")
}

// TestInitWaitForService: an init container polls DNS for a Service; the pod
// stays in Init until the Service is created, then starts (seed 003). This also
// exercises the node's cluster DNS (CoreDNS behind kube-proxy).
func TestInitWaitForService(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 3*time.Minute)
	rec := recordPod(t, ns, "init-container-wait-for-service")
	applyExample(t, ns, "init-wait-for-service.yaml")

	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "wait-for-service") }); err != nil {
		t.Fatal(err)
	}
	// Without the Service the pod must stay in Init.
	const hold = 10 * time.Second
	time.Sleep(hold)
	events := rec.Events()
	waiting := events[len(events)-1].Pod
	s, _ := ContainerStatus(waiting, "wait-for-service")
	if ConditionStatus(waiting, corev1.PodInitialized) == corev1.ConditionTrue || s.State.Running == nil || s.RestartCount != 0 {
		t.Fatalf("without the Service, after %v: %s; want the init container still running its loop", hold, DescribeStatus(waiting))
	}

	created := time.Now()
	applyExample(t, ns, "init-dependency-service.yaml")
	initialized, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodInitialized))
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)
	t.Logf("Initialized %.3fs after the Service was created", initialized.ObservedAt.Sub(created).Seconds())
	if d := initialized.ObservedAt.Sub(created); d > 30*time.Second {
		t.Errorf("Initialized %v after the Service was created; DNS should see it within seconds", d)
	}
	s, _ = ContainerStatus(initialized.Pod, "wait-for-service")
	if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("init container state %+v, want terminated with exit 0", s.State)
	}
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "app") }); err != nil {
		t.Fatal(err)
	}
}
