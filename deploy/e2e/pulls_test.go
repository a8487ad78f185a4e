//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// The local node's registry (deploy/node/README.md, "Image registry").
const (
	largeImage   = "127.0.0.1:5000/readyline/large:256mib" // a 256 MiB random layer on busybox
	missingImage = "127.0.0.1:5000/readyline/missing:nope" // never in the registry
	localImage   = "localhost/busybox:local"               // imported at node up, never pulled
	pullMethod   = string(event.CRIPullImage)
	pullSpan     = exporter.SpanImagePull
	outcomeKey   = string(exporter.AttrImagePullOutcome)
	sleepForever = `command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]`
)

// largeImageMu serializes the tests that remove the large image from the
// node to see it downloaded: a parallel test would find it present.
var largeImageMu sync.Mutex

// lockLargeImage holds largeImageMu until the test's cleanups ran (the
// first registered runs last): its pods are deleted by then, and with them
// the snapshots that would let the next pull of the image skip its layers
// (containerd unpacks only the layers it has no snapshot of).
func lockLargeImage(t *testing.T) {
	largeImageMu.Lock()
	t.Cleanup(largeImageMu.Unlock)
}

// removeImage deletes image from the node's containerd, so that the next
// pull downloads its layers: containerd unpacks only the layers it has no
// snapshot of, and a container keeps its snapshots, even exited, until the
// kubelet's container GC (a minute after its pod is gone). So it waits for
// the containers of image to stop (their pods are being deleted by an
// earlier test's cleanup), removes them, then the image; the CRI removes it
// with a synchronous garbage collection of its content and snapshots. An
// image that is not there is fine.
func removeImage(t *testing.T, ctx context.Context, image string) {
	t.Helper()
	path, err := Tool("crictl")
	if err != nil {
		t.Fatal(err)
	}
	crictl := func(args ...string) (string, error) {
		args = append([]string{"--runtime-endpoint", "unix://" + env.NodeDir + "/containerd/containerd.sock"}, args...)
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("crictl %s: %w: %s", strings.Join(args[2:], " "), err, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		running, err := crictl("ps", "-q", "--image", image)
		if err != nil {
			t.Fatal(err)
		}
		if running == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers %s of %s still run after 90 s", strings.Fields(running), image)
		}
		time.Sleep(time.Second)
	}
	exited, err := crictl("ps", "-a", "-q", "--image", image)
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet removes the containers of a deleted pod too: one gone
	// between the list and the rm is what was asked.
	for _, id := range strings.Fields(exited) {
		if _, err := crictl("rm", id); err != nil && !strings.Contains(err.Error(), "NotFound") && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
	}
	if out, err := crictl("rmi", image); err != nil && !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "no such image") {
		t.Fatal(err, out)
	}
}

// onePodManifest is a pod with one container "app" of image, pulled by
// policy, that sleeps until it is told to stop.
func onePodManifest(name, image string, policy corev1.PullPolicy) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: %s
    %s
