//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/csi"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
	"github.com/readyline/readyline/exporter"
)

// provisionClass creates a StorageClass of the provisioning test driver,
// named after the test's namespace ns (classes are cluster-wide), that
// waits for its claims' first consumer, with params; it is deleted when
// the test ends.
func provisionClass(t *testing.T, ctx context.Context, ns string, params map[string]string) string {
	t.Helper()
	waits := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ns},
		Provisioner:       provisionDriverName,
		VolumeBindingMode: &waits,
		Parameters:        params,
	}
	if _, err := env.Client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := suiteContext(time.Minute)
		defer cancel()
		if err := env.Client.StorageV1().StorageClasses().Delete(cctx, class.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting StorageClass %s: %v", class.Name, err)
		}
	})
	return class.Name
}

// provisionedClaim creates claim name of class in ns; once the test's
// pods are gone (cleanups registered later run first), it deletes the
// claim and waits for the driver's provisioner to delete its volume.
func provisionedClaim(t *testing.T, ctx context.Context, ns, name, class string) *corev1.PersistentVolumeClaim {
	t.Helper()
	claim, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := csi.ProvisionedVolumeName(claim.UID)
	t.Cleanup(func() {
		cctx, cancel := suiteContext(2 * time.Minute)
		defer cancel()
		err := env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(cctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting claim %s/%s: %v", ns, name, err)
		}
		err = wait.PollUntilContextTimeout(cctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err == nil {
			return
		}
		t.Errorf("the provisioner did not delete volume %s within a minute of its claim's deletion", pv)
		if err := env.Client.CoreV1().PersistentVolumes().Delete(cctx, pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting volume %s: %v", pv, err)
		}
	})
	return claim
}

// objectEvents lists the Events of object kind/name in ns, oldest first.
func objectEvents(ctx context.Context, ns, kind, name string) ([]corev1.Event, error) {
	list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": kind, "involvedObject.name": name}.String()})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(list.Items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	return list.Items, nil
}

// eventTime is when e was first seen: its eventTime (µs, events.k8s.io
// recorders) or else its firstTimestamp (s, core/v1 recorders).
func eventTime(e corev1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// describePodWait is what a recorded pod shows of its scheduling: node,
// nominated node and conditions with their reasons.
func describePodWait(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodeName=%q nominatedNodeName=%q phase=%s", p.Spec.NodeName, p.Status.NominatedNodeName, p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		if c.Reason != "" || c.Message != "" {
			fmt.Fprintf(&b, "(%s: %s)", c.Reason, c.Message)
		}
		fmt.Fprintf(&b, "@%s", c.LastTransitionTime.Format(time.TimeOnly))
	}
	return b.String()
}

// provisionedPod is a test's pod whose claim (claimName) the test
// driver's provisioner provisions.
type provisionedPod struct {
	d      *Daemon
	ctx    context.Context
	driver *csi.Driver
	ns     string
	claim  *corev1.PersistentVolumeClaim
	pv     string // the claim's volume, once made
	rec    *PodRecorder
}

// claimName is provisionedPod's claim.
const claimName = "data-claim"

// startProvisionedPod runs the test driver with its provisioner, makes a
// class of it with params and a claim of the class in a new namespace, and
// applies pod name with the claim mounted; it waits for the pod to be
// Ready. Its cleanups delete the pod, wait for the volume's unstage, delete
// the claim and wait for the volume's deletion, then the class.
func startProvisionedPod(t *testing.T, timeout time.Duration, name string, params map[string]string) *provisionedPod {
	t.Helper()
	c := applyProvisionedPod(t, timeout, name, params)
	c.waitReady(t)
	return c
}

