//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// The pods of issue 24, each written for a case the rules were not written
// for, asked about while they start: readyline answers at once, says what
// the pod waits on in the kubelet's own words, and where the time went.

// explainBudget is how long the daemon may take to answer about a start in
// progress, by its own clock (its Server-Timing): it bounds the wait for its
// loop at 1.5 s (exporter.Find), and the rest is the handler's own work.
// The client's round trip, which 2 busy cores running the tests in
// parallel stretch, is logged.
const explainBudget = 2 * time.Second

// findTiming is an HTTP transport that keeps the daemon's own measure of
// its last answer (apiclient.FindTook).
type findTiming struct {
	took time.Duration
	ok   bool
}

func (f *findTiming) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		f.took, f.ok = apiclient.FindTook(resp.Header)
	}
	return resp, err
}

// askWhileStarting asks the daemon's API, then `readyline explain`, about
// ns/name, which must still be starting: it returns the timeline and the
// text. It fails the test when the daemon took over explainBudget to
// answer, the answer is not of this pod (uid), or is not a start in
// progress.
func askWhileStarting(t *testing.T, ctx context.Context, d *Daemon, ns, name, uid string) (*correlator.Timeline, string) {
	t.Helper()
	// The test's own watch may have seen the pod before the daemon's did
	// (two watches, each delivered when it is): wait for the daemon to
	// know this pod, by its UID, before timing an answer.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := apiclient.FetchTimelineUID(ctx, d.APIURL, ns, name, uid)
		return !errors.Is(err, apiclient.ErrNotFound), nil
	}); err != nil {
		t.Fatalf("the daemon did not know %s/%s (uid %s) within 30 s of the test's watch: %v", ns, name, uid, err)
	}
	timing := &findTiming{}
	asked := time.Now()
	tl, err := (&apiclient.Client{BaseURL: d.APIURL, HTTP: &http.Client{Transport: timing}}).Timeline(ctx, ns, name, uid)
	took := time.Since(asked)
	if err != nil {
		t.Fatalf("asking about %s/%s while it starts: %v", ns, name, err)
	}
	t.Logf("%s/%s answered in %v (the daemon's part %v): %s, waiting: %s", ns, name, took.Round(time.Millisecond),
		timing.took.Round(time.Millisecond), tl.Outcome, tl.Waiting)
	if tl.Pod.UID != uid {
		t.Fatalf("answered with pod uid %s, want %s", tl.Pod.UID, uid)
	}
	if !timing.ok {
		t.Errorf("the answer says nothing of how long the daemon took (no %s)", apiclient.ServerTimingHeader)
	} else if timing.took > explainBudget {
		t.Errorf("the daemon took %v to answer, over %v", timing.took, explainBudget)
	}
	if tl.Outcome != correlator.OutcomeStarting || tl.AsOf.IsZero() {
		t.Fatalf("outcome %s as of %v, want a start in progress", tl.Outcome, tl.AsOf)
	}
	var sum time.Duration
	for _, s := range tl.Breakdown {
		sum += s.Duration
	}
	if sum != tl.End.Sub(tl.Start) {
		t.Errorf("where the time went sums to %v, the start so far is %v: %+v", sum, tl.End.Sub(tl.Start), tl.Breakdown)
	}
	out, err := exec.CommandContext(ctx, d.Bin, "explain", "--api-addr", strings.TrimPrefix(d.APIURL, "http://"),
		"--uid", uid, ns+"/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("readyline explain: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"STARTING for", "waiting: ", "where the time went"} {
		if !strings.Contains(text, want) {
			t.Errorf("readyline explain lacks %q:\n%s", want, text)
		}
	}
	return tl, text
}

// firstShare reports whether most of the start's time so far went to kind.
// A wait only becomes the largest share once it has lasted longer than the
// others (scheduling alone took 435 ms on CI's busy cores, when the kubelet's
// FailedMount came 203 ms into the wait): the tests wait until it is, then
// ask with every check.
func firstShare(tl *correlator.Timeline, kind correlator.ShareKind) bool {
	return len(tl.Breakdown) > 0 && tl.Breakdown[0].Kind == kind
}

// wantFirstShare fails unless most of the start's time went to kind.
func wantFirstShare(t *testing.T, tl *correlator.Timeline, kind correlator.ShareKind) {
	t.Helper()
	if !firstShare(tl, kind) {
		t.Errorf("where the time went: %+v, want %s (%s) first", tl.Breakdown, kind, kind.Name())
	}
}

