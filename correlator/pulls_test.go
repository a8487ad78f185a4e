package correlator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// pullPod is a pod of the given containers (name and image) whose sandbox
// is made by a RunPodSandbox call from sbStart to sbEnd; ids are the
// pod's own, so several pull pods can run on one node.
func pullPod(t *testing.T, name string, sbStart, sbEnd float64, containers ...corev1.Container) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{Containers: containers})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0.05) // no init containers: at once
	sc.update(0.05)
	uid := sc.uid
	sb := sc.sandboxOf()
	sc.call(sbStart, sbEnd, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = uid, sb })
	sc.runtime(sbEnd+0.01, sb, "", 0, sbEnd-0.1, 0, 0, 0)
	sc.cond(corev1.PodReadyToStartContainers, sbEnd+0.05)
	for _, c := range containers {
		sc.status(false, waiting(c.Name, "ContainerCreating", ""))
	}
	sc.update(sbEnd + 0.05)
	return sc
}

func (sc *scenario) sandboxOf() string { return "sb-" + sc.pod.Name }
func (sc *scenario) idOf(container string) string {
	return "c-" + sc.pod.Name + "-" + container
}

// pull emits a PullImage call of the pod; err makes it fail.
func (sc *scenario) pull(start, end float64, image string, err bool, size uint64) {
	uid := sc.uid
	sc.call(start, end, event.CRIPullImage, func(c *event.CRICall) {
		c.PodUID, c.Image, c.Err, c.ImageSize = uid, image, err, size
		if !err {
			c.ImageRef = "sha256:" + strings.Repeat("ab", 32)
		}
	})
}

// startContainer emits CreateContainer at s and StartContainer, the
// runtime's word and the entrypoint, and the container running and ready.
func (sc *scenario) startContainer(s float64, name string) {
	uid, sb, id := sc.uid, sc.sandboxOf(), sc.idOf(name)
	sc.call(s, s+0.05, event.CRICreateContainer, func(c *event.CRICall) {
		c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = uid, sb, name, id
	})
	sc.call(s+0.06, s+0.1, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = id })
	sc.runIn(s+0.11, sb, id, name, 0, s+0.05, s+0.1, 0, 0, "")
	sc.exec(s+0.09, id, 500+uint32(len(sc.events)), shimPID, "app")
	sc.status(false, running(name, id, s+0.1, true, true))
	sc.update(s + 0.12)
}

// ready makes the pod Ready at s.
func (sc *scenario) ready(s float64) {
	sc.cond(corev1.ContainersReady, s)
	sc.cond(corev1.PodReady, s)
	sc.update(s)
}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

// TestImagePullOfOneContainer: one PullImage call is one pull of the
// container created after it, with the default tag the kubelet adds, the
// runtime's ref, the size when known, and an insight with its rate.
func TestImagePullOfOneContainer(t *testing.T) {
	sc := pullPod(t, "one", 0.3, 0.8, ctr("web", "nginx"))
	sc.pull(1.0, 5.0, "nginx:latest", false, 50_000_000)
	sc.startContainer(5.1, "web")
	sc.ready(5.5)
	tl := sc.run(Config{})
	if len(tl.ImagePulls) != 1 {
		t.Fatalf("pulls %+v", tl.ImagePulls)
	}
	ip := tl.ImagePulls[0]
	if ip.Container != "web" || ip.Image != "nginx:latest" || !strings.HasPrefix(ip.Ref, "sha256:") || ip.Size != 50_000_000 ||
		ip.Attempt != 1 || ip.Call.Err || ip.Wait != nil || ip.BackOff != 0 || ip.Puller != PullerSerialAssumed {
		t.Errorf("pull %+v", ip)
	}
	approx(t, "pull", ip.Duration(), 4*time.Second)
	if !hasInsight(tl, InsightImagePull, "pulling nginx:latest for web took 4.0s (50.0 MB, 12.5 MB/s)") {
		t.Errorf("insights %+v", tl.Insights)
	}
}