// applyProvisionedPod is startProvisionedPod without the wait for Ready.
func applyProvisionedPod(t *testing.T, timeout time.Duration, name string, params map[string]string) *provisionedPod {
	t.Helper()
	c := &provisionedPod{d: readyline(t), ctx: testContext(t, timeout)}
	c.driver = startDriver(t, c.ctx, provisionDriverName, driverNeeds{provision: true})
	c.ns = newNamespace(t)
	class := provisionClass(t, c.ctx, c.ns, params)
	c.claim = provisionedClaim(t, c.ctx, c.ns, claimName, class)
	c.pv = csi.ProvisionedVolumeName(c.claim.UID)
	c.rec = recordPod(t, c.ns, name)
	waitUnstaged(t, c.driver, c.pv)
	deletePodAndWait(t, c.ns, name)
	if _, err := env.Apply(c.ctx, c.ns, []byte(claimPodManifest(name, claimName))); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReady waits for the pod to be Ready and logs what the recorder saw
// of its scheduling.
func (c *provisionedPod) waitReady(t *testing.T) {
	t.Helper()
	if _, err := c.rec.WaitFor(c.ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range c.rec.Events() {
		t.Logf("pod %s at %s: %s", ev.Type, ev.ObservedAt.Format("15:04:05.000"), describePodWait(ev.Pod))
	}
}

// createCalls are the provisioner's CreateVolume calls of the claim's
// volume, oldest first.
func (c *provisionedPod) createCalls() []csi.Call {
	var calls []csi.Call
	for _, call := range c.driver.Calls() {
		if call.Method == csi.MethodCreateVolume && call.VolumeID == csi.ProvisionedVolumeHandle(c.pv) {
			calls = append(calls, call)
		}
	}
	return calls
}

// boundAfter checks that the pod was bound only after end: the recorder
// saw no node before then, and the bind's PodScheduled condition (second
// precision) is not earlier than end's second. It returns the condition.
func (c *provisionedPod) boundAfter(t *testing.T, end time.Time) corev1.PodCondition {
	t.Helper()
	if ev, ok := c.rec.First(func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }); !ok || ev.ObservedAt.Before(end) {
		t.Errorf("the pod was seen bound at %v, want after the volume was made at %v", ev.ObservedAt, end)
	}
	scheduled, ok := c.rec.First(ConditionTrue(corev1.PodScheduled))
	if !ok {
		t.Fatal("the pod was never seen with PodScheduled True")
	}
	cond, _ := Condition(scheduled.Pod, corev1.PodScheduled)
	if cond.LastTransitionTime.Time.Before(end.Truncate(time.Second)) {
		t.Errorf("PodScheduled True at %v, before the volume was made at %v", cond.LastTransitionTime.Time, end)
	}
	return cond
}

// claimEvents waits for the claim's ProvisioningSucceeded Event (the
// recorder sends Events after the fact) and returns the claim's Events,
// oldest first, logging them.
func (c *provisionedPod) claimEvents(t *testing.T) []corev1.Event {
	t.Helper()
	var events []corev1.Event
	err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		events, err = objectEvents(ctx, c.ns, "PersistentVolumeClaim", claimName)
		return err == nil && slices.ContainsFunc(events, func(e corev1.Event) bool { return e.Reason == csi.ReasonProvisioningSucceeded }), nil
	})
	for _, e := range events {
		t.Logf("claim event %s %s from %s: %q firstTimestamp=%s lastTimestamp=%s eventTime=%s count=%d", e.Type, e.Reason, e.Source.Component,
			e.Message, e.FirstTimestamp.Format(time.RFC3339Nano), e.LastTimestamp.Format(time.RFC3339Nano), e.EventTime.Format(time.RFC3339Nano), e.Count)
	}
	if err != nil {
		t.Fatalf("no %s Event on claim %s/%s within 10s: %v", csi.ReasonProvisioningSucceeded, c.ns, claimName, err)
	}
	return events
}

// logPodEvents logs the pod's Events.
func (c *provisionedPod) logPodEvents(t *testing.T, name string) {
	t.Helper()
	events, err := objectEvents(c.ctx, c.ns, "Pod", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		t.Logf("pod event %s %s from %s: %q firstTimestamp=%s eventTime=%s count=%d", e.Type, e.Reason, e.Source.Component+e.ReportingController,
			e.Message, e.FirstTimestamp.Format(time.RFC3339Nano), e.EventTime.Format(time.RFC3339Nano), e.Count)
	}
}