`, name, image, policy, sleepForever)
}

// readyTimeline starts a one-container pod, waits until it is Ready and
// returns its timeline and its trace.
func readyTimeline(t *testing.T, ctx context.Context, name, image string, policy corev1.PullPolicy) (*correlator.Timeline, *jaeger.Trace) {
	t.Helper()
	d := readyline(t)
	ns, rec := startPod(t, ctx, name, onePodManifest(name, image, policy))
	ev, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tl, tr
}

// TestPullLargeImage: a pod pulls the registry's 256 MiB image, which is not
// on the node. Its timeline has one successful pull of it, for its
// container, with the digest the runtime resolved; the trace has one
// image.pull span holding the PullImage call, and that call is the
// kubelet's own PullImage span (matchKubeletCalls, as for the other CRI
// calls).
func TestPullLargeImage(t *testing.T) {
	lockLargeImage(t)
	ctx := testContext(t, 4*time.Minute)
	removeImage(t, ctx, largeImage)
	tl, tr := readyTimeline(t, ctx, "large", largeImage, corev1.PullAlways)

	if len(tl.ImagePulls) != 1 {
		t.Fatalf("%d pulls in the timeline, want 1: %+v", len(tl.ImagePulls), tl.ImagePulls)
	}
	p := tl.ImagePulls[0]
	if p.Image != largeImage || p.Container != "app" || p.Call.Err || p.Attempt != 1 {
		t.Errorf("pull %+v, want one successful first attempt of %s for app", p, largeImage)
	}
	if !strings.HasPrefix(p.Ref, "sha256:") {
		t.Errorf("pull ref %q, want the image id the runtime resolved", p.Ref)
	}
	// 256 MiB from loopback: 1.6-2.6 s here; anything under 200 ms was no
	// download (the layer was still on the node).
	if p.Duration() < 200*time.Millisecond {
		t.Errorf("the pull took %v: the large layer was not downloaded", p.Duration())
	}
	t.Logf("pull of %s: %v, %d bytes, ref %s, puller %s", p.Image, p.Duration().Round(time.Millisecond), p.Size, p.Ref, p.Puller)
	// The size readyline asks the runtime, as the kubelet does after its
	// pull: 270,587,074 bytes unpacked here (deploy/node/README.md).
	if p.Size < 256<<20 || p.Size > 300<<20 {
		t.Errorf("pull size %d bytes, want the image's ~270 MB", p.Size)
	}
	var insight string
	for _, in := range tl.Insights {
		if in.Kind == correlator.InsightImagePull {
			insight = in.Message
		}
	}
	if !strings.Contains(insight, largeImage) || !strings.Contains(insight, "MB/s") {
		t.Errorf("image pull insight %q, want the image, its size and rate", insight)
	}
	t.Logf("insight: %s", insight)

	st := newSpanTree(t, tr)
	span := st.one(pullSpan)
	if v := tagString(span, outcomeKey); v != "success" {
		t.Errorf("%s %s=%q, want success", pullSpan, outcomeKey, v)
	}
	ours := criSpans(tr)[pullMethod]
	if len(ours) != 1 || st.parent[ours[0].SpanID] != span.SpanID {
		t.Fatalf("%d PullImage call spans, want 1 under %s", len(ours), pullSpan)
	}
	if dur(span) < dur(ours[0]) {
		t.Errorf("%s (%v) is shorter than its call (%v)", pullSpan, dur(span), dur(ours[0]))
	}
	matchKubeletCalls(t, ctx, tl.Pod.UID, map[string][]jaeger.Span{pullMethod: ours})
}

// TestPullsSerialized: two pods that need the large image, which is not on
// the node, start at once. The kubelet's serialized puller (the default,
// serializeImagePulls: true) pulls for one while the other waits; the
// waiting pod's pull has a wait behind the first pod's pull of the image,
// shown as its own span, and its call begins after the first one returned.
func TestPullsSerialized(t *testing.T) {
	lockLargeImage(t)
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	removeImage(t, ctx, largeImage)
	ns := newNamespace(t)
	names := []string{"first", "second"}
	recs := map[string]*PodRecorder{}
	var manifest []string
	for _, n := range names {
		recs[n] = recordPod(t, ns, n)
		manifest = append(manifest, onePodManifest(n, largeImage, corev1.PullAlways))
	}
	if _, err := env.Apply(ctx, ns, []byte(strings.Join(manifest, "---\n"))); err != nil {
		t.Fatal(err)
	}
	tls := map[string]*correlator.Timeline{}
	uids := map[string]string{}
	for _, n := range names {
		ev, err := recs[n].WaitFor(ctx, ConditionTrue(corev1.PodReady))
		if err != nil {
			t.Fatal(err)
		}
		uids[n] = string(ev.Pod.UID)
		if tls[n], err = d.Timeline(ctx, ns, n, time.Minute); err != nil {
			t.Fatal(err)
		}
		if len(tls[n].ImagePulls) != 1 {
			t.Fatalf("%s: %d pulls, want 1: %+v", n, len(tls[n].ImagePulls), tls[n].ImagePulls)
		}
	}
	// Which pod the puller took first is the kubelet's choice.
	a, b := tls["first"].ImagePulls[0], tls["second"].ImagePulls[0]
	leader, waiter := "first", "second"
	if b.Call.Start.Before(a.Call.Start) {
		a, b = b, a
		leader, waiter = waiter, leader
	}
	t.Logf("%s pulled in %v; %s's call began %v after it returned and took %v", leader, a.Duration().Round(time.Millisecond),
		waiter, b.Call.Start.Sub(a.Call.End).Round(time.Millisecond), b.Duration().Round(time.Millisecond))
	if b.Wait != nil {
		t.Logf("%s's wait: %v from %s, behind %d pull(s)", waiter, b.Wait.Duration().Round(time.Millisecond), b.Wait.NeedEvent, len(b.Wait.Behind))
	}
	if a.Duration() < 200*time.Millisecond {
		t.Errorf("%s's pull took %v: the large layer was not downloaded", leader, a.Duration())
	}
	if b.Call.Start.Before(a.Call.End) {
		t.Fatalf("the two PullImage calls overlapped (%v..%v, %v..%v): the kubelet's puller is not serialized",
			a.Call.Start, a.Call.End, b.Call.Start, b.Call.End)
	}
	if a.Wait != nil {
		t.Errorf("%s's pull, the first, has a wait: %+v", leader, a.Wait)
	}
	if b.Wait == nil {
		t.Fatalf("%s's pull has no wait behind %s's", waiter, leader)
	}
	var behind bool
	for _, w := range b.Wait.Behind {
		behind = behind || w.PodUID == uids[leader]
	}
	if !behind {
		t.Errorf("%s's wait is behind %+v, want %s's pull (pod %s)", waiter, b.Wait.Behind, leader, uids[leader])
	}
	// The wait ends where the call begins and cannot be longer than the
	// pull it waited for plus the puller's hand-off.
	if w := b.Wait.Duration(); w <= 0 || w > a.Duration()+time.Second {
		t.Errorf("%s's wait %v, want (0, %v]", waiter, w, a.Duration()+time.Second)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(uids[waiter]), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	newSpanTree(t, tr).one(exporter.SpanImagePullWait)
	// The kubelet's own account of the wait: its Pulled Event says the
	// pull "in X (Y including waiting)", timed in the kubelet from the
	// request to the puller to the pull's end; readyline's wait and call,
	// timed in the kernel, must tell the same story.
	took, withWait := kubeletPulled(t, ctx, ns, uids[waiter])
	ours := b.Wait.Duration() + b.Duration()
	t.Logf("%s: the kubelet says %v (%v including waiting); readyline %v call + %v wait = %v",
		waiter, took, withWait, b.Duration().Round(time.Millisecond), b.Wait.Duration().Round(time.Millisecond), ours.Round(time.Millisecond))
	if d := withWait - ours; d < -pullAccountSlack || d > pullAccountSlack {
		t.Errorf("readyline's wait + call %v, the kubelet's time including waiting %v: more than %v apart", ours, withWait, pullAccountSlack)
	}
}

// pullAccountSlack is how far readyline's wait + pull may be from the
// kubelet's "including waiting": its clock starts when its pod worker asks
// the puller (after the sandbox and the container's config), readyline's
// wait at the pod's previous CRI call's return, a few ms earlier; the
// kubelet rounds its figure for the Event.
const pullAccountSlack = 500 * time.Millisecond

// kubeletPulled reads the kubelet's Pulled Event of pod uid in ns: how long
// it said the pull took, and took including its wait in the puller.
func kubeletPulled(t *testing.T, ctx context.Context, ns, uid string) (took, withWait time.Duration) {
	t.Helper()
	re := regexp.MustCompile(`in ([0-9.a-zµ]+) \(([0-9.a-zµ]+) including waiting\)`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			m := re.FindStringSubmatch(e.Message)
			if e.Reason != "Pulled" || m == nil {
				continue
			}
			a, err1 := time.ParseDuration(m[1])
			b, err2 := time.ParseDuration(m[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("the Pulled Event's durations: %q", e.Message)
			}
			return a, b
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Pulled Event with its wait for pod %s", uid)
		}
	}
}

// TestPullQueuedInFlight: a pod that needs an image while another pod's
// 256 MiB pull runs (24 MB a second, about 11 s) waits in the kubelet's
// serialized puller; once its own pull is in flight (its registry answers
// the manifest after 6 s) it says how long it waited behind how many pulls,
// in the API's answer and its waiting line, and after its start its pull's
// wait is behind the other pod's pull. On a loaded node the puller's
// hand-off between the two calls takes seconds: the wait is proved by the
// waiting pod's Pulling Event, not by the hand-off's length.
func TestPullQueuedInFlight(t *testing.T) {
	lockLargeImage(t)
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	removeImage(t, ctx, largeImage)
	leaderImage := throttledRegistry(t, 24e6) + "/readyline/large:256mib"
	// The waiter's image is pause (it runs /pause, no shell needed) under a
	// name of its own (the proxy's port), pulled whether present or not
	// (Always), and left on the node. Not busybox: the CRI removes an image
	// with every name it has, and once the kubelet has pulled an image it
	// checks every other name of it against its pull records
	// (KubeletEnsureSecretPulledImages), so that localhost/busybox:local,
	// which tests run with imagePullPolicy Never, became "not present" for
	// them. bench-node already pulls pause from the registry.
	waiterImage := delayedRegistry(t, 6*time.Second) + "/readyline/pause:local"
	t.Cleanup(func() {
		cctx, cancel := suiteContext(3 * time.Minute)
		defer cancel()
		removeImage(t, cctx, leaderImage)
	})
	ns := newNamespace(t)
	leaderRec, waiterRec := recordPod(t, ns, "leader"), recordPod(t, ns, "waiter")
	if _, err := env.Apply(ctx, ns, []byte(onePodManifest("leader", leaderImage, corev1.PullAlways))); err != nil {
		t.Fatal(err)
	}
	ev, err := leaderRec.WaitFor(ctx, func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionTrue
	})
	if err != nil {
		t.Fatal(err)
	}
	leaderUID := string(ev.Pod.UID)
	// Both pulls end before the cleanups remove their images.
	defer func() {
		for _, rec := range []*PodRecorder{leaderRec, waiterRec} {
			if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
				t.Errorf("a pod did not become Ready after its pull: %v", err)
			}
		}
	}()
	// The waiter comes once the leader's pull is under way.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		tl, _ := askWhileStarting(t, ctx, d, ns, "leader", leaderUID)
		if slices.ContainsFunc(tl.InFlight, func(f correlator.InFlightCall) bool { return f.Method == event.CRIPullImage }) {
			break
		}
		if tl.Outcome != correlator.OutcomeStarting || time.Now().After(deadline) {
			t.Fatalf("the leader's pull was not seen in flight (outcome %s, waiting %q)", tl.Outcome, tl.Waiting)
		}
	}
	waiter := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: waiter}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %s, imagePullPolicy: Always}
`, waiterImage)
	if _, err := env.Apply(ctx, ns, []byte(waiter)); err != nil {
		t.Fatal(err)
	}
	ev, err = waiterRec.WaitFor(ctx, func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionTrue
	})
	if err != nil {
		t.Fatal(err)
	}
	waiterUID := string(ev.Pod.UID)
	// Its pull in flight, after the leader's returned: 6 s at least; the
	// waiting line names a call in flight once it has run a second.
	var queued *correlator.PullQueued
	var callStart time.Time
	var waiting string
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(waiting, "PullImage"); time.Sleep(500 * time.Millisecond) {
		tl, _ := askWhileStarting(t, ctx, d, ns, "waiter", waiterUID)
		if tl.Outcome != correlator.OutcomeStarting || time.Now().After(deadline) {
			t.Fatalf("the waiter's pull was not told while in flight (outcome %s, queued %+v, waiting %q)", tl.Outcome, queued, tl.Waiting)
		}
		for _, f := range tl.InFlight {
			if f.Method == event.CRIPullImage {
				queued, callStart, waiting = f.Queued, f.Start, tl.Waiting
			}
		}
	}
	if queued == nil {
		// What the leader's pull was: long, and over before the waiter's call?
		ltl, err := apiclient.FetchTimelineUID(ctx, d.APIURL, ns, "leader", leaderUID)
		if err != nil {
			t.Fatalf("the waiter's pull in flight has no wait (waiting %q); the leader's timeline: %v", waiting, err)
		}
		t.Fatalf("the waiter's pull in flight has no wait (waiting %q); the leader's pulls %+v, in flight %+v", waiting, ltl.ImagePulls, ltl.InFlight)
	}
	t.Logf("in flight: waited %v behind %d; waiting: %s", queued.Duration().Round(time.Millisecond), queued.Behind, waiting)
	// Behind the leader's pull, and any other test's that the puller took
	// between the two (the suite runs in parallel).
	// Both ends are readyline's own stamps: the wait ends where the call
	// began (the kernel's), and began before it.
	if queued.Behind < 1 || !queued.End.Equal(callStart) || !queued.Start.Before(queued.End) {
		t.Errorf("queued %+v: want a wait behind the leader's pull, ending at the call's start %v", queued, callStart)
	}
	if !regexp.MustCompile(`PullImage \S+ for app \(waited [0-9.]+s behind \d+ pulls?\): running for`).MatchString(waiting) {
		t.Errorf("waiting %q: want the wait behind the pulls ahead", waiting)
	}
	if _, err := waiterRec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, "waiter", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.ImagePulls) != 1 || tl.ImagePulls[0].Wait == nil {
		t.Fatalf("the waiter's pulls %+v: want one, with its wait", tl.ImagePulls)
	}
	w, call := tl.ImagePulls[0].Wait, tl.ImagePulls[0].Call
	t.Logf("after: waited %v behind %+v; its call began %v after the leader's returned", w.Duration().Round(time.Millisecond), w.Behind,
		call.Start.Sub(w.Behind[len(w.Behind)-1].End).Round(time.Millisecond))
	if !slices.ContainsFunc(w.Behind, func(b correlator.PullBehind) bool { return b.PodUID == leaderUID }) {
		t.Errorf("behind %+v, want the leader's pull (pod %s) among them", w.Behind, leaderUID)
	}
}

