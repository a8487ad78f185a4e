//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// The kubelet's own words for the probes below (v1.37: pkg/probe/http
// http.go, cri-client remote_runtime.go ExecSync, prober.go).
const (
	words404     = "HTTP probe failed with statuscode: 404"
	wordsTimeout = `command timed out: "sleep 5" timed out after 1s`
)

// askUntil asks the daemon about ns/name while it starts until ok holds
// of the answer (the kubelet's Events are read on a schedule: at 5 s, 10 s,
// 20 s... of a start, and when asked), within bound; it returns the last
// answer, which must be a start in progress.
func askUntil(t *testing.T, ctx context.Context, d *Daemon, ns, name, uid string, bound time.Duration, ok func(*correlator.Timeline) bool) *correlator.Timeline {
	t.Helper()
	var tl *correlator.Timeline
	err := wait.PollUntilContextTimeout(ctx, time.Second, bound, true, func(ctx context.Context) (bool, error) {
		var err error
		tl, err = apiclient.FetchTimelineUID(ctx, d.APIURL, ns, name, uid)
		if err != nil {
			return false, nil
		}
		return ok(tl), nil
	})
	if tl == nil {
		t.Fatalf("no answer about %s/%s: %v", ns, name, err)
	}
	if err != nil {
		t.Fatalf("%s/%s within %v: waiting %q, reason %q (outcome %s), where the time went %+v", ns, name, bound, tl.Waiting, tl.Reason, tl.Outcome, tl.Breakdown)
	}
	return tl
}

// attemptsOf returns the probe attempts of kind of container name's
// attempts in tl.
func attemptsOf(tl *correlator.Timeline, name string, kind correlator.ProbeKind) []correlator.ProbeAttempt {
	var out []correlator.ProbeAttempt
	for _, c := range tl.Containers {
		if c.Name != name {
			continue
		}
		for _, a := range c.Attempts {
			for _, pa := range a.Probes {
				if pa.Kind == kind {
					out = append(out, pa)
				}
			}
		}
	}
	return out
}

// TestProbeReadiness404: an httpGet readiness probe answered 404. The
// kernel sees the connection accepted, not the status; the kubelet's
// Unhealthy Event says it. While it starts and at its deadline, readyline
// says it in those words, with the kubelet's count, and its time is the
// failing probe's.
func TestProbeReadiness404(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns, pod := startedPod(t, ctx, "web404", `apiVersion: v1
kind: Pod
metadata: {name: web404}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["httpd", "-f", "-p", "8080", "-h", "/tmp"]
    readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 1}
`, func(p *corev1.Pod) bool { return ContainerRunning(p, "web") })
	uid := string(pod.UID)
	// The attempts' connections and the Event arrive each when its source
	// delivers: ask until both are in.
	failed := func(tl *correlator.Timeline) int {
		n := 0
		for _, pa := range attemptsOf(tl, "web", correlator.ProbeReadiness) {
			if pa.Result == correlator.ProbeFailure && pa.Message == words404 {
				n++
			}
		}
		return n
	}
	tl := askUntil(t, ctx, d, ns, "web404", uid, time.Minute, func(tl *correlator.Timeline) bool {
		return strings.Contains(tl.Waiting, "web: readinessProbe failing ×") && strings.Contains(tl.Waiting, words404) && failed(tl) >= 3
	})
	if !hasShare(tl, correlator.ShareProbeFailing) {
		t.Errorf("where the time went %+v has no probe.failing", tl.Breakdown)
	}
	// At its deadline the start is reported in the same words.
	end := waitForOutcome(t, d, ns, "web404", correlator.OutcomeTimeout, StartTimeout+time.Minute)
	if !strings.Contains(end.Reason, "web: readinessProbe failing ×") || !strings.Contains(end.Reason, words404) {
		t.Errorf("the start's reason %q: want the failing probe in the kubelet's words", end.Reason)
	}
}

func hasShare(tl *correlator.Timeline, kind correlator.ShareKind) bool {
	for _, s := range tl.Breakdown {
		if s.Kind == kind && s.Duration > 0 {
			return true
		}
	}
	return false
}

