package correlator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// csiPod is a pod with a claim ("data", bound to PersistentVolume pv-1 of
// driver csi.test) and a projected volume; it is seen at +0.1s.
func csiPod(t testing.TB, name string) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
		},
	})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.update(0.1)
	return sc
}

// sandboxAndReady emits the pod's sandbox made from s to s+0.5, its
// container started at s+0.6 and the pod Ready at s+1.
func (sc *scenario) sandboxAndReady(s float64) {
	uid, sb := sc.uid, sc.sandboxOf()
	sc.call(s, s+0.5, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = uid, sb })
	sc.runtime(s+0.51, sb, "", 0, s+0.4, 0, 0, 0)
	sc.cond(corev1.PodReadyToStartContainers, s+0.55)
	sc.update(s + 0.55)
	sc.startContainer(s+0.6, "app")
	sc.ready(s + 1)
}

// csiCall emits a call of the pod's volume's CSI driver.
func (sc *scenario) csiCall(start, end float64, m event.CRIMethod, err bool) {
	uid := sc.uid
	sc.call(start, end, m, func(c *event.CRICall) { c.PodUID, c.Volume, c.Driver, c.Err = uid, "pv-1", "csi.test", err })
}

// TestVolumeSetupBeforeTheSandbox: a volume's CSI calls are its setup, in
// the wait before the sandbox; the critical path and the breakdown give
// them their time, named by the pod's volume, the step and the driver, and
// the breakdown still sums to the start.
func TestVolumeSetupBeforeTheSandbox(t *testing.T) {
	sc := csiPod(t, "csi")
	sc.csiCall(0.3, 5.3, event.CSINodeStageVolume, false)
	sc.csiCall(5.31, 5.8, event.CSINodePublishVolume, true) // fails once
	sc.csiCall(6.3, 7.3, event.CSINodePublishVolume, false)
	sc.sandboxAndReady(7.5)
	tl := sc.run(Config{})

	if len(tl.Volumes) != 1 {
		t.Fatalf("volumes %+v, want data's", tl.Volumes)
	}
	v := tl.Volumes[0]
	if v.Name != "data" || v.Source != "pv-1" || v.Driver != "csi.test" || len(v.Calls) != 3 || !v.Calls[1].Err {
		t.Errorf("volume %+v, want data (pv-1, csi.test) with its 3 calls, the second failed", v)
	}
	var whats []string
	var volumeTime time.Duration
	for _, st := range tl.CriticalPath {
		if st.Kind == ShareWaitVolumes {
			whats = append(whats, st.What)
			volumeTime += st.End.Sub(st.Start)
			if st.Name != VolumeStepName("data") {
				t.Errorf("step %q, want %q", st.Name, VolumeStepName("data"))
			}
		}
	}
	want := []string{
		"volume data: NodeStageVolume 5.0s (csi.test)",
		"volume data: NodePublishVolume 490ms failed (csi.test)",
		"volume data: NodePublishVolume 1.0s (csi.test)",
	}
	if strings.Join(whats, "|") != strings.Join(want, "|") {
		t.Errorf("volume steps %q, want %q", whats, want)
	}
	approx(t, "time in volume calls", volumeTime, 6490*time.Millisecond)
	var sum time.Duration
	for _, s := range tl.Breakdown {
		sum += s.Duration
		if s.Kind == ShareWaitVolumes {
			approx(t, "breakdown's wait.volumes", s.Duration, 6490*time.Millisecond)
		}
	}
	approx(t, "breakdown's sum", sum, tl.End.Sub(tl.Start))
}

// TestVolumeCallInFlight: a CSI call in flight is what the start waits on,
// in the driver's words: the pod's volume, the step, how long so far.
func TestVolumeCallInFlight(t *testing.T) {
	sc := csiPod(t, "csi-in-flight")
	sc.ticks(1, 10)
	stage := &event.CRICall{Time: at(0.3), Method: event.CSINodeStageVolume, PodUID: sc.uid, Volume: "pv-1", Driver: "csi.test"}
	tl := snapshotAt(t, sc, 6.5, stage)
	want := "volume data: NodeStageVolume 5.7s so far (csi.test)" // as of the last tick, +6s
	if !strings.HasPrefix(tl.Waiting, want) {
		t.Errorf("waiting %q, want it to begin %q", tl.Waiting, want)
	}
	if len(tl.InFlight) != 1 || tl.InFlight[0].Volume != "data" || tl.InFlight[0].Driver != "csi.test" {
		t.Errorf("in flight %+v, want the stage of data", tl.InFlight)
	}
}