// TestPullMissingTag: a pod whose image tag is not in the registry. The
// kubelet fails the pull (ErrImagePull), backs off (ImagePullBackOff, 10 s
// then 20 s) and tries again; at the start timeout readyline reports the
// start as timed out for that reason, with each failed attempt and the
// back-off between them.
func TestPullMissingTag(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	const name = "missing-tag"
	ns, rec := startPod(t, ctx, name, onePodManifest(name, missingImage, corev1.PullIfNotPresent))
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerWaitingReason(p, "app") == "ImagePullBackOff" }); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, name, correlator.OutcomeTimeout, StartTimeout+time.Minute)
	t.Logf("reason: %s", tl.Reason)
	// The reason is the container's state at the timeout: ErrImagePull
	// right after an attempt, ImagePullBackOff between them.
	if !strings.Contains(tl.Reason, "app: ") || !strings.Contains(tl.Reason, "failed pulls of "+missingImage) ||
		(!strings.Contains(tl.Reason, "ErrImagePull") && !strings.Contains(tl.Reason, "ImagePullBackOff")) {
		t.Errorf("timeout reason %q, want the container, its pull reason and the failed pulls of %s", tl.Reason, missingImage)
	}
	var reasons []string
	for _, c := range tl.Containers {
		for _, w := range c.Waiting {
			reasons = append(reasons, w.Reason)
		}
	}
	if !slices.Contains(reasons, "ErrImagePull") || !slices.Contains(reasons, "ImagePullBackOff") {
		t.Errorf("the container's waiting reasons %v, want ErrImagePull and ImagePullBackOff", reasons)
	}
	var failed int
	for i, p := range tl.ImagePulls {
		t.Logf("attempt %d: err=%v %v back-off %v reason %s: %s", p.Attempt, p.Call.Err, p.Duration().Round(time.Millisecond),
			p.BackOff.Round(time.Millisecond), p.ErrorReason, p.Error)
		if p.Image != missingImage || p.Container != "app" || !p.Call.Err || p.Attempt != i+1 {
			t.Errorf("pull %d: %+v, want failed attempt %d of %s for app", i, p, i+1, missingImage)
			continue
		}
		failed++
		// The kubelet's image back-off starts at 10 s and doubles.
		if i > 0 && p.BackOff < 5*time.Second {
			t.Errorf("attempt %d came %v after the previous failure, want the kubelet's back-off (>= 10 s)", p.Attempt, p.BackOff)
		}
	}
	if failed < 2 {
		t.Fatalf("%d failed pulls in the timeline, want the first and at least one retry", failed)
	}
	if tl.ImagePulls[0].ErrorReason != "ErrImagePull" || !strings.Contains(tl.ImagePulls[0].Error, "not found") {
		t.Errorf("first attempt's error %s %q, want ErrImagePull and the runtime's not found", tl.ImagePulls[0].ErrorReason, tl.ImagePulls[0].Error)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(tl.Pod.UID), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var spans, failures, backOffs int
	for _, s := range tr.Spans {
		switch s.OperationName {
		case pullSpan:
			spans++
			if tagString(s, outcomeKey) == "failure" {
				failures++
			}
		case exporter.SpanImagePullBackOff:
			backOffs++
		}
	}
	if spans != len(tl.ImagePulls) || failures != spans || backOffs < 1 {
		t.Errorf("trace: %d %s spans (%d failed), %d %s, want %d failed and a back-off", spans, pullSpan, failures, backOffs, exporter.SpanImagePullBackOff, len(tl.ImagePulls))
	}
}