// eventOf is the first of events with reason.
func eventOf(events []corev1.Event, reason string) (corev1.Event, bool) {
	i := slices.IndexFunc(events, func(e corev1.Event) bool { return e.Reason == reason })
	if i < 0 {
		return corev1.Event{}, false
	}
	return events[i], true
}

// TestVolumeProvisionWaits: a pod whose claim's class waits for its first
// consumer, and whose provisioner takes 4 s: the claim's Events say
// Provisioning then ProvisioningSucceeded about 4 s later, as the CSI
// external-provisioner's do; the pod is bound to the node only after the
// volume was made (bounded by the provisioner's and the pod recorder's
// stamps), then becomes Ready with the volume staged and published.
func TestVolumeProvisionWaits(t *testing.T) {
	t.Parallel()
	const name = "provisioned"
	c := startProvisionedPod(t, 4*time.Minute, name, map[string]string{csi.ParamProvisionDelay: "4s", csi.AttrPublishDelay: "300ms"})
	creates := c.createCalls()
	if len(creates) != 1 || creates[0].Err != nil {
		t.Fatalf("the provisioner's CreateVolume calls of %s: %+v, want one that worked", c.pv, creates)
	}
	created := creates[0]
	// The driver's own stamps around its timer of the class's delay.
	if took := created.End.Sub(created.Start); took < 4*time.Second {
		t.Errorf("CreateVolume of %s took %v, want the class's 4s at least", c.pv, took)
	}
	t.Logf("CreateVolume of %s: %s to %s", c.pv, created.Start.Format("15:04:05.000"), created.End.Format("15:04:05.000"))
	// The volume's node stage and publish came after it was made.
	handle := csi.ProvisionedVolumeHandle(c.pv)
	calls := c.driver.Calls()
	for _, m := range []string{"NodeStageVolume", "NodePublishVolume"} {
		j := slices.IndexFunc(calls, func(call csi.Call) bool { return call.Method == m && call.VolumeID == handle })
		if j < 0 || calls[j].Start.Before(created.End) {
			t.Errorf("%s of %s: want one after the volume was made at %v: %+v", m, handle, created.End, calls)
		}
	}
	cond := c.boundAfter(t, created.End)

	// The claim's Events, as the external-provisioner records them.
	events := c.claimEvents(t)
	provisioning, ok := eventOf(events, csi.ReasonProvisioning)
	succeeded, _ := eventOf(events, csi.ReasonProvisioningSucceeded)
	source := provisionDriverName + "_" + env.NodeName
	wantProvisioning := fmt.Sprintf("External provisioner is provisioning volume for claim %q", c.ns+"/"+claimName)
	if !ok || provisioning.Message != wantProvisioning || provisioning.Source.Component != source {
		t.Errorf("Provisioning Event %+v, want %q from %s", provisioning, wantProvisioning, source)
	}
	if want := "Successfully provisioned volume " + c.pv; succeeded.Message != want || succeeded.Source.Component != source {
		t.Errorf("ProvisioningSucceeded Event %+v, want %q from %s", succeeded, want, source)
	}
	// The Events enclose the provisioner's call: recorded (and stamped, in
	// this process, cut to the second) just before it began and just after
	// it ended.
	if provisioning.FirstTimestamp.After(created.Start) || succeeded.FirstTimestamp.Time.Before(created.End.Truncate(time.Second)) {
		t.Errorf("Provisioning at %v and ProvisioningSucceeded at %v, want them around the CreateVolume call %v..%v",
			provisioning.FirstTimestamp, succeeded.FirstTimestamp, created.Start, created.End)
	}
	if cond.LastTransitionTime.Before(&succeeded.FirstTimestamp) {
		t.Errorf("PodScheduled True at %v, before the ProvisioningSucceeded Event at %v", cond.LastTransitionTime, succeeded.FirstTimestamp)
	}
	c.logPodEvents(t, name)

	// readyline tells the wait to be scheduled by the claim's provision,
	// from these Events.
	tl, p := c.provision(t, name)
	if !p.Start.Equal(provisioning.FirstTimestamp.Time) || !p.End.Equal(succeeded.LastTimestamp.Time) || p.Failures != 0 {
		t.Errorf("provision %+v, want the claim's Events' %v..%v", p, provisioning.FirstTimestamp, succeeded.LastTimestamp)
	}
	var volumes time.Duration
	for _, s := range tl.Breakdown {
		if s.Kind == correlator.ShareWaitVolumes {
			volumes = s.Duration
		}
	}
	if volumes < p.End.Sub(p.Start) {
		t.Errorf("where the time went: %v waiting for volumes, want the provision's %v at least: %+v", volumes, p.End.Sub(p.Start), tl.Breakdown)
	}
	tr, err := env.Jaeger.WaitForTrace(c.ctx, TraceIDFromPodUID(tl.Pod.UID), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tr.Spans, func(s jaeger.Span) bool { return s.OperationName == exporter.SpanVolumeProvision })
	if i < 0 || tagString(tr.Spans[i], string(exporter.AttrVolumeClaim)) != claimName || tagString(tr.Spans[i], "k8s.volume.name") != "data" {
		t.Errorf("trace %s: no volume.provision span of claim %s", tr.TraceID, claimName)
	}
}