// TestImagePullSizeUnknown: without a size the insight says so, and has
// no rate.
func TestImagePullSizeUnknown(t *testing.T) {
	sc := pullPod(t, "nosize", 0.3, 0.8, ctr("web", "nginx:1.27"))
	sc.pull(1.0, 3.0, "nginx:1.27", false, 0)
	sc.startContainer(3.1, "web")
	sc.ready(3.5)
	tl := sc.run(Config{})
	if !hasInsight(tl, InsightImagePull, "took 2.0s (size unknown)") {
		t.Errorf("insights %+v", tl.Insights)
	}
}

// TestImagePresentNoPull: a pod whose image is on the node makes no
// PullImage call (EnsureImageExists: already present): no pull, no wait,
// no insight, even with another pod pulling meanwhile.
func TestImagePresentNoPull(t *testing.T) {
	other := pullPod(t, "puller", 0.2, 0.5, ctr("big", "big:1"))
	other.pull(0.6, 6.0, "big:1", false, 0)
	other.startContainer(6.1, "big")
	other.ready(6.5)
	sc := pullPod(t, "present", 0.3, 0.8, ctr("web", "nginx"))
	sc.startContainer(1.0, "web")
	sc.ready(1.4)
	tl := runPods(t, Config{}, other, sc)["present"]
	if len(tl.ImagePulls) != 0 || hasInsight(tl, InsightImagePull, "") {
		t.Errorf("pulls %+v, insights %+v", tl.ImagePulls, tl.Insights)
	}
}

// TestTwoContainersSameImageOnePull: the second container of the same
// image finds it present: one pull, for the first container.
func TestTwoContainersSameImageOnePull(t *testing.T) {
	sc := pullPod(t, "same", 0.3, 0.8, ctr("a", "busybox"), ctr("b", "busybox"))
	sc.pull(1.0, 2.0, "busybox:latest", false, 0)
	sc.startContainer(2.1, "a")
	sc.startContainer(2.4, "b")
	sc.ready(2.8)
	tl := sc.run(Config{})
	if len(tl.ImagePulls) != 1 || tl.ImagePulls[0].Container != "a" {
		t.Errorf("pulls %+v", tl.ImagePulls)
	}
}

// TestTwoContainersSameImagePullAlways: with imagePullPolicy Always each
// container pulls: each pull is the container created after it, and the
// second's wait is none (its pod's own pull is its previous step).
func TestTwoContainersSameImagePullAlways(t *testing.T) {
	a, b := ctr("a", "busybox"), ctr("b", "busybox")
	a.ImagePullPolicy, b.ImagePullPolicy = corev1.PullAlways, corev1.PullAlways
	sc := pullPod(t, "always", 0.3, 0.8, a, b)
	sc.pull(1.0, 2.0, "busybox:latest", false, 0)
	sc.startContainer(2.1, "a")
	sc.pull(2.3, 2.9, "busybox:latest", false, 0)
	sc.startContainer(3.0, "b")
	sc.ready(3.4)
	tl := sc.run(Config{})
	if len(tl.ImagePulls) != 2 || tl.ImagePulls[0].Container != "a" || tl.ImagePulls[1].Container != "b" {
		t.Fatalf("pulls %+v", tl.ImagePulls)
	}
	if tl.ImagePulls[1].Attempt != 2 || tl.ImagePulls[1].BackOff != 0 || tl.ImagePulls[1].Wait != nil {
		t.Errorf("second pull %+v", tl.ImagePulls[1])
	}
}

