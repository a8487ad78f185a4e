//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// TestStuckImageNeverPull: a container whose image is not on the node and
// may not be pulled is stuck in ErrImageNeverPull; the report at the start
// timeout names the container and the kubelet's reason and message instead
// of a bare "not Ready within".
func TestStuckImageNeverPull(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	const name = "never-pull"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: never-pull}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/not-on-this-node:missing
    imagePullPolicy: Never
`)
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerWaitingReason(p, "app") == "ErrImageNeverPull" }); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, name, correlator.OutcomeTimeout, StartTimeout+time.Minute)
	if !tl.Partial || !strings.Contains(tl.Reason, "app: ErrImageNeverPull") || !strings.Contains(tl.Reason, "not-on-this-node") {
		t.Errorf("report: partial=%v reason %q; want the container, ErrImageNeverPull and the kubelet's message", tl.Partial, tl.Reason)
	}
	t.Logf("reason: %s", tl.Reason)
}

// TestStuckDeadlineExceeded: a pod the kubelet fails at its
// activeDeadlineSeconds is failed by DeadlineExceeded, not by the exit code
// of the container the kubelet killed for it.
func TestStuckDeadlineExceeded(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	const name = "deadline"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 8
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
`)
	failed, err := rec.WaitFor(ctx, PhaseIs(corev1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	if failed.Pod.Status.Reason != "DeadlineExceeded" {
		t.Fatalf("the kubelet failed the pod with %q, want DeadlineExceeded (test setup)", failed.Pod.Status.Reason)
	}
	tl := waitForOutcome(t, d, ns, name, correlator.OutcomeFailed, time.Minute)
	if !strings.HasPrefix(tl.Reason, "DeadlineExceeded") || strings.Contains(tl.Reason, "exited with code") {
		t.Errorf("failure reason %q, want DeadlineExceeded and its message, not the killed container's exit", tl.Reason)
	}
	t.Logf("reason: %s", tl.Reason)
}

// waitForOutcome polls the daemon's kept (exported) timeline of ns/name
// until its outcome is want, for up to timeout: a start reported at its
// deadline is kept with outcome timeout while it goes on.
func waitForOutcome(t *testing.T, d *Daemon, ns, name string, want correlator.Outcome, timeout time.Duration) *correlator.Timeline {
	t.Helper()
	ctx := testContext(t, timeout+time.Minute)
	deadline := time.Now().Add(timeout)
	api := &apiclient.Client{BaseURL: d.APIURL}
	for {
		tl, err := api.KeptTimeline(ctx, ns, name, "")
		if errors.Is(err, apiclient.ErrNotFound) {
			if time.Now().After(deadline) {
				t.Fatalf("no kept timeline of %s/%s within %v", ns, name, timeout)
			}
			time.Sleep(time.Second)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if tl.Outcome == want {
			return tl
		}
		if time.Now().After(deadline) {
			t.Fatalf("timeline of %s/%s: %s (%s), want %s within %v", ns, name, tl.Outcome, tl.Reason, want, timeout)
		}
		time.Sleep(time.Second)
	}
}