// provision is readyline's timeline of the pod's start, Ready, and its
// volume data's provision, which must be on the critical path inside the
// wait to be scheduled, told as "volume data: provisioned in ...".
func (c *provisionedPod) provision(t *testing.T, name string) (*correlator.Timeline, *correlator.Provision) {
	t.Helper()
	tl, err := c.d.Timeline(c.ctx, c.ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tl.Volumes, func(v correlator.VolumeSetup) bool { return v.Name == "data" })
	if i < 0 || tl.Volumes[i].Provision == nil {
		t.Fatalf("readyline's volumes %+v: want data's provision", tl.Volumes)
	}
	p := tl.Volumes[i].Provision
	if p.Claim != claimName || tl.Volumes[i].Driver != provisionDriverName {
		t.Errorf("volume %+v, provision %+v: want claim %s by %s", tl.Volumes[i], p, claimName, provisionDriverName)
	}
	j := slices.IndexFunc(tl.CriticalPath, func(s correlator.Step) bool { return strings.HasPrefix(s.What, "volume data: provisioned in ") })
	if j < 0 || tl.CriticalPath[j].Name != correlator.VolumeStepName("data") || !strings.HasSuffix(tl.CriticalPath[j].What, "("+provisionDriverName+")") {
		t.Errorf("critical path %+v: want volume data's provision by %s", tl.CriticalPath, provisionDriverName)
	}
	t.Logf("readyline: %s", tl.CriticalPath[max(j, 0)].What)
	return tl, p
}

// TestVolumeProvisionFailsTwice: a provisioner whose first two attempts
// fail (codes.Unavailable, which the external-provisioner retries without
// giving the claim back to the scheduler): the claim's Events say so, two
// ProvisioningFailed between the Provisioning ones, and the pod is bound
// only after the third attempt made the volume.
func TestVolumeProvisionFailsTwice(t *testing.T) {
	t.Parallel()
	const name = "reprovisioned"
	c := startProvisionedPod(t, 4*time.Minute, name, map[string]string{csi.ParamProvisionDelay: "500ms", csi.ParamProvisionFailures: "2"})
	creates := c.createCalls()
	if len(creates) != 3 || creates[0].Err == nil || creates[1].Err == nil || creates[2].Err != nil {
		t.Fatalf("the provisioner's CreateVolume calls of %s: %+v, want two that failed, then one that worked", c.pv, creates)
	}
	c.boundAfter(t, creates[2].End)
	events := c.claimEvents(t)
	var failed int
	for _, e := range events {
		if e.Reason == csi.ReasonProvisioningFailed {
			failed += int(e.Count)
			if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "code = Unavailable") {
				t.Errorf("ProvisioningFailed Event %+v, want a Warning with the call's Unavailable", e)
			}
		}
	}
	if provisioning, _ := eventOf(events, csi.ReasonProvisioning); failed != 2 || provisioning.Count != 3 {
		t.Errorf("%d ProvisioningFailed and %d Provisioning Events, want 2 and 3", failed, provisioning.Count)
	}
	c.logPodEvents(t, name)
	if _, p := c.provision(t, name); p.Failures != 2 || !strings.Contains(p.Error, "code = Unavailable") {
		t.Errorf("provision %+v: want its 2 failed attempts, the last one's words", p)
	}
}

