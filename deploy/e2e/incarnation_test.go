//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
	"github.com/readyline/readyline/exporter/apiclient"
)

// rootSpans returns the pod.startup spans of trace traceID that have no
// parent.
func rootSpans(ctx context.Context, t *testing.T, traceID string) []jaeger.Span {
	t.Helper()
	tr, err := env.Jaeger.Trace(ctx, traceID)
	if err != nil {
		t.Fatalf("trace %s: %v", traceID, err)
	}
	var roots []jaeger.Span
	for _, s := range tr.Spans {
		if s.OperationName == "pod.startup" && !hasParent(s) {
			roots = append(roots, s)
		}
	}
	return roots
}

// startPod applies a one-pod manifest in a new namespace and returns the
// namespace and the recorder of pod name.
func startPod(t *testing.T, ctx context.Context, name, manifest string) (string, *PodRecorder) {
	t.Helper()
	ns := newNamespace(t)
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	return ns, rec
}

// crashloopManifest is pod crashloop, whose container app exits 3 after a
// second, again and again, and is never Ready.
const crashloopManifest = `apiVersion: v1
kind: Pod
metadata: {name: crashloop}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "sleep 1; exit 3"]
    readinessProbe: # never Ready: without it the container is Ready for its one second
      exec: {command: ["false"]}
      periodSeconds: 1
`

// TestIncarnationCrashLoopIsOneStart: a container that crash-loops for five
// minutes is one pod start, reported at the start timeout, and never a second
// one however many NotReady updates its restarts bring. Before, the pod was
// forgotten Timeout + OrphanTTL (90 s here) after its start ended and its next
// restart opened a new start in the same trace, every 2-3 minutes.
func TestIncarnationCrashLoopIsOneStart(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 8*time.Minute)
	const name = "crashloop"
	ns, rec := startPod(t, ctx, name, crashloopManifest)
	ev, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 1
	})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ev.Pod.UID)
	loopUntil := time.Now().Add(5 * time.Minute)
	for time.Now().Before(loopUntil) {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Second):
		}
	}
	last, _ := ContainerStatus(rec.Events()[len(rec.Events())-1].Pod, "app")
	if last.RestartCount < 4 {
		t.Fatalf("the container restarted %d times in five minutes, want a real crash loop (>= 4)", last.RestartCount)
	}
	// The start as it was reported at its deadline (asked for the pod, the
	// daemon answers with the start in progress).
	tl, err := (&apiclient.Client{BaseURL: d.APIURL}).KeptTimeline(ctx, ns, name, uid)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Outcome != correlator.OutcomeTimeout || tl.End.Sub(tl.Start) > StartTimeout+5*time.Second {
		t.Errorf("the start: %s after %v, want the report at the %v deadline", tl.Outcome, tl.End.Sub(tl.Start), StartTimeout)
	}
	// Why it is stuck: the kubelet's waiting reason, and the exit code.
	var waited []string
	for _, c := range tl.Containers {
		for _, w := range c.Waiting {
			waited = append(waited, c.Name+":"+w.Reason)
		}
	}
	// At the deadline app is in its back-off ("CrashLoopBackOff (...), last
	// exit 3"), running ("running, not ready, last exit 3") or just exited
	// ("exited with code 3").
	if !slices.Contains(waited, "app:CrashLoopBackOff") || !strings.Contains(tl.Reason, "app: ") ||
		!(strings.Contains(tl.Reason, "last exit 3") || strings.Contains(tl.Reason, "exited with code 3")) {
		t.Errorf("report reason %q, waiting %v: want app's CrashLoopBackOff and its exit code 3", tl.Reason, waited)
	}
	roots := rootSpans(ctx, t, TraceIDFromPodUID(uid))
	if len(roots) != 1 {
		for _, r := range roots {
			t.Logf("pod.startup %s..%s outcome %s", start(r).Format("15:04:05.000"), end(r).Format("15:04:05.000"), tagString(r, "readyline.outcome"))
		}
		t.Fatalf("%d pod.startup root spans after %d restarts over five minutes, want exactly 1", len(roots), last.RestartCount)
	}
	t.Logf("%d restarts, one start: %s after %v (%s)", last.RestartCount, tl.Outcome, tl.End.Sub(tl.Start).Round(time.Millisecond), tl.Reason)
}

// TestIncarnationReadinessFlapIsNoSecondStart: a pod Ready in seconds whose
// readiness probe fails 100 s later (after the old Timeout + OrphanTTL) has
// one start, ready, and nothing else in its trace. Before, its NotReady
// update opened a second start that timed out 60 s later.
func TestIncarnationReadinessFlapIsNoSecondStart(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 6*time.Minute)
	const name = "flap"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: flap}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "touch /tmp/ready; sleep 100; rm /tmp/ready; sleep 3600"]
    readinessProbe:
      exec: {command: ["test", "-f", "/tmp/ready"]}
      periodSeconds: 2
      failureThreshold: 1