// startedPod applies manifest in a new namespace, waits until cond holds of
// pod name and returns the namespace and the pod.
func startedPod(t *testing.T, ctx context.Context, name, manifest string, cond func(*corev1.Pod) bool) (string, *corev1.Pod) {
	t.Helper()
	ns, rec := startPod(t, ctx, name, manifest)
	ev, err := rec.WaitFor(ctx, cond)
	if err != nil {
		t.Fatal(err)
	}
	return ns, ev.Pod
}

func TestExplainWhileStartingPullFails(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, pod := startedPod(t, ctx, "nopull", `apiVersion: v1
kind: Pod
metadata: {name: nopull}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "127.0.0.1:5000/readyline-e2e/never-there:nope", command: ["sleep", "3600"]}
`, func(p *corev1.Pod) bool { return ContainerWaitingReason(p, "app") == "ImagePullBackOff" })
	askUntil(t, ctx, d, ns, "nopull", string(pod.UID), 30*time.Second, func(tl *correlator.Timeline) bool {
		return firstShare(tl, correlator.SharePullBackOff)
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "nopull", string(pod.UID))
	for _, want := range []string{"app: ImagePullBackOff after", "failed pull", "never-there:nope"} {
		if !strings.Contains(tl.Waiting, want) {
			t.Errorf("waiting %q lacks %q", tl.Waiting, want)
		}
	}
	wantFirstShare(t, tl, correlator.SharePullBackOff)
}

func TestExplainWhileStartingVolumeMissing(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, rec := startPod(t, ctx, "nomount", `apiVersion: v1
kind: Pod
metadata: {name: nomount}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"], volumeMounts: [{name: cfg, mountPath: /cfg}]}
  volumes:
  - {name: cfg, configMap: {name: not-in-this-namespace}}
`)
	ev, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet's FailedMount comes within seconds; the daemon reads the
	// pod's Events when it is asked (and on its own after 5 s).
	askUntil(t, ctx, d, ns, "nomount", string(ev.Pod.UID), 30*time.Second, func(tl *correlator.Timeline) bool {
		return strings.Contains(tl.Waiting, `volume cfg: configmap "not-in-this-namespace" not found`) &&
			firstShare(tl, correlator.ShareWaitVolumes)
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "nomount", string(ev.Pod.UID))
	if !strings.Contains(tl.Waiting, `volume cfg: configmap "not-in-this-namespace" not found`) {
		t.Errorf("waiting %q: want the kubelet's FailedMount for volume cfg", tl.Waiting)
	}
	wantFirstShare(t, tl, correlator.ShareWaitVolumes)
}

func TestExplainWhileStartingNoRuntimeHandler(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	handler := "e2e-missing-" + strings.ToLower(fmt.Sprint(time.Now().UnixNano()%100000))
	rc := `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: ` + handler + `}
handler: ` + handler + `
`
	objs, err := env.Apply(ctx, "", []byte(rc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.DeleteAndWait(context.Background(), time.Minute, objs...) })
	ns, pod := startedPod(t, ctx, "nohandler", `apiVersion: v1
kind: Pod
metadata: {name: nohandler}
spec:
  terminationGracePeriodSeconds: 1
  runtimeClassName: `+handler+`
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, func(p *corev1.Pod) bool {
		return p.Spec.NodeName != "" && ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionFalse
	})
	askUntil(t, ctx, d, ns, "nohandler", string(pod.UID), 40*time.Second, func(tl *correlator.Timeline) bool {
		return strings.Contains(tl.Waiting, `no runtime for "`+handler+`" is configured`) &&
			firstShare(tl, correlator.ShareSandboxFailed)
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "nohandler", string(pod.UID))
	for _, want := range []string{"RunPodSandbox failed", `no runtime for "` + handler + `" is configured`} {
		if !strings.Contains(tl.Waiting, want) {
			t.Errorf("waiting %q lacks %q (the runtime's error, from the kubelet's FailedCreatePodSandBox)", tl.Waiting, want)
		}
	}
	wantFirstShare(t, tl, correlator.ShareSandboxFailed)
}

func TestExplainWhileStartingInitOOMKilled(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, pod := startedPod(t, ctx, "oominit", `apiVersion: v1
kind: Pod
metadata: {name: oominit}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: hog
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "dd if=/dev/zero of=/dev/null bs=64M count=1"]
    resources: {limits: {memory: 20Mi}}
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "hog")
		return ok && cs.RestartCount >= 2
	})
	askUntil(t, ctx, d, ns, "oominit", string(pod.UID), 30*time.Second, func(tl *correlator.Timeline) bool {
		return firstShare(tl, correlator.ShareBackOff)
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "oominit", string(pod.UID))
	if !strings.Contains(tl.Waiting, correlator.ContainerLabel(correlator.KindInit, "hog")) || !strings.Contains(tl.Waiting, "OOMKilled") {
		t.Errorf("waiting %q: want init hog and OOMKilled", tl.Waiting)
	}
	wantFirstShare(t, tl, correlator.ShareBackOff)
}