// TestPullNotNeeded: an image already on the node with imagePullPolicy
// IfNotPresent makes no PullImage call (image_manager.go
// EnsureImageExists), so no pull in the timeline and no image.pull span.
func TestPullNotNeeded(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 3*time.Minute)
	tl, tr := readyTimeline(t, ctx, "present", localImage, corev1.PullIfNotPresent)
	if len(tl.ImagePulls) != 0 {
		t.Errorf("pulls %+v of an image on the node, want none", tl.ImagePulls)
	}
	for _, s := range tr.Spans {
		if s.OperationName == pullSpan || tagString(s, "rpc.method") == pullMethod {
			t.Errorf("span %s in the trace of a pod that pulled nothing", s.OperationName)
		}
	}
}

// throttledRegistry serves the local node's registry at rate bytes a
// second (its blobs' bodies; the rest as they are), on a port of its own:
// a pull from it takes seconds to come in, as one from a far registry.
func throttledRegistry(t *testing.T, rate int) string {
	t.Helper()
	return registryProxy(t, func(proxy *httputil.ReverseProxy) {
		proxy.ModifyResponse = func(resp *http.Response) error {
			if strings.Contains(resp.Request.URL.Path, "/blobs/") {
				resp.Body = &throttled{r: resp.Body, rate: rate, start: time.Now()}
			}
			return nil
		}
	})
}