`)
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ready.Pod.UID)
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReady) == corev1.ConditionFalse && p.Status.StartTime != nil && time.Since(ready.ObservedAt) > 30*time.Second
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("Ready at %s, NotReady again after %v", ready.ObservedAt.Format("15:04:05.000"), time.Since(ready.ObservedAt).Round(time.Second))
	// A second start, had the NotReady update opened one, would be
	// reported StartTimeout after the daemon saw that update, by the
	// daemon's own clock (After.NotReadySince to After.AsOf), and in Jaeger
	// seconds later (10 s of slack): the pod's start is asked for until
	// that clock is past it, or until the answer is another start.
	var tl *correlator.Timeline
	for deadline := time.Now().Add(StartTimeout + time.Minute); ; time.Sleep(time.Second) {
		if tl, err = d.Timeline(ctx, ns, name, time.Minute); err != nil {
			t.Fatal(err)
		}
		af := tl.After
		past := af != nil && !af.NotReadySince.IsZero() && af.AsOf.Sub(af.NotReadySince) > StartTimeout+10*time.Second
		if tl.Outcome != correlator.OutcomeReady || past {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's clock never went %v past its NotReady update: what came after the start %+v", StartTimeout+10*time.Second, af)
		}
	}
	if tl.Outcome != correlator.OutcomeReady || tl.End.Sub(tl.Start) > 30*time.Second {
		t.Errorf("the start: %s after %v, want ready within seconds", tl.Outcome, tl.End.Sub(tl.Start))
	}
	roots := rootSpans(ctx, t, TraceIDFromPodUID(uid))
	if len(roots) != 1 || tagString(roots[0], "readyline.outcome") != "ready" {
		var got []string
		for _, r := range roots {
			got = append(got, fmt.Sprintf("%s %v", tagString(r, "readyline.outcome"), dur(r)))
		}
		t.Fatalf("pod.startup root spans: %v, want one, ready", got)
	}
}

// TestIncarnationReadyAfterTheDeadline: a pod whose readiness probe waits
// 75 s is reported still starting at the 60 s start timeout, and its Ready
// completes the same start: the timeline says ready after ~76 s, reported
// at the deadline, and the trace keeps one pod.startup root with one
// pod.startup.completed span under it, ending at Ready.
func TestIncarnationReadyAfterTheDeadline(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 5*time.Minute)
	const name = "slow-ready"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: slow-ready}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      initialDelaySeconds: 75
      periodSeconds: 2
`)
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	var tl *correlator.Timeline
	deadline := time.Now().Add(time.Minute)
	var fetched time.Time
	for {
		if tl, err = d.Timeline(ctx, ns, name, time.Minute); err != nil {
			t.Fatal(err)
		}
		fetched = time.Now()
		if tl.Outcome == correlator.OutcomeReady || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := tl.End.Sub(tl.Start)
	if tl.Outcome != correlator.OutcomeReady || took < 75*time.Second || tl.ReportedAt.IsZero() {
		t.Fatalf("the start: %s after %v, reported at %v; want ready after > 75 s, reported at the deadline", tl.Outcome, took, tl.ReportedAt)
	}
	// Reported at the deadline, not at Ready: after StartTimeout, before
	// the end (how soon after the deadline is the daemon's tick's and the
	// scheduler's).
	if r := tl.ReportedAt.Sub(tl.Start); r < StartTimeout || !tl.ReportedAt.Before(tl.End) {
		t.Errorf("reported %v after creation, ended %v after it: want reported at the %v deadline, before the end", r, took, StartTimeout)
	}
	// The timeline ends at Ready as the daemon's watch saw the update the
	// test's saw: not before the kubelet's lastTransitionTime (1 s
	// precision), not after the test asked for the timeline.
	readyCond, _ := Condition(ready.Pod, corev1.PodReady)
	if tl.End.Before(readyCond.LastTransitionTime.Time) || tl.End.After(fetched) {
		t.Errorf("timeline ends at %v, outside [%v, %v]: Ready's lastTransitionTime and the fetch of the timeline", tl.End, readyCond.LastTransitionTime.Time, fetched)
	}
	traceID := TraceIDFromPodUID(string(ready.Pod.UID))
	var tr *jaeger.Trace
	for {
		if tr, err = env.Jaeger.Trace(ctx, traceID); err == nil {
			if _, ok := tr.SpanByName("pod.startup.completed"); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod.startup.completed span in trace %s (%v)", traceID, err)
		}
		time.Sleep(time.Second)
	}
	st := newSpanTree(t, tr)
	root := st.one("pod.startup")
	if tagString(root, "readyline.partial") != "true" || len(root.References) != 0 {
		t.Errorf("root span: partial=%q refs=%v, want the deadline's report as the one root", tagString(root, "readyline.partial"), root.References)
	}
	done := st.child(root, "pod.startup.completed")
	if got := tagString(done, "readyline.outcome"); got != "ready" {
		t.Errorf("completion outcome %q, want ready", got)
	}
	if d := end(done).Sub(tl.End).Abs(); d > time.Millisecond {
		t.Errorf("completion ends %v from the timeline's Ready", d)
	}
	t.Logf("reported still starting at +%v, Ready at +%v; trace %s: root %v, completion %v",
		tl.ReportedAt.Sub(tl.Start).Round(time.Millisecond), took.Round(time.Millisecond), traceID, dur(root), dur(done))
}