// TestPodVolumeName: the pod's name of a volume the kubelet names by its
// PersistentVolume (one claim: that claim's volume; several: the
// PersistentVolume's name) or inline (the CSI volume of the driver).
func TestPodVolumeName(t *testing.T) {
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	inline := func(name, driver string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver}}}
	}
	pod := func(vs ...corev1.Volume) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{Volumes: vs}} }
	for _, tc := range []struct {
		pod            *corev1.Pod
		source, driver string
		want           string
	}{
		{pod(claim("data")), "pv-1", "d", "data"},
		{pod(claim("a"), claim("b")), "pv-1", "d", "pv-1"},
		{pod(inline("cache", "d"), claim("a")), "", "d", "cache"},
		{pod(inline("x", "d"), inline("y", "d")), "", "d", ""},
		{pod(inline("x", "other")), "", "d", ""},
	} {
		if got := podVolumeName(tc.pod, tc.source, tc.driver); got != tc.want {
			t.Errorf("podVolumeName(%v, %q, %q) = %q, want %q", tc.pod.Spec.Volumes, tc.source, tc.driver, got, tc.want)
		}
	}
}

// TestVolumesInParallel: the volume manager sets volumes up in parallel;
// the critical path takes the chain that held the sandbox (the setup that
// ended last, and what ended last before it began), an in-tree volume is
// named by its own name and plugin, and the Secret's setup again after the
// sandbox (at each sync of the pod) is not part of the start's volumes.
func TestVolumesInParallel(t *testing.T) {
	sc := csiPod(t, "parallel")
	uid := sc.uid
	setUp := func(start, end float64, volume, plugin string) {
		sc.call(start, end, event.VolumeSetUp, func(c *event.CRICall) { c.PodUID, c.Volume, c.Driver = uid, volume, plugin })
	}
	for i := range 10 {
		setUp(0.20+0.01*float64(i), 0.25+0.01*float64(i), fmt.Sprintf("cfg-%d", i), "kubernetes.io/configmap")
	}
	setUp(0.2, 0.3, "kube-api-access", "kubernetes.io/projected")
	sc.csiCall(0.3, 2.3, event.CSINodeStageVolume, false)
	setUp(0.4, 2.0, "slow-secret", "kubernetes.io/secret") // inside the stage: not on the path
	sc.csiCall(2.3, 2.8, event.CSINodePublishVolume, false)
	sc.sandboxAndReady(3.0)
	setUp(4.2, 4.25, "slow-secret", "kubernetes.io/secret") // the next sync's
	tl := sc.run(Config{})

	if len(tl.Volumes) != 13 {
		t.Fatalf("%d volumes, want 13: %+v", len(tl.Volumes), tl.Volumes)
	}
	for _, v := range tl.Volumes {
		if v.Name == "slow-secret" && (v.Driver != "kubernetes.io/secret" || len(v.Calls) != 1 || v.Source != "") {
			t.Errorf("slow-secret %+v, want its one setup before the sandbox", v)
		}
	}
	var whats []string
	for _, st := range tl.CriticalPath {
		if st.Kind == ShareWaitVolumes {
			whats = append(whats, st.What)
		}
	}
	want := []string{
		"volume kube-api-access: SetUp 100ms (kubernetes.io/projected)",
		"volume data: NodeStageVolume 2.0s (csi.test)",
		"volume data: NodePublishVolume 500ms (csi.test)",
	}
	if strings.Join(whats, "|") != strings.Join(want, "|") {
		t.Errorf("volume steps %q, want %q", whats, want)
	}
}

// TestVolumeAttach: a volume that needs attaching waits from the pod's
// arrival on the node to the kubelet's WaitForAttach: that wait is the
// volume's attach, a step of the critical path before its stage.
func TestVolumeAttach(t *testing.T) {
	sc := csiPod(t, "attached")
	uid := sc.uid
	sc.call(3.1, 3.12, event.VolumeWaitForAttach, func(c *event.CRICall) { c.PodUID, c.Volume = uid, "pv-1" })
	sc.csiCall(3.15, 4.15, event.CSINodeStageVolume, false)
	sc.csiCall(4.16, 4.3, event.CSINodePublishVolume, false)
	sc.sandboxAndReady(4.4)
	tl := sc.run(Config{})
	if len(tl.Volumes) != 1 {
		t.Fatalf("volumes %+v, want data's alone (WaitForAttach's with its CSI calls)", tl.Volumes)
	}
	v := tl.Volumes[0]
	wait, _ := phaseNamed(tl, PhaseWaitSandbox)
	if v.Name != "data" || v.Driver != "csi.test" || v.Attach == nil || !v.Attach.Start.Equal(wait.Start) || !v.Attach.End.Equal(at(3.12)) {
		t.Fatalf("volume %+v (attach %+v), want data's attach from the wait's start %v to +3.12s", v, v.Attach, wait.Start)
	}
	var whats []string
	for _, st := range tl.CriticalPath {
		if st.Kind == ShareWaitVolumes {
			whats = append(whats, st.What)
		}
	}
	if len(whats) != 3 || !strings.HasPrefix(whats[0], "volume data: attached after 3.0") || !strings.HasSuffix(whats[0], "(csi.test)") {
		t.Errorf("volume steps %q, want the attach, the stage and the publish", whats)
	}
}