// TestSerializedPullerWait: two pods on a node with the serialized
// puller: the second pod's sandbox is ready at 1.2 s while the first
// pod's pull runs until 6.0 s, and its own call begins right after, at
// 6.05 s. The 4.85 s in between is its wait behind the first pod's image;
// the first pod did not wait.
func TestSerializedPullerWait(t *testing.T) {
	first := pullPod(t, "first", 0.3, 0.8, ctr("web", "nginx:1.27"))
	first.pull(1.0, 6.0, "nginx:1.27", false, 0)
	first.startContainer(6.2, "web")
	first.ready(6.6)
	second := pullPod(t, "second", 0.4, 1.2, ctr("cache", "redis:7"))
	second.pull(6.05, 8.0, "redis:7", false, 0)
	second.startContainer(8.1, "cache")
	second.ready(8.5)
	got := runPods(t, Config{}, first, second)
	if w := got["first"].ImagePulls[0].Wait; w != nil {
		t.Errorf("first pod waited %+v", w)
	}
	ip := got["second"].ImagePulls[0]
	w := ip.Wait
	if w == nil || ip.Puller != PullerSerialAssumed {
		t.Fatalf("second pull %+v", ip)
	}
	if !w.Start.Equal(at(1.2)) || !w.End.Equal(at(6.05)) || !w.Need.Equal(at(1.2)) || w.NeedEvent != "RunPodSandbox returned" {
		t.Errorf("wait %v..%v need %v (%s)", w.Start.Sub(t0), w.End.Sub(t0), w.Need.Sub(t0), w.NeedEvent)
	}
	if len(w.Behind) != 1 || w.Behind[0].PodUID != first.uid || w.Behind[0].Image != "nginx:1.27" {
		t.Errorf("behind %+v", w.Behind)
	}
	// The wait and the pull hold the container: both on the critical path.
	if p := pathNames(got["second"]); !strings.Contains(p, "pod.sandbox image.pull.wait/cache image.pull/cache container/cache") {
		t.Errorf("critical path %s", p)
	}
	// Which pods' pulls is in Behind (for who may get those pods), not in
	// the sentence every reader of this pod reads.
	if !hasInsight(got["second"], InsightImagePull, "4.8s waiting in the kubelet's serialized puller behind other pods' pulls") || hasInsight(got["second"], InsightImagePull, "nginx") {
		t.Errorf("insights %+v", got["second"].Insights)
	}
}

// TestSerializedPullerChain: a third pod's pull waited behind two pulls
// taken one after the other; its wait starts at its own need (1.5 s), not
// at the first pull's start.
func TestSerializedPullerChain(t *testing.T) {
	a := pullPod(t, "a", 0.3, 0.8, ctr("x", "x:1"))
	a.pull(1.0, 4.0, "x:1", false, 0)
	a.startContainer(8.5, "x")
	a.ready(9.0)
	b := pullPod(t, "b", 0.3, 0.9, ctr("y", "y:1"))
	b.pull(4.05, 6.0, "y:1", false, 0)
	b.startContainer(8.6, "y")
	b.ready(9.0)
	c := pullPod(t, "c", 0.4, 1.5, ctr("z", "z:1"))
	c.pull(6.05, 7.0, "z:1", false, 0)
	c.startContainer(8.7, "z")
	c.ready(9.0)
	got := runPods(t, Config{}, a, b, c)
	w := got["c"].ImagePulls[0].Wait
	if w == nil || len(w.Behind) != 2 || w.Behind[0].Image != "x:1" || w.Behind[1].Image != "y:1" {
		t.Fatalf("wait %+v", w)
	}
	if !w.Start.Equal(at(1.5)) || !w.End.Equal(at(6.05)) {
		t.Errorf("wait %v..%v", w.Start.Sub(t0), w.End.Sub(t0))
	}
	// b's sandbox was ready at 0.9, while a pulled: it waited 0.9..4.05.
	if wb := got["b"].ImagePulls[0].Wait; wb == nil || !wb.Start.Equal(at(1.0)) || len(wb.Behind) != 1 {
		t.Errorf("b's wait %+v", wb)
	}
}