// TestProbeExecTimeout: an exec readiness probe that runs past its
// timeoutSeconds: the runtime kills its command (exit 137) and ExecSync
// returns at the timeout. Each attempt is a timeout, and the waiting line
// says it as the kubelet does.
func TestProbeExecTimeout(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns, pod := startedPod(t, ctx, "slowprobe", `apiVersion: v1
kind: Pod
metadata: {name: slowprobe}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe: {exec: {command: ["sleep", "5"]}, timeoutSeconds: 1, periodSeconds: 2}
`, func(p *corev1.Pod) bool { return ContainerRunning(p, "app") })
	tl := askUntil(t, ctx, d, ns, "slowprobe", string(pod.UID), time.Minute, func(tl *correlator.Timeline) bool {
		return strings.Contains(tl.Waiting, "app: readinessProbe failing ×") && strings.Contains(tl.Waiting, wordsTimeout)
	})
	attempts := attemptsOf(tl, "app", correlator.ProbeReadiness)
	timeouts := 0
	for _, pa := range attempts {
		switch pa.Result {
		case correlator.ProbeTimeout:
			timeouts++
		case correlator.ProbeFailure:
			t.Errorf("an attempt at %v is a failure (exit %v), want a timeout", pa.Start, pa.ExitCode)
		}
	}
	if timeouts == 0 {
		t.Errorf("no attempt told a timeout: %+v", attempts)
	}
}

// TestProbeLivenessKillAfterReady: an app Ready at once, whose liveness
// probe starts failing later; it traps SIGTERM and exits 0 when the kubelet
// kills it. After the start, the kill is told by the kubelet's action and
// its Killing Event, and the return to Ready is measured.
func TestProbeLivenessKillAfterReady(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns, rec := startPod(t, ctx, "liveafter", `apiVersion: v1
kind: Pod
metadata: {name: liveafter}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 4; touch /tmp/sick; while true; do sleep 0.2; done"]
    livenessProbe: {exec: {command: ["sh", "-c", "test ! -e /tmp/sick"]}, periodSeconds: 1, failureThreshold: 2}
`)
	ev, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 1 && cs.Ready && ConditionTrue(corev1.PodReady)(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ev.Pod.UID)
	want := "app killed by its livenessProbe (2 failures), restarted"
	var tl *correlator.Timeline
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		tl, err = apiclient.FetchTimelineUID(ctx, d.APIURL, ns, "liveafter", uid)
		return err == nil && tl.After != nil && len(tl.After.Recoveries) > 0 && tl.After.Recoveries[0].Cause == want, nil
	})
	if err != nil {
		t.Fatalf("no return to Ready caused by %q: %v, after %s", want, err, afterOf(tl))
	}
	if tl.Outcome != correlator.OutcomeReady {
		t.Errorf("the start's outcome %s, want ready: what came after is not the start", tl.Outcome)
	}
	r := tl.After.Recoveries[0]
	if r.CauseKind != correlator.CauseLivenessProbe || r.Duration() <= 0 {
		t.Errorf("recovery %+v", r)
	}
	if s := tl.After.Summary(tl.Start); !strings.Contains(s, "app killed by its livenessProbe (2 failures) at +") {
		t.Errorf("after the start: %q, want the kill told by the kubelet's action", s)
	}
	for _, e := range tl.After.Events {
		if e.Container == "app" && e.What == "exited 0" {
			t.Errorf("the kill is listed as %q", e.What)
		}
	}
}

func afterOf(tl *correlator.Timeline) string {
	if tl == nil || tl.After == nil {
		return "none"
	}
	return fmt.Sprintf("%+v", *tl.After)
}

// TestProbeStartupNeverPasses: a sidecar whose startupProbe never passes
// (failureThreshold 10): asked while its second attempt runs, readyline
// says the probe failing now and the one kill so far, and calls no running
// attempt killed.
func TestProbeStartupNeverPasses(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns, pod := startedPod(t, ctx, "mesh", `apiVersion: v1
kind: Pod
metadata: {name: mesh}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: proxy
    image: localhost/busybox:local
    imagePullPolicy: Never
    restartPolicy: Always
    command: ["sleep", "3600"]
    startupProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 10}
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == "proxy" && cs.RestartCount >= 1 && cs.State.Running != nil {
				return true
			}
		}
		return false
	})
	tl := askUntil(t, ctx, d, ns, "mesh", string(pod.UID), 30*time.Second, func(tl *correlator.Timeline) bool {
		return strings.Contains(tl.Waiting, "sidecar proxy: startupProbe failing ×") &&
			strings.Contains(tl.Waiting, "killed once after its startupProbe failed 10 times in a row")
	})
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.KilledBy != "" && a.Finished.IsZero() && (a.Process == nil || a.Process.Exit.IsZero()) {
				t.Errorf("%s attempt %d runs and is called killed by its %s", c.Name, a.Attempt, a.KilledBy)
			}
		}
	}
}