// TestClaimNotSetUp: a start waiting for its sandbox whose claim's volume
// has had no setup step while its other volumes had (the kubelet waits for
// the volume's attach, or its driver) says so once 5 s have gone.
func TestClaimNotSetUp(t *testing.T) {
	sc := csiPod(t, "unset")
	uid := sc.uid
	sc.call(0.2, 0.25, event.VolumeSetUp, func(c *event.CRICall) {
		c.PodUID, c.Volume, c.Driver = uid, "kube-api-access", "kubernetes.io/projected"
	})
	sc.ticks(1, 10)
	if tl := snapshotAt(t, sc, 3); strings.Contains(tl.Waiting, "not set up") {
		t.Errorf("at +3s waiting %q: too soon to say", tl.Waiting)
	}
	tl := snapshotAt(t, sc, 8)
	if want := "volume data: not set up after 8.0s (the kubelet has made no call to its driver"; !strings.Contains(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q", tl.Waiting, want)
	}
}

// provisionedPod is csiPod scheduled at +5s, once its claim's volume was
// provisioned (the claim's Events from +1s to +4s, read at +5.3s with
// the pod's own); its volume staged and published, then Ready at +7s.
func provisionedPod(t *testing.T, failures int32) *scenario {
	sc := newScenario(t, "provisioned", corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
		},
	})
	sc.cond(corev1.PodScheduled, 5)
	sc.cond(corev1.PodInitialized, 5.05)
	sc.update(5.1)
	claim := func(reason string, first, last float64, count int32) event.PodEvent {
		return event.PodEvent{Type: "Normal", Reason: reason, Claim: "data-claim", Component: "csi.test_node-1_1f2e", Count: count, First: at(first), Last: at(last)}
	}
	evs := []event.PodEvent{claim("Provisioning", 1, 3, 3), claim("ProvisioningSucceeded", 4, 4, 1)}
	if failures > 0 {
		evs = append(evs, event.PodEvent{Type: "Warning", Reason: "ProvisioningFailed", Claim: "data-claim", Message: "rpc error: code = Unavailable", Count: failures, First: at(1), Last: at(3)})
	}
	sc.events = append(sc.events, &event.PodEvents{Time: at(5.3), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name, Claims: evs, ClaimsRead: true})
	sc.csiCall(5.4, 5.5, event.CSINodeStageVolume, false)
	sc.csiCall(5.5, 5.6, event.CSINodePublishVolume, false)
	sc.sandboxAndReady(6)
	return sc
}

// TestVolumeProvisionedBeforeScheduling: a claim provisioned while the pod
// waited to be scheduled is its volume's provision, from the claim's
// Events; the critical path splits the scheduling around it, and the
// breakdown counts it as waiting for volumes, summing to the start still.
func TestVolumeProvisionedBeforeScheduling(t *testing.T) {
	for _, tc := range []struct {
		failures int32
		what     string
	}{
		{0, "volume data: provisioned in 3.0s (csi.test)"},
		{2, "volume data: provisioned in 3.0s, after 2 failed attempts (csi.test)"},
	} {
		tl := provisionedPod(t, tc.failures).run(Config{})
		if len(tl.Volumes) != 1 || tl.Volumes[0].Provision == nil {
			t.Fatalf("volumes %+v, want data's provision", tl.Volumes)
		}
		p := tl.Volumes[0].Provision
		if p.Claim != "data-claim" || !p.Start.Equal(at(1)) || !p.End.Equal(at(4)) || p.Failures != int(tc.failures) || len(tl.Volumes[0].Calls) != 2 {
			t.Errorf("provision %+v of %+v", p, tl.Volumes[0])
		}
		var steps []string
		for _, st := range tl.CriticalPath {
			if st.Start.Before(at(5)) {
				steps = append(steps, fmt.Sprintf("%s %s %v..%v", st.Name, st.What, st.Start.Sub(t0), st.End.Sub(t0)))
			}
		}
		want := []string{"pod.schedule  0s..1s", "volume/data " + tc.what + " 1s..4s", "pod.schedule  4s..5.1s"} // to the pod seen on the node
		if strings.Join(steps, "|") != strings.Join(want, "|") {
			t.Errorf("steps before the pod was scheduled %q, want %q", steps, want)
		}
		var sum, volumes time.Duration
		for _, s := range tl.Breakdown {
			sum += s.Duration
			if s.Kind == ShareWaitVolumes {
				volumes = s.Duration
			}
		}
		approx(t, "breakdown's sum", sum, tl.End.Sub(tl.Start))
		approx(t, "waiting for volumes", volumes, 3200*time.Millisecond) // the provision, stage and publish
	}
}

