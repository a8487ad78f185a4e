package correlator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
)

// configHash is a static pod's UID on the node: the kubelet's FNV-128a hash
// of its manifest, 32 hex digits (pkg/kubelet/config/common.go).
const configHash = "6d1c8e0a5b9f4e3d2c1b0a9f8e7d6c5b"

// staticPod is a control-plane-like static pod: the kubelet runs it from
// t0 on, the node facts carry configHash, and the mirror pod appears only
// at mirrorAt, first seen with the status the kubelet had kept back (Ready
// at 1 s) when readyAtMirror.
func staticPod(t testing.TB, mirrorAt float64, readyAtMirror bool) *scenario {
	sc := newScenario(t, "etcd", corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}})
	sc.static(configHash, mirrorAt)
	hash := sc.hash
	sc.call(0.20, 0.45, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = hash, sandboxID })
	sc.sandboxUp(0.3)
	sc.call(0.50, 0.60, event.CRICreateContainer, func(c *event.CRICall) {
		c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = hash, sandboxID, "etcd", idMain
	})
	sc.exec(0.68, idMain, 1100, shimPID, "etcd", "--data-dir=/var/lib/etcd")
	sc.call(0.61, 0.70, event.CRIStartContainer, func(c *event.CRICall) { c.ContainerID = idMain })
	sc.runtime(0.75, idMain, "etcd", 0, 0.6, 0.7, 0, 0)
	sc.ticks(1, mirrorAt)

	sc.startTime(0.1)
	sc.cond(corev1.PodScheduled, 0.1)
	sc.cond(corev1.PodReadyToStartContainers, 0.45)
	sc.cond(corev1.PodInitialized, 0.1)
	if readyAtMirror {
		sc.status(false, running("etcd", idMain, 0.7, true, true))
		sc.cond(corev1.ContainersReady, 1.0)
		sc.cond(corev1.PodReady, 1.0)
		sc.update(mirrorAt + 0.2)
	} else {
		sc.status(false, running("etcd", idMain, 0.7, true, false))
		sc.update(mirrorAt + 0.2)
		sc.status(false, running("etcd", idMain, 0.7, true, true))
		sc.cond(corev1.ContainersReady, mirrorAt+1)
		sc.cond(corev1.PodReady, mirrorAt+1)
		sc.update(mirrorAt + 1.05)
	}
	// An exec the kubelet makes later names the container only: it reaches
	// the mirror pod through the container id the hash-keyed facts taught.
	sc.call(mirrorAt+1.5, mirrorAt+1.52, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID = idMain })
	return sc
}

// TestStaticPodJoinsMirror: node facts keyed by the config hash, arriving
// 45 s (longer than OrphanTTL) before the mirror pod, make the mirror's
// trace; the start is what the node saw first, not the mirror's age.
func TestStaticPodJoinsMirror(t *testing.T) {
	sc := staticPod(t, 45, true)
	tl := sc.run(Config{})
	if tl.Pod.UID != sc.uid || tl.Pod.ConfigHash != configHash || !tl.Pod.Static() {
		t.Fatalf("pod %+v: want the mirror's UID %s and the hash %s", tl.Pod, sc.uid, configHash)
	}
	if tl.Outcome != OutcomeReady || !tl.Start.Equal(at(0.20)) {
		t.Errorf("outcome %s from %v, want ready from the RunPodSandbox call at 0.20s", tl.Outcome, tl.Start.Sub(t0))
	}
	// Ready's lastTransitionTime (1 s), not the mirror's first sight at 45.2 s.
	if !tl.End.Equal(at(1)) {
		t.Errorf("end %v, want Ready's lastTransitionTime 1s", tl.End.Sub(t0))
	}
	if sb := tl.Sandbox; sb == nil || sb.Call == nil || !sb.PauseStart.Equal(at(0.35)) || !sb.Created.Equal(at(0.3)) {
		t.Errorf("sandbox %+v: want the hash-keyed call, pause and runtime facts", sb)
	}
	a := findContainer(t, tl, "etcd").Attempts
	if len(a) != 1 || a[0].Process == nil || a[0].Process.PID != 1100 || !a[0].Created.Equal(at(0.6)) {
		t.Fatalf("etcd attempts %+v", a)
	}
	if len(a[0].Calls) != 2 || a[0].Calls[0].Method != event.CRICreateContainer || a[0].Calls[1].Method != event.CRIStartContainer {
		t.Errorf("etcd calls %+v: want CreateContainer and StartContainer", a[0].Calls)
	}
	for _, c := range tl.Conditions {
		if !c.Coarse || !c.Observed.Equal(c.LastTransitionTime) || c.Lag() != 0 {
			t.Errorf("condition %+v: the mirror's first status is not an observation of it", c)
		}
	}
	for _, in := range tl.Insights {
		if in.Kind == InsightStatusLag {
			t.Errorf("status lag insight %q from a mirror created 45 s late", in.Message)
		}
	}
	// The node saw the start from the sandbox on: not a late sight.
	if !tl.ObservedSince.IsZero() || len(tl.Missing) != 0 {
		t.Errorf("observed since %v, missing %q: the node facts were seen from the start", tl.ObservedSince, tl.Missing)
	}
}