// TestVolumeProvisionInFlight: while a pod waits, on no node yet, for its
// claim's provisioner (20 s), `kubectl readyline explain` tells it from the
// API server, as its user, in the provisioner's words: the claim's
// provisioning in flight since its Provisioning Event, drawn open; no
// node's readyline has seen the pod. Once bound and Ready, the node's
// readyline tells the same provisioning, ended.
func TestVolumeProvisionInFlight(t *testing.T) {
	t.Parallel()
	const name = "provisioning"
	c := applyProvisionedPod(t, 4*time.Minute, name, map[string]string{csi.ParamProvisionDelay: "20s"})
	plugin := buildPlugin(t, c.ctx)
	var provisioning corev1.Event
	err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := objectEvents(ctx, c.ns, "PersistentVolumeClaim", claimName)
		var ok bool
		provisioning, ok = eventOf(events, csi.ReasonProvisioning)
		return err == nil && ok, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on claim %s/%s within 30s: %v", csi.ReasonProvisioning, c.ns, claimName, err)
	}
	r := runPlugin(t, c.ctx, plugin, env.Kubeconfig, "explain", "-n", c.ns, name, "--output", "json")
	r.wantOK(t)
	var tl correlator.Timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, r.stdout)
	}
	// The answer came while the volume was being made: before the
	// provisioner's CreateVolume returned, by its own stamp.
	creates := c.createCalls()
	if len(creates) > 0 && !creates[0].End.IsZero() && !tl.AsOf.Before(creates[0].End) {
		t.Fatalf("the answer (as of %v) came after the volume was made (%v): the machine was too slow for the test's 20s", tl.AsOf, creates[0].End)
	}
	pod, err := env.Client.CoreV1().Pods(c.ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tl.Pod.UID != string(pod.UID) || tl.Pod.Node != "" || tl.Outcome != correlator.OutcomeStarting {
		t.Fatalf("explain answered %+v %s, want the start in progress of the pod on no node", tl.Pod, tl.Outcome)
	}
	want := "not scheduled yet: volume data: provisioning "
	if !strings.HasPrefix(tl.Waiting, want) || !strings.HasSuffix(tl.Waiting, "s so far ("+provisionDriverName+")") {
		t.Errorf("waiting %q, want %q...s so far (%s)", tl.Waiting, want, provisionDriverName)
	}
	if len(tl.Volumes) != 1 || tl.Volumes[0].Provision == nil {
		t.Fatalf("volumes %+v, want data's provisioning", tl.Volumes)
	}
	inFlight := *tl.Volumes[0].Provision
	if !inFlight.Open || inFlight.Claim != claimName || !inFlight.Start.Equal(provisioning.FirstTimestamp.Time) || !inFlight.End.Equal(tl.AsOf) {
		t.Errorf("provision %+v, want open from the Provisioning Event (%v) to the answer's as-of (%v)", inFlight, provisioning.FirstTimestamp, tl.AsOf)
	}
	r = runPlugin(t, c.ctx, plugin, env.Kubeconfig, "explain", "-n", c.ns, name)
	r.wantOK(t)
	t.Logf("explain while provisioning:\n%s", r.stdout)
	for _, w := range []string{want, "volume data provisioning "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("explain's waterfall does not say %q", w)
		}
	}

	c.waitReady(t)
	if _, p := c.provision(t, name); p.Open || !p.Start.Equal(inFlight.Start) {
		t.Errorf("the node's provision %+v, want it ended, begun where the one in flight did (%v)", p, inFlight.Start)
	}
}