// TestClaimEventsWanted: a pod with a claim that waited 2 s or more to be
// scheduled wants its claims' Events read at once; read, they are wanted
// with the pod's own 5 s into the start; a pod scheduled at once wants
// none.
func TestClaimEventsWanted(t *testing.T) {
	sc := provisionedPod(t, 0)
	c := New(Config{})
	for _, ev := range sc.events {
		if ev.When().After(at(5.2)) {
			break
		}
		c.Handle(ev)
	}
	w := c.WantEvents()
	if len(w) != 1 || len(w[0].Claims) != 1 || w[0].Claims[0] != "data-claim" {
		t.Fatalf("wanted %+v, want the pod's with its claim", w)
	}
	c.Handle(&event.PodEvents{Time: at(5.3), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name, ClaimsRead: true})
	if w := c.WantEvents(); len(w) != 0 {
		t.Errorf("wanted %+v after the claims were read", w)
	}
	quick := csiPod(t, "quick")
	c = New(Config{})
	for _, ev := range quick.events {
		c.Handle(ev)
	}
	c.Handle(&event.Tick{Time: at(0.5)})
	if w := c.WantEvents(); len(w) != 0 {
		t.Errorf("a pod scheduled at once: wanted %+v", w)
	}
}

// TestVolumeProvisionedTwoClaims: a pod with a claim and an ephemeral
// volume (its claim <pod>-<volume>) whose volumes were provisioned in
// parallel: each volume has its provision, by the pod's name for it; the
// critical path takes the one that ended last, and the other's Events of
// another claim of the namespace are not the pod's.
func TestVolumeProvisionedTwoClaims(t *testing.T) {
	sc := newScenario(t, "two-claims", corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		},
	})
	sc.cond(corev1.PodScheduled, 6)
	sc.cond(corev1.PodInitialized, 6.05)
	sc.update(6.1)
	ev := func(claim, reason string, s float64) event.PodEvent {
		return event.PodEvent{Type: "Normal", Reason: reason, Claim: claim, Component: "csi.test_node-1", Count: 1, First: at(s), Last: at(s)}
	}
	sc.events = append(sc.events, &event.PodEvents{Time: at(6.3), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name, ClaimsRead: true,
		Claims: []event.PodEvent{
			ev("data-claim", "Provisioning", 1), ev("two-claims-scratch", "Provisioning", 1),
			ev("data-claim", "ProvisioningSucceeded", 3), ev("two-claims-scratch", "ProvisioningSucceeded", 5),
			ev("someone-else", "Provisioning", 0),
		}})
	sc.sandboxAndReady(6.5)
	tl := sc.run(Config{})
	got := map[string]string{}
	for _, v := range tl.Volumes {
		if p := v.Provision; p != nil {
			got[v.Name] = fmt.Sprintf("%s %v..%v", p.Claim, p.Start.Sub(t0), p.End.Sub(t0))
		}
	}
	if len(got) != 2 || got["data"] != "data-claim 1s..3s" || got["scratch"] != "two-claims-scratch 1s..5s" {
		t.Errorf("provisions %v, want data's 1s..3s and scratch's 1s..5s", got)
	}
	var steps []string
	for _, st := range tl.CriticalPath {
		if st.Kind == ShareWaitVolumes {
			steps = append(steps, st.What)
		}
	}
	if want := "volume scratch: provisioned in 4.0s (csi.test)"; len(steps) != 1 || steps[0] != want {
		t.Errorf("volume steps %q, want only %q (the one that held the scheduling)", steps, want)
	}
}