// TestStaticPodMirrorBeforeReady: a mirror pod that appears while the start
// is still going is followed like any pod, with the hash-keyed facts.
func TestStaticPodMirrorBeforeReady(t *testing.T) {
	sc := staticPod(t, 2, false)
	tl := sc.run(Config{})
	if tl.Pod.UID != sc.uid || tl.Pod.ConfigHash != configHash || !tl.Start.Equal(at(0.20)) || !tl.End.Equal(at(3.05)) {
		t.Fatalf("pod %+v %v..%v", tl.Pod, tl.Start.Sub(t0), tl.End.Sub(t0))
	}
	if c := findCondition(t, tl, CondReady); c.Coarse || !c.Observed.Equal(at(3.05)) {
		t.Errorf("Ready %+v: observed by the watch, not coarse", c)
	}
	// The mirror, first seen at 2.2 s, reports PodScheduled since 0 s (the
	// kubelet's own, truncated): older than its sight, so not an observation.
	if c := findCondition(t, tl, CondPodScheduled); !c.Coarse || !c.Observed.Equal(t0) {
		t.Errorf("PodScheduled %+v: want coarse at its lastTransitionTime", c)
	}
	if a := findContainer(t, tl, "etcd").Attempts; len(a) != 1 || a[0].Process == nil {
		t.Errorf("etcd attempts %+v", a)
	}
}

// TestStaticPodAfterRestartNotTraced: after a daemon restart, a mirror pod
// already Ready and a runtime that reports a sandbox created long ago are a
// start that happened out of sight: no timeline, whichever comes first.
func TestStaticPodAfterRestartNotTraced(t *testing.T) {
	for _, mirrorFirst := range []bool{false, true} {
		sc := newScenario(t, "kube-apiserver", corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver"}}})
		sc.static(configHash, 5)
		mirror := func() {
			sc.cond(corev1.PodScheduled, 0)
			sc.cond(corev1.PodReady, 3)
			sc.update(600.1)
		}
		if mirrorFirst {
			mirror()
		}
		sc.runtime(600.2, sandboxID, "", 0, 0.3, 0, 0, 0)
		sc.runtime(600.2, idMain, "kube-apiserver", 0, 0.6, 0.7, 0, 0)
		if !mirrorFirst {
			mirror()
		}
		c := New(Config{})
		if got := feed(c, sc.events, 40*time.Second); len(got) != 0 {
			t.Errorf("mirror first %v: %d timelines, want none: %+v", mirrorFirst, len(got), got[0])
		}
		if st := c.Stats(); st.Tracked != 0 {
			t.Errorf("mirror first %v: stats %+v", mirrorFirst, st)
		}
	}
}

// lateStart is a one-container pod whose start readyline sees only from
// 13 s on (the daemon restarted): the pod object then says it was scheduled
// at 0, its sandbox ready at 0.6 s, its container running since 1 s; the
// runtime reports what it created before. Ready comes at 20 s, in view.
func lateStart(t testing.TB) *scenario {
	sc := newScenario(t, "late", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		ReadinessProbe: execProbe(0, 1, "check")}}})
	sc.startTime(0.1)
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0.1)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.status(false, running("app", idMain, 1, true, false))
	sc.runtime(13.0, sandboxID, "", 0, 0.5, 0, 0, 0)
	sc.runtime(13.0, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.update(13.05)
	sc.exec(19.5, idMain, 1200, shimPID, "check")
	sc.exit(19.52, idMain, 1200, 0)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 20)
	sc.cond(corev1.PodReady, 20)
	sc.update(20.0)
	return sc
}