// delayedRegistry serves the local node's registry on a port of its own,
// each manifest after delay: a pull from it is in flight that long at
// least, its image however small.
func delayedRegistry(t *testing.T, delay time.Duration) string {
	t.Helper()
	return registryProxy(t, func(proxy *httputil.ReverseProxy) {
		direct := proxy.Director
		proxy.Director = func(r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") {
				select {
				case <-time.After(delay):
				case <-r.Context().Done():
				}
			}
			direct(r)
		}
	})
}

// registryProxy serves the local node's registry through a reverse proxy
// set up by set, on a port of its own, until the test ends; it returns
// the proxy's host:port.
func registryProxy(t *testing.T, set func(*httputil.ReverseProxy)) string {
	t.Helper()
	target, _ := url.Parse("http://127.0.0.1:5000")
	proxy := httputil.NewSingleHostReverseProxy(target)
	set(proxy)
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// throttled reads r at rate bytes a second from start.
type throttled struct {
	r     io.ReadCloser
	rate  int
	start time.Time
	n     int
}

func (t *throttled) Read(p []byte) (int, error) {
	if ahead := time.Duration(float64(t.n)/float64(t.rate)*float64(time.Second)) - time.Since(t.start); ahead > 0 {
		time.Sleep(ahead)
	}
	n, err := t.r.Read(p[:min(len(p), 64<<10)])
	t.n += n
	return n, err
}

func (t *throttled) Close() error { return t.r.Close() }

// TestPullBytesInFlight: a pull of the 256 MiB image from a registry that
// sends 24 MB a second is told while it runs in the runtime's own bytes
// (its content store): rising, of the image's total, with its layers and
// rate, in the waiting line explain and the API print; and once it is
// over, on its image.pull span, as progress events rising over the pull.
func TestPullBytesInFlight(t *testing.T) {
	lockLargeImage(t)
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	removeImage(t, ctx, largeImage)
	image := throttledRegistry(t, 24e6) + "/readyline/large:256mib"
	// Removed after its pod (cleanups run last first): the large image's
	// layers must not stay on the node under this name either.
	t.Cleanup(func() {
		cctx, cancel := suiteContext(3 * time.Minute)
		defer cancel()
		removeImage(t, cctx, image)
	})
	ns, rec := startPod(t, ctx, "throttled", onePodManifest("throttled", image, corev1.PullAlways))
	ev, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionTrue
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := ev.Pod
	// The pull ends before the cleanups remove its image: one still in
	// flight would land after, and keep the large layer on the node for
	// the next test that wants it downloaded.
	ready := false
	defer func() {
		if ready {
			return
		}
		if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
			t.Errorf("the pod did not become Ready after its pull: %v", err)
		}
	}()
	watched := watchExplain(t, ctx, d, ns, "throttled", string(pod.UID))
	var seen []*event.PullProgress
	var waiting string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		tl, _ := askWhileStarting(t, ctx, d, ns, "throttled", string(pod.UID))
		if tl.Outcome != correlator.OutcomeStarting {
			break
		}
		for _, f := range tl.InFlight {
			if f.Method == event.CRIPullImage && f.Progress != nil && f.Progress.Bytes > 0 {
				seen, waiting = append(seen, f.Progress), tl.Waiting
			}
		}
		if len(seen) >= 4 {
			break
		}
	}
	t.Logf("last waiting: %s", waiting)
	if len(seen) < 2 {
		t.Fatalf("%d answers with the pull's bytes while it ran, want 2 or more (last waiting %q)", len(seen), waiting)
	}
	first, last := seen[0], seen[len(seen)-1]
	if last.Bytes <= first.Bytes {
		t.Errorf("the pull's bytes did not rise: %d then %d", first.Bytes, last.Bytes)
	}
	if last.Total < 256<<20 || last.Total > 300<<20 || last.Layers < 2 || last.Bytes > last.Total {
		t.Errorf("progress %+v: want bytes of the image's ~270 MB over its layers", last)
	}
	if !regexp.MustCompile(`PullImage \S+ for app: running for \S+, not returned yet, \d+/\d+ MB, \d of \d+ layers, \d+ MB/s`).MatchString(waiting) {
		t.Errorf("waiting %q: want the pull's bytes, layers and rate", waiting)
	}
	// readyline explain --watch drew the pull again as its bytes rose, and
	// ended with the start (its waiting line wraps at the drawing's width).
	out := watched()
	var mb []int
	for _, m := range regexp.MustCompile(`not returned\s+yet,\s+(\d+)/2[67]\d MB,\s+\d of \d+ layers`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		mb = append(mb, n)
	}
	t.Logf("explain --watch drew the pull's MB: %v", mb)
	rising := 0
	for i := 1; i < len(mb); i++ {
		if mb[i] < mb[i-1] {
			t.Errorf("explain --watch drew the pull's bytes going back: %v", mb)
		} else if mb[i] > mb[i-1] {
			rising++
		}
	}
	if rising < 2 {
		t.Errorf("explain --watch drew the pull's bytes rising %d times (%v MB), want 2 or more:\n%s", rising, mb, out)
	}
	if !strings.Contains(out, "Ready in") {
		t.Errorf("explain --watch did not draw the start as it ended:\n%s", tail(out, 3000))
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatalf("the pod did not become Ready after its pull: %v", err)
	}
	ready = true
	// The pull's span in Jaeger carries the bytes sampled while it ran.
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(pod.UID)), 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	checkPullProgressEvents(t, tr, image)
}