// TestSerializedPullerWaitInFlight: a pull still in flight says how long
// it waited behind how many other pods' pulls (not which: the sentence is
// for every reader of the pod), in its InFlightCall and the waiting line;
// the first pod's pull in flight waited behind none.
func TestSerializedPullerWaitInFlight(t *testing.T) {
	a := pullPod(t, "a", 0.3, 0.8, ctr("x", "x:1"))
	a.pull(1.0, 4.0, "x:1", false, 0)
	b := pullPod(t, "b", 0.3, 0.9, ctr("y", "y:1"))
	b.pull(4.05, 6.0, "y:1", false, 0)
	c := pullPod(t, "c", 0.4, 1.5, ctr("z", "z:1"))
	c.ticks(1, 9)
	cor := New(Config{})
	for _, ev := range mergeEvents(a, b, c) {
		cor.Handle(ev)
	}
	pulling := &event.CRICall{Time: at(6.05), Method: event.CRIPullImage, PodUID: c.uid, Image: "z:1"}
	tl, ok := cor.Snapshot(Query{UID: c.uid}, pulling)
	if !ok || len(tl.InFlight) != 1 {
		t.Fatalf("snapshot %v: in flight %+v", ok, tl)
	}
	q := tl.InFlight[0].Queued
	if q == nil || q.Behind != 2 || !q.Start.Equal(at(1.5)) || !q.End.Equal(at(6.05)) {
		t.Fatalf("queued %+v, want 1.5s..6.05s behind 2 pulls", q)
	}
	if want := "PullImage z:1 for z (waited 4.5s behind 2 pulls): running for 3.0s, not returned yet"; !strings.Contains(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q", tl.Waiting, want)
	}
	if strings.Contains(tl.Waiting, "x:1") || strings.Contains(tl.Waiting, "y:1") {
		t.Errorf("waiting %q names the other pods' images", tl.Waiting)
	}
	first := &event.CRICall{Time: at(1.0), Method: event.CRIPullImage, PodUID: a.uid, Image: "x:1"}
	cor = New(Config{})
	for _, ev := range a.events {
		if ev.When().After(at(2)) {
			break
		}
		cor.Handle(ev)
	}
	if tl, _ := cor.Snapshot(Query{UID: a.uid}, first); len(tl.InFlight) != 1 || tl.InFlight[0].Queued != nil {
		t.Errorf("the first pull in flight: %+v, want no wait", tl.InFlight)
	}
}

// TestNoWaitWhenNothingInFlight: no wait is made up when the other pod's
// pull ended before the container needed its image, or long before its
// call began (not the queue's handoff).
func TestNoWaitWhenNothingInFlight(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		otherStart, otherEnd float64
	}{
		{"ended before the need", 0.5, 1.0},
		{"ended 2s before the call", 1.0, 3.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := pullPod(t, "other", 0.2, 0.4, ctr("o", "o:1"))
			other.pull(tc.otherStart, tc.otherEnd, "o:1", false, 0)
			other.startContainer(5.5, "o")
			other.ready(6.0)
			sc := pullPod(t, "late", 0.3, 1.2, ctr("web", "nginx"))
			sc.pull(5.0, 5.2, "nginx:latest", false, 0)
			sc.startContainer(5.3, "web")
			sc.ready(6.0)
			if w := runPods(t, Config{}, other, sc)["late"].ImagePulls[0].Wait; w != nil {
				t.Errorf("wait %+v", w)
			}
		})
	}
}

