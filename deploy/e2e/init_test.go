//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
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
// retried and the pod fails (seed 003); readyline's timeline and trace say
// so, with the init container's exit code, and no start of the app.
func TestInitFailureNever(t *testing.T) {
	t.Parallel()
	s := startAndTrace(t, "init-failure-never.yaml", "init-container-failure-never", PhaseIs(corev1.PodFailed), 4)
	rec, failed := s.rec, s.end
	logTimeline(t, rec)
	st, _ := ContainerStatus(failed.Pod, "fail-on-purpose")
	if st.State.Terminated == nil || st.State.Terminated.ExitCode != 42 {
		t.Errorf("init container state %+v, want terminated with exit code 42", st.State)
	}
	if st.RestartCount != 0 {
		t.Errorf("init container restarted %d times under restartPolicy Never", st.RestartCount)
	}
	if got := ConditionStatus(failed.Pod, corev1.PodInitialized); got != corev1.ConditionFalse {
		t.Errorf("Initialized = %q, want False", got)
	}
	appNeverStarted(t, rec, "app")

	// readyline's timeline: failed, the init container's one attempt with
	// its exit code, the app never created.
	if s.tl.Outcome != correlator.OutcomeFailed {
		t.Errorf("readyline's outcome %s (%s), want failed", s.tl.Outcome, s.tl.Reason)
	}
	checkAgainstAPI(t, s.tl, failed.Pod)
	if c := containerOf(s.tl, "fail-on-purpose"); c == nil || len(c.Attempts) != 1 {
		t.Errorf("fail-on-purpose in readyline's timeline: %+v, want one attempt", c)
	}
	if app := containerOf(s.tl, "app"); app != nil && len(app.Attempts) > 0 {
		t.Errorf("readyline says app ran: %+v", app.Attempts)
	}

	// The trace: status Error, the init container's exit code.
	tree := newSpanTree(t, s.tr)
	root := tree.one("pod.startup")
	if got := tagString(root, "otel.status_code"); got != "ERROR" {
		t.Errorf("root status %q, want ERROR (tags %+v)", got, root.Tags)
	}
	if got := tagString(root, "readyline.outcome"); got != "failed" {
		t.Errorf("outcome %q, want failed", got)
	}
	if got := tagString(tree.one("init fail-on-purpose"), "readyline.container.exit_code"); got != "42" {
		t.Errorf("init container exit code %q, want 42", got)
	}
}

// TestInitFailureRetry: with restartPolicy Always a failing init container is
// retried with back-off, the pod stays Pending and the app never starts (seed 003).
// readyline reports the start at its deadline (StartTimeout), still
// starting, with the retries it saw: each attempt's exit 1 and the
// back-off before it, and why it is stuck.
func TestInitFailureRetry(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ns := newNamespace(t)
	ctx := testContext(t, 4*time.Minute)
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

	// readyline reported the start at its deadline (StartTimeout) and
	// still follows it: the API answers with the start in progress (a
	// snapshot, outcome starting) that says when it was reported.
	var tl *correlator.Timeline
	err = wait.PollUntilContextTimeout(ctx, time.Second, StartTimeout+time.Minute, true, func(ctx context.Context) (bool, error) {
		tl, err = apiclient.FetchTimeline(ctx, d.APIURL, ns, "init-container-failure-retry")
		if errors.Is(err, apiclient.ErrNotFound) {
			return false, nil
		}
		return err == nil && (!tl.ReportedAt.IsZero() || tl.Outcome != correlator.OutcomeStarting), err
	})
	if err != nil {
		t.Fatalf("readyline's report of the start at its deadline: %v (log %s)", err, d.Log)
	}
	logTimelineSummary(t, tl)
	if tl.ReportedAt.IsZero() || (tl.Outcome != correlator.OutcomeStarting && tl.Outcome != correlator.OutcomeTimeout) {
		t.Errorf("readyline's outcome %s, reported at %v: want a start reported at its deadline and still in progress", tl.Outcome, tl.ReportedAt)
	}
	if why := tl.Reason + " " + tl.Waiting; !strings.Contains(why, "fail-on-purpose") {
		t.Errorf("reason %q, waiting %q: want them to name fail-on-purpose", tl.Reason, tl.Waiting)
	}
	c := containerOf(tl, "fail-on-purpose")
	if c == nil || len(c.Attempts) < int(s.RestartCount)+1 {
		t.Fatalf("fail-on-purpose in readyline's timeline: %+v; the API counted %d restarts before its deadline", c, s.RestartCount)
	}
	for i, att := range c.Attempts {
		if att.Finished.IsZero() {
			continue // the attempt running at the deadline
		}
		if att.ExitCode == nil || *att.ExitCode != 1 {
			t.Errorf("attempt %d ended with %s, want exit 1", i, exitCode(att.ExitCode))
		}
		if i > 0 && att.BackOff <= 0 {
			t.Errorf("attempt %d: no back-off before it", i)
		}
	}
	// The API's restarts, by container id, are readyline's attempts.
	if att := attemptOf(tl, "fail-on-purpose", s.ContainerID); att == nil && s.ContainerID != "" {
		t.Errorf("the attempt the API showed (%s) is not in readyline's timeline", s.ContainerID)
	}
	if app := containerOf(tl, "app"); app != nil && len(app.Attempts) > 0 {
		t.Errorf("readyline says app ran: %+v", app.Attempts)
	}
}

// TestInitWaitForService: an init container polls DNS for a Service; the pod
// stays in Init until the Service is created, then starts (seed 003). This also
// exercises the node's cluster DNS (CoreDNS behind kube-proxy). readyline's
// timeline agrees with the API, and puts the init container's end, and what
// made the pod Initialized, after the Service was created.
func TestInitWaitForService(t *testing.T) {
	t.Parallel()
	d := readyline(t)
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
	t.Logf("Initialized %.3fs after the Service was created", initialized.ObservedAt.Sub(created).Seconds())
	if d := initialized.ObservedAt.Sub(created); d > 30*time.Second {
		t.Errorf("Initialized %v after the Service was created; DNS should see it within seconds", d)
	}
	s, _ = ContainerStatus(initialized.Pod, "wait-for-service")
	if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("init container state %+v, want terminated with exit 0", s.State)
	}
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)

	tl, err := d.Timeline(ctx, ns, "init-container-wait-for-service", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Outcome != correlator.OutcomeReady {
		t.Errorf("readyline's outcome %s (%s), want ready", tl.Outcome, tl.Reason)
	}
	checkAgainstAPI(t, tl, ready.Pod)
	if att := attemptOf(tl, "wait-for-service", s.ContainerID); att == nil || att.Finished.Before(created) {
		t.Errorf("the init container's attempt in readyline's timeline %+v: want it finished after the Service was created (%v)", att, created)
	}
	for _, c := range tl.Conditions {
		if c.Type == string(corev1.PodInitialized) && !c.Cause.IsZero() && c.Cause.Before(created.Add(-kernelSlack)) {
			t.Errorf("Initialized caused at %v by %q, before the Service it waited for was created (%v)", c.Cause, c.CauseEvent, created)
		}
	}
}