// TestExplainGracefulAppKilledByStartupProbe: an app that traps SIGTERM and
// exits 0, killed by its startupProbe: every attempt is the kubelet's kill,
// whatever the exit code.
func TestExplainGracefulAppKilledByStartupProbe(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, pod := startedPod(t, ctx, "graceful", `apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    startupProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 3}
`, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 2 && ContainerWaitingReason(p, "app") == "CrashLoopBackOff"
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "graceful", string(pod.UID))
	if !strings.Contains(tl.Waiting, "after its startupProbe failed 3 times in a row; CrashLoopBackOff") {
		t.Errorf("waiting %q: want the kubelet's kills for the startupProbe", tl.Waiting)
	}
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.ExitCode != nil && *a.ExitCode == 0 && a.KilledBy != correlator.ProbeStartup {
				t.Errorf("attempt %d exited 0 and is not told killed by its startupProbe (killed by %q)", a.Attempt, a.KilledBy)
			}
		}
	}
}

// TestExplainPostStartHookKill: a failing postStart hook gets an app that
// exits 0 on SIGTERM killed.
func TestExplainPostStartHookKill(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, pod := startedPod(t, ctx, "hookkill", `apiVersion: v1
kind: Pod
metadata: {name: hookkill}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
    lifecycle: {postStart: {exec: {command: ["sh", "-c", "exit 2"]}}}
`, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 1 && ContainerWaitingReason(p, "app") == "CrashLoopBackOff"
	})
	tl, _ := askWhileStarting(t, ctx, d, ns, "hookkill", string(pod.UID))
	if !strings.Contains(tl.Waiting, "after its postStart hook failed") {
		t.Errorf("waiting %q: want the kill for the failed postStart hook", tl.Waiting)
	}
}