// TestSerializedPullerSlowHandOff: on a loaded node the kubelet's puller
// took 2.2 s between the first pod's pull returning (6.0 s) and the second
// pod's call (8.2 s), more than the hand-off a wait is otherwise assumed
// within. The second pod's Pulling Event, stamped 1 s (its 1.3 s in whole
// seconds), says the kubelet had asked the puller for its image long before
// the first pull ended: it waited behind it, said so while its pull is in
// flight and after. A Pulling Event stamped after the first pull ended
// proves no wait, and without the Event none is assumed.
func TestSerializedPullerSlowHandOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pulling float64 // the second pod's Pulling Event, 0: none read
		wait    bool
	}{
		{"asked before the first pull ended", 1.3, true},
		{"asked after the first pull ended", 6.4, false},
		{"no Pulling Event", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := pullPod(t, "first", 0.3, 0.8, ctr("web", "nginx:1.27"))
			first.pull(1.0, 6.0, "nginx:1.27", false, 0)
			first.startContainer(6.2, "web")
			first.ready(6.6)
			second := pullPod(t, "second", 0.4, 1.2, ctr("cache", "redis:7"))
			if tc.pulling > 0 {
				stamp := at(tc.pulling).Truncate(time.Second)
				second.events = append(second.events, &event.PodEvents{Time: at(7), PodUID: second.uid, Namespace: "default", Name: "second",
					Events: []event.PodEvent{{Type: "Normal", Reason: "Pulling", FieldPath: "spec.containers{cache}",
						Message: `Pulling image "redis:7"`, Count: 1, First: stamp, Last: stamp}}})
			}
			// In flight at 9 s.
			cor := New(Config{})
			for _, ev := range mergeEvents(first, second) {
				cor.Handle(ev)
			}
			cor.Handle(&event.Tick{Time: at(9)})
			pulling := &event.CRICall{Time: at(8.2), Method: event.CRIPullImage, PodUID: second.uid, Image: "redis:7"}
			tl, ok := cor.Snapshot(Query{UID: second.uid}, pulling)
			if !ok || len(tl.InFlight) != 1 {
				t.Fatalf("snapshot %v: in flight %+v", ok, tl)
			}
			if q := tl.InFlight[0].Queued; (q != nil) != tc.wait || q != nil && (q.Behind != 1 || !q.Start.Equal(at(1.2)) || !q.End.Equal(at(8.2))) {
				t.Errorf("queued %+v, want a wait %v (1.2s..8.2s behind 1 pull)", q, tc.wait)
			}
			// After.
			second.pull(8.2, 9.0, "redis:7", false, 0)
			second.startContainer(9.1, "cache")
			second.ready(9.5)
			w := runPods(t, Config{}, first, second)["second"].ImagePulls[0].Wait
			if (w != nil) != tc.wait {
				t.Fatalf("wait %+v, want one %v", w, tc.wait)
			}
			if w != nil && (len(w.Behind) != 1 || w.Behind[0].PodUID != first.uid || !w.Start.Equal(at(1.2)) || !w.End.Equal(at(8.2))) {
				t.Errorf("wait %v..%v behind %+v", w.Start.Sub(t0), w.End.Sub(t0), w.Behind)
			}
		})
	}
}

// TestTwoPodsPullingAtOnce: two pulls that overlap mean a parallel
// puller (serializeImagePulls: false): neither waited, both say so.
func TestTwoPodsPullingAtOnce(t *testing.T) {
	a := pullPod(t, "pa", 0.3, 0.8, ctr("x", "x:1"))
	a.pull(1.0, 6.0, "x:1", false, 0)
	a.startContainer(6.1, "x")
	a.ready(6.5)
	b := pullPod(t, "pb", 0.4, 1.2, ctr("y", "y:1"))
	b.pull(1.5, 6.02, "y:1", false, 0)
	b.startContainer(6.1, "y")
	b.ready(6.5)
	got := runPods(t, Config{}, a, b)
	for name, tl := range got {
		ip := tl.ImagePulls[0]
		if ip.Puller != PullerParallel || ip.Wait != nil {
			t.Errorf("%s: pull %+v", name, ip)
		}
	}
}