// TestLateSightConditionsCoarse: conditions already True when the pod was
// first seen keep their lastTransitionTime and no lag; the timeline says
// from when the daemon saw the pod and what it missed.
func TestLateSightConditionsCoarse(t *testing.T) {
	tl := lateStart(t).run(Config{})
	if !tl.ObservedSince.Equal(at(13.0)) {
		t.Errorf("observed since %v, want 13s (the runtime's first report)", tl.ObservedSince.Sub(t0))
	}
	if !tl.Start.Equal(t0) || !tl.End.Equal(at(20)) || tl.Outcome != OutcomeReady {
		t.Errorf("%s %v..%v", tl.Outcome, tl.Start.Sub(t0), tl.End.Sub(t0))
	}
	for _, typ := range []string{CondPodScheduled, CondInitialized, CondPodReadyToStartContainers} {
		c := findCondition(t, tl, typ)
		if !c.Coarse || !c.Observed.Equal(c.LastTransitionTime) || c.Lag() != 0 {
			t.Errorf("%s %+v: want coarse at its lastTransitionTime, no lag", typ, c)
		}
	}
	if c := findCondition(t, tl, CondPodReadyToStartContainers); !c.Observed.Equal(at(0)) {
		t.Errorf("PodReadyToStartContainers at %v, want its lastTransitionTime 0s", c.Observed.Sub(t0))
	}
	if c := findCondition(t, tl, CondReady); c.Coarse || !c.Observed.Equal(at(20)) || c.Lag() <= 0 {
		t.Errorf("Ready %+v: seen in view, want a real observation with its lag", c)
	}
	if hasInsight(tl, InsightStatusLag, CondPodReadyToStartContainers) || hasInsight(tl, InsightStatusLag, CondInitialized) {
		t.Errorf("status lag of a condition True at first sight: %+v", tl.Insights)
	}
	want := map[string]bool{
		"the RunPodSandbox call (the sandbox's times are the runtime's)": true,
		"the pause process":                        true,
		"container app: its process and CRI calls": true,
	}
	for _, m := range tl.Missing {
		delete(want, m)
	}
	if len(want) != 0 {
		t.Errorf("missing %q lacks %v", tl.Missing, want)
	}
}

// TestLateSightFromThePodOnly: what makes a sight late is the pod's own
// evidence, each kind on its own, never the daemon's uptime; within 2 s
// of truncation and watch delay it is not late.
func TestLateSightFromThePodOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(sc *scenario)
		late bool
	}{
		{"fresh", func(sc *scenario) {}, false},
		{"scheduled 1.9s before", func(sc *scenario) { sc.cond(corev1.PodScheduled, 8.1) }, false},
		{"startTime", func(sc *scenario) { sc.startTime(2) }, true},
		{"condition", func(sc *scenario) { sc.cond(corev1.PodReadyToStartContainers, 3) }, true},
		{"restarted", func(sc *scenario) {
			cs := running("app", idMain, 9.9, false, false)
			cs.RestartCount = 1
			sc.status(false, cs)
		}, true},
		{"running", func(sc *scenario) { sc.status(false, running("app", idMain, 4, false, false)) }, true},
		{"terminated", func(sc *scenario) {
			cs := terminated("app", idMain, 1, 0)
			cs.State.Terminated.StartedAt = metav1.NewTime(at(3))
			sc.status(false, cs)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t, "p", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
			sc.pod.CreationTimestamp = metav1.NewTime(at(0))
			sc.cond(corev1.PodScheduled, 9.5)
			tc.set(sc)
			sc.update(10)
			sc.delete(11)
			tl := sc.run(Config{})
			if got := !tl.ObservedSince.IsZero(); got != tc.late {
				t.Errorf("late %v (observed since %v), want %v", got, tl.ObservedSince, tc.late)
			}
		})
	}
}

// TestNormalStartNotLate: a start seen from the beginning gains none of the
// late-sight marks.
func TestNormalStartNotLate(t *testing.T) {
	for _, sc := range []*scenario{lifecycleDemo(t), kernelDemo(t), readyPod(t, "ready")} {
		tl := sc.run(Config{})
		if !tl.ObservedSince.IsZero() || tl.Missing != nil || tl.Pod.ConfigHash != "" {
			t.Errorf("%s: observed since %v, missing %q, hash %q", tl.Pod.Name, tl.ObservedSince, tl.Missing, tl.Pod.ConfigHash)
		}
		for _, c := range tl.Conditions {
			if c.Coarse {
				t.Errorf("%s: %s coarse", tl.Pod.Name, c.Type)
			}
		}
	}
}

// TestConfigHashForm: the kubelet's config hash is 32 hex digits, an API
// server UID a UUID.
func TestConfigHashForm(t *testing.T) {
	for uid, want := range map[string]bool{
		configHash:                             true,
		"00000000-0000-4000-8000-000000000001": false,
		"6D1C8E0A5B9F4E3D2C1B0A9F8E7D6C5B":     false, // hex.EncodeToString is lower case
		"6d1c8e0a5b9f4e3d2c1b0a9f8e7d6c5":      false,
	} {
		if got := looksLikeConfigHash(uid); got != want {
			t.Errorf("looksLikeConfigHash(%q) = %v", uid, got)
		}
	}
}