// TestExplainCrashLoopAfterReady: no readiness probe, so Ready for a second,
// then a crash loop: the start is Ready, and what came after it says the
// exits, the restarts and the return to Ready, measured.
func TestExplainCrashLoopAfterReady(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ns, rec := startPod(t, ctx, "crashafter", `apiVersion: v1
kind: Pod
metadata: {name: crashafter}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sh", "-c", "sleep 2; exit 3"]}
`)
	ev, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, "crashafter", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Pod.UID != string(ev.Pod.UID) || tl.Outcome != correlator.OutcomeReady {
		t.Fatalf("start of %s: %s, want this pod's, Ready", tl.Pod.UID, tl.Outcome)
	}
	then := tl.After.Summary(tl.Start)
	for _, want := range []string{"then: app exited 3 at +", "app restarted"} {
		if !strings.Contains(then, want) {
			t.Errorf("after the start: %q lacks %q", then, want)
		}
	}
	for _, a := range tl.Containers[0].Attempts {
		if a.Process != nil && !a.Process.Exit.IsZero() {
			t.Errorf("the start's attempt ends at %v after Ready: the start ends at Ready", a.Process.Exit)
		}
	}
	if tl.After == nil || len(tl.After.Recoveries) == 0 {
		t.Fatalf("no return to Ready measured: %+v", tl.After)
	}
	r := tl.After.Recoveries[0]
	var sum time.Duration
	for _, s := range r.Breakdown {
		sum += s.Duration
	}
	if r.Cause != "app exited 3" || sum != r.Duration() {
		t.Errorf("recovery cause %q, breakdown %v of %v: %+v", r.Cause, sum, r.Duration(), r.Breakdown)
	}
	// The return is a span of the pod's trace.
	trace, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(tl.Pod.UID), 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if _, ok := trace.SpanByName(exporter.SpanPodReadyAgain); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s span in the pod's trace", exporter.SpanPodReadyAgain)
		}
		if trace, err = env.Jaeger.Trace(ctx, TraceIDFromPodUID(tl.Pod.UID)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExplainEndsRightAfterReady: a container that exits a second after it
// is Ready, restartPolicy Never: the start is Ready, then the phase goes
// Failed (exit 7) or Succeeded (exit 0, a pod that completes).
func TestExplainEndsRightAfterReady(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		exit  int
		phase corev1.PodPhase
	}{
		{"failafter", 7, corev1.PodFailed},
		{"doneafter", 0, corev1.PodSucceeded},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			t.Parallel()
			d := readyline(t)
			ctx := testContext(t, 3*time.Minute)
			ns, rec := startPod(t, ctx, tc.name, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - {name: app, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sh", "-c", "sleep 1; exit %d"]}
`, tc.name, tc.exit))
			if _, err := rec.WaitFor(ctx, PhaseIs(tc.phase)); err != nil {
				t.Fatal(err)
			}
			phase := "phase " + string(tc.phase)
			var then string
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Second) {
				tl, err := d.Timeline(ctx, ns, tc.name, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if tl.Outcome != correlator.OutcomeReady {
					t.Fatalf("outcome %s (%s), want the start Ready", tl.Outcome, tl.Reason)
				}
				if then = tl.After.Summary(tl.Start); strings.Contains(then, phase) || time.Now().After(deadline) {
					break
				}
			}
			if exited := fmt.Sprintf("app exited %d at +", tc.exit); !strings.Contains(then, exited) || !strings.Contains(then, phase) {
				t.Errorf("after the start: %q, want %q and %q", then, exited, phase)
			}
		})
	}
}

// TestExplainEvictedWhileStarting: a pod that fills its emptyDir past its
// sizeLimit before it is Ready (its readiness probe never succeeds) is
// evicted; it exits 0 on SIGTERM, so its phase is Succeeded with no reason
// in its status: only the kubelet's Evicted Event says why.
func TestExplainEvictedWhileStarting(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns, rec := startPod(t, ctx, "evicted", `apiVersion: v1
kind: Pod
metadata: {name: evicted}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; dd if=/dev/zero of=/scratch/f bs=1M count=8; while true; do sleep 0.2; done"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
    # Every 10 s, not 2: the kubelet's recorder drops a pod's Warning
    # Events past 25 (the eviction can take a minute to come), and with
    # them the Evicted Event (correlator TestEvictionTheKubeletDidNotTell).
    readinessProbe: {exec: {command: ["false"]}, periodSeconds: 10}
  volumes:
  - {name: scratch, emptyDir: {sizeLimit: 1Mi}}
`)
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}); err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, "evicted", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Outcome != correlator.OutcomeFailed || !strings.Contains(tl.Reason, "Evicted") || !strings.Contains(tl.Reason, `EmptyDir volume "scratch"`) {
		t.Errorf("outcome %s, reason %q: want failed, Evicted and the kubelet's message", tl.Outcome, tl.Reason)
	}
}

// TestExplainPullInFlight: a PullImage from a registry that accepts the
// runtime's connection and never answers stays in flight; explain draws it
// open to now, and says the pod waits on it.
func TestExplainPullInFlight(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	image := ln.Addr().String() + "/readyline-e2e/stalled:never"
	ns, pod := startedPod(t, ctx, "stalled", `apiVersion: v1
kind: Pod
metadata: {name: stalled}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: "`+image+`", command: ["sleep", "3600"]}
`, func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionTrue
	})
	var tl *correlator.Timeline
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		tl, _ = askWhileStarting(t, ctx, d, ns, "stalled", string(pod.UID))
		if strings.Contains(tl.Waiting, "PullImage "+image+" for app: running for") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(tl.Waiting, "PullImage "+image+" for app: running for") {
		t.Fatalf("waiting %q: want the PullImage in flight (in flight: %+v)", tl.Waiting, tl.InFlight)
	}
	var pull *correlator.InFlightCall
	for i := range tl.InFlight {
		if tl.InFlight[i].Method == "runtime.v1.ImageService/PullImage" {
			pull = &tl.InFlight[i]
		}
	}
	if pull == nil || pull.Image != image || pull.Start.After(tl.AsOf) {
		t.Fatalf("in flight %+v, want the PullImage of %s, begun before %v", tl.InFlight, image, tl.AsOf)
	}
	// The registry never answered: no byte came, and after 10 s the pull
	// says so (the runtime's content store has no ingest of it).
	for deadline := pull.Start.Add(40 * time.Second); !strings.Contains(tl.Waiting, "not returned yet, no bytes for") && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		tl, _ = askWhileStarting(t, ctx, d, ns, "stalled", string(pod.UID))
	}
	if !strings.Contains(tl.Waiting, "PullImage "+image+" for app: running for") || !strings.Contains(tl.Waiting, "not returned yet, no bytes for") {
		t.Errorf("waiting %q: want the pull in flight with no bytes", tl.Waiting)
	}
}