// TestPullFailuresBackOff: an image that does not exist: each failed
// PullImage call is an attempt with the API's error, the back-off between
// attempts is measured, no retry is a wait, and the timeout's reason names
// the pull and its attempts.
func TestPullFailuresBackOff(t *testing.T) {
	sc := pullPod(t, "nope", 0.3, 0.8, ctr("app", "nginx:nope"))
	notFound := `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": not found`
	backOffMsg := `Back-off pulling image "nginx:nope": ErrImagePull: ` + notFound
	for _, p := range [][2]float64{{1.0, 2.0}, {12.5, 13.0}, {33.2, 33.5}} {
		sc.pull(p[0], p[1], "nginx:nope", true, 0)
		sc.status(false, waiting("app", "ErrImagePull", notFound))
		sc.update(p[1] + 0.1)
		sc.status(false, waiting("app", "ImagePullBackOff", backOffMsg))
		sc.update(p[1] + 1)
	}
	tl := sc.run(Config{Timeout: 40 * time.Second})
	if tl.Outcome != OutcomeTimeout || len(tl.ImagePulls) != 3 {
		t.Fatalf("outcome %s, pulls %+v", tl.Outcome, tl.ImagePulls)
	}
	for i, ip := range tl.ImagePulls {
		if ip.Attempt != i+1 || !ip.Call.Err || ip.Container != "app" || ip.ErrorReason != "ErrImagePull" || ip.Error != notFound || ip.Wait != nil {
			t.Errorf("pull %d: %+v", i, ip)
		}
	}
	approx(t, "first back-off", tl.ImagePulls[1].BackOff, 10500*time.Millisecond)
	approx(t, "second back-off", tl.ImagePulls[2].BackOff, 20200*time.Millisecond)
	want := `not Ready within 40s: app: ImagePullBackOff after 3 failed pulls of nginx:nope (` + backOffMsg + ")"
	if tl.Reason != want {
		t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
	}
	if !hasInsight(tl, InsightImagePull, "pulling nginx:nope for app failed 3 times over 32.5s (ErrImagePull: rpc error") ||
		!hasInsight(tl, InsightImagePull, "30.7s of it back-off") {
		t.Errorf("insights %+v", tl.Insights)
	}
}

// TestPullErrorFromBackOffMessage: when the watch never showed the
// ErrImagePull, the error is the one the ImagePullBackOff message repeats.
func TestPullErrorFromBackOffMessage(t *testing.T) {
	sc := pullPod(t, "nope2", 0.3, 0.8, ctr("app", "registry.local:5000/app"))
	sc.pull(1.0, 1.5, "registry.local:5000/app:latest", true, 0)
	sc.status(false, waiting("app", "ImagePullBackOff", `Back-off pulling image "registry.local:5000/app": RegistryUnavailable: image pull failed for registry.local:5000/app because the registry is unavailable`))
	sc.update(2.5)
	sc.pull(12.0, 14.0, "registry.local:5000/app:latest", false, 0)
	sc.startContainer(14.1, "app")
	sc.ready(14.5)
	tl := sc.run(Config{})
	if len(tl.ImagePulls) != 2 {
		t.Fatalf("pulls %+v", tl.ImagePulls)
	}
	ip := tl.ImagePulls[0]
	if ip.Container != "app" || ip.ErrorReason != "RegistryUnavailable" || !strings.HasSuffix(ip.Error, "because the registry is unavailable") {
		t.Errorf("failed pull %+v", ip)
	}
	ok := tl.ImagePulls[1]
	if ok.Call.Err || ok.Attempt != 2 || ok.Container != "app" || ok.Wait != nil {
		t.Errorf("retry %+v", ok)
	}
	approx(t, "back-off", ok.BackOff, 10500*time.Millisecond)
	if p := pathNames(tl); !strings.Contains(p, "image.pull/app image.pull.back_off/app image.pull/app container/app") {
		t.Errorf("critical path %s", p)
	}
	if !hasInsight(tl, InsightImagePull, "took 13.0s, the pull 2.0s (size unknown), after 1 failed attempt; 10.5s of it back-off") {
		t.Errorf("insights %+v", tl.Insights)
	}
}