// checkPullProgressEvents requires the image.pull span of image in tr to
// carry image.pull.progress events (the daemon samples a pull every 2 s):
// about one every 2 s, at times within the span, their bytes rising and never
// past the image's total.
func checkPullProgressEvents(t *testing.T, tr *jaeger.Trace, image string) {
	t.Helper()
	name := image[:strings.LastIndex(image, ":")] // image names a tag
	var pull *jaeger.Span
	for i, s := range tr.Spans {
		if s.OperationName == "image.pull" && tagString(s, "container.image.name") == name {
			pull = &tr.Spans[i]
		}
	}
	if pull == nil {
		t.Fatalf("trace %s has no image.pull span of %s", tr.TraceID, image)
	}
	from, to := pull.StartTime, pull.StartTime+pull.Duration
	var bytes []int64
	var total int64
	for _, l := range pull.Logs {
		fields := map[string]any{}
		for _, f := range l.Fields {
			fields[f.Key] = f.Value
		}
		if fields["event"] != "image.pull.progress" {
			continue
		}
		if l.Timestamp < from || l.Timestamp > to {
			t.Errorf("a progress event at %d µs, outside the span [%d, %d]", l.Timestamp, from, to)
		}
		b, _ := fields["readyline.image.pull.progress.bytes"].(float64)
		tot, _ := fields["readyline.image.pull.progress.total_bytes"].(float64)
		bytes, total = append(bytes, int64(b)), max(total, int64(tot))
	}
	t.Logf("image.pull of %s: %v, %d progress events, bytes %v of %d", image, dur(*pull), len(bytes), bytes, total)
	// Sampled every 2 s from 1 s in: a sample or two may miss its read
	// on a busy node, not more.
	if want := max(3, int(dur(*pull)/(2*time.Second))-2); len(bytes) < want {
		t.Fatalf("%d image.pull.progress events on a %v pull sampled every 2 s, want %d or more", len(bytes), dur(*pull), want)
	}
	for i := 1; i < len(bytes); i++ {
		if bytes[i] < bytes[i-1] {
			t.Errorf("the pull's sampled bytes went back: %v", bytes)
		}
	}
	if bytes[len(bytes)-1] <= bytes[0] {
		t.Errorf("the pull's sampled bytes did not rise: %v", bytes)
	}
	if total < 256<<20 || total > 300<<20 || bytes[len(bytes)-1] > total {
		t.Errorf("sampled bytes %v of total %d: want bytes of the image's ~270 MB", bytes, total)
	}
}

// watchExplain runs readyline explain --watch on the pod's start until it
// ends; wait returns what it printed (its drawings one after the other).
func watchExplain(t *testing.T, ctx context.Context, d *Daemon, ns, name, uid string) (wait func() string) {
	t.Helper()
	var out strings.Builder
	cmd := exec.CommandContext(ctx, d.Bin, "explain", "--watch", "--api-addr", strings.TrimPrefix(d.APIURL, "http://"), "--uid", uid, ns+"/"+name)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("readyline explain --watch: %v", err)
	}
	return func() string {
		if err := cmd.Wait(); err != nil {
			t.Errorf("readyline explain --watch: %v\n%s", err, tail(out.String(), 3000))
		}
		return out.String()
	}
}