// TestPullNeedAfterPostStart: a main container's pull is needed when the
// container before it is started, postStart hook included.
func TestPullNeedAfterPostStart(t *testing.T) {
	other := pullPod(t, "busy", 0.2, 0.3, ctr("o", "o:1"))
	other.pull(0.5, 4.0, "o:1", false, 0)
	other.startContainer(4.5, "o")
	other.ready(5.0)
	sc := pullPod(t, "hooked", 0.3, 0.8, ctr("first", "nginx"), ctr("second", "redis"))
	sc.startContainer(1.0, "first") // image present
	id := sc.idOf("first")
	sc.call(1.2, 2.0, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd = id, []string{"sh", "-c", "sleep 0.8"} })
	sc.pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 0.8"}}}}
	sc.pull(4.05, 4.4, "redis:latest", false, 0)
	sc.startContainer(4.5, "second")
	sc.ready(5.0)
	w := runPods(t, Config{}, other, sc)["hooked"].ImagePulls[0].Wait
	if w == nil || w.Behind[0].Image != "o:1" {
		t.Fatalf("wait %+v", w)
	}
	// The need is the end of the pod's last step before the pull: the
	// StartContainer at 1.1 or, seen, the hook's end at 2.0.
	if !w.Need.After(at(1.09)) || w.Start.Before(w.Need) || !w.End.Equal(at(4.05)) {
		t.Errorf("wait %v..%v need %v (%s)", w.Start.Sub(t0), w.End.Sub(t0), w.Need.Sub(t0), w.NeedEvent)
	}
}

func TestDefaultTagged(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                        "busybox:latest",
		"busybox:1.36":                   "busybox:1.36",
		"localhost:5000/app":             "localhost:5000/app:latest",
		"localhost:5000/app:v1":          "localhost:5000/app:v1",
		"nginx@sha256:abcd":              "nginx@sha256:abcd",
		"docker.io/library/nginx:1.27.0": "docker.io/library/nginx:1.27.0",
		"":                               "",
	} {
		if got := defaultTagged(in); got != want {
			t.Errorf("defaultTagged(%q) = %q, want %q", in, got, want)
		}
	}
}

// pathNames is the critical path's step names, space-separated.
func pathNames(tl *Timeline) string {
	var names []string
	for _, s := range tl.CriticalPath {
		if n := len(names); n == 0 || names[n-1] != s.Name { // a container's calls, run, probes: one name
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, " ")
}

// TestStuckReasonCountsFailuresSinceThePull: a container whose image was
// pulled, then (its restart, imagePullPolicy Always) fails to pull again:
// the timeout counts only the failures after the pull.
func TestStuckReasonCountsFailuresSinceThePull(t *testing.T) {
	app := ctr("app", "registry.local/app:v1")
	app.ImagePullPolicy = corev1.PullAlways
	sc := pullPod(t, "again", 0.3, 0.8, app)
	sc.pull(0.9, 1.0, "registry.local/app:v1", true, 0)
	sc.pull(11.0, 12.0, "registry.local/app:v1", false, 0)
	sc.startContainer(12.1, "app")
	sc.status(false, running("app", sc.idOf("app"), 12.2, true, false)) // never ready
	sc.update(12.3)
	sc.pull(20.0, 20.5, "registry.local/app:v1", true, 0)
	sc.status(false, waiting("app", "ErrImagePull", "unauthorized"))
	sc.update(20.6)
	tl := sc.run(Config{Timeout: 30 * time.Second})
	if want := "app: ErrImagePull after 1 failed pull of registry.local/app:v1 (unauthorized)"; !strings.HasSuffix(tl.Reason, want) {
		t.Errorf("reason %q, want it to end with %q", tl.Reason, want)
	}
}
