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
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/deploy/csi"
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

// TestVolumeProvisionWaits: a pod whose claim's class waits for its first
// consumer, and whose provisioner takes 4 s: the claim's Events say
// Provisioning then ProvisioningSucceeded about 4 s later, as the CSI
// external-provisioner's do; the pod is bound to the node only after the
// volume was made (bounded by the provisioner's and the pod recorder's
// stamps), then becomes Ready with the volume staged and published.
func TestVolumeProvisionWaits(t *testing.T) {
	t.Parallel()
	const name, claimName = "provisioned", "data-claim"
	ctx := testContext(t, 4*time.Minute)
	driver := startDriver(t, ctx, provisionDriverName, driverNeeds{provision: true})
	ns := newNamespace(t)
	class := provisionClass(t, ctx, ns, map[string]string{csi.ParamProvisionDelay: "4s", csi.AttrPublishDelay: "300ms"})
	claim := provisionedClaim(t, ctx, ns, claimName, class)
	pv := csi.ProvisionedVolumeName(claim.UID)
	rec := recordPod(t, ns, name)
	waitUnstaged(t, driver, pv)
	deletePodAndWait(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(claimPodManifest(name, claimName))); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range rec.Events() {
		t.Logf("pod %s at %s: %s", ev.Type, ev.ObservedAt.Format("15:04:05.000"), describePodWait(ev.Pod))
	}

	handle := csi.ProvisionedVolumeHandle(pv)
	calls := driver.Calls()
	i := slices.IndexFunc(calls, func(c csi.Call) bool {
		return c.Method == csi.MethodCreateVolume && c.VolumeID == handle && c.Err == nil
	})
	if i < 0 {
		t.Fatalf("the provisioner made no volume %s: %+v", handle, calls)
	}
	created := calls[i]
	if took := created.End.Sub(created.Start); took < 4*time.Second {
		t.Errorf("CreateVolume of %s took %v, want the class's 4s at least", handle, took)
	}
	t.Logf("CreateVolume of %s: %s to %s", handle, created.Start.Format("15:04:05.000"), created.End.Format("15:04:05.000"))
	// The volume's node stage and publish came after it was made.
	for _, m := range []string{"NodeStageVolume", "NodePublishVolume"} {
		j := slices.IndexFunc(calls, func(c csi.Call) bool { return c.Method == m && c.VolumeID == handle })
		if j < 0 || calls[j].Start.Before(created.End) {
			t.Errorf("%s of %s: want one after the volume was made at %v: %+v", m, handle, created.End, calls)
		}
	}

	// Bound only after the provisioner made the volume: the recorder saw
	// no node before then, and the bind's condition (second precision) is
	// not earlier than the creation's second.
	if ev, ok := rec.First(func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }); !ok || ev.ObservedAt.Before(created.End) {
		t.Errorf("the pod was seen bound at %v, want after the volume was made at %v", ev.ObservedAt, created.End)
	}
	scheduled, ok := rec.First(ConditionTrue(corev1.PodScheduled))
	if !ok {
		t.Fatal("the pod was never seen with PodScheduled True")
	}
	cond, _ := Condition(scheduled.Pod, corev1.PodScheduled)
	if cond.LastTransitionTime.Time.Before(created.End.Truncate(time.Second)) {
		t.Errorf("PodScheduled True at %v, before the volume was made at %v", cond.LastTransitionTime.Time, created.End)
	}

	// The claim's Events, as the external-provisioner records them. The
	// recorder sends them after the fact: wait for them.
	var events []corev1.Event
	reasonAt := func(reason string) (corev1.Event, bool) {
		k := slices.IndexFunc(events, func(e corev1.Event) bool { return e.Reason == reason })
		if k < 0 {
			return corev1.Event{}, false
		}
		return events[k], true
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		events, err = objectEvents(ctx, ns, "PersistentVolumeClaim", claimName)
		_, ok := reasonAt(csi.ReasonProvisioningSucceeded)
		return err == nil && ok, nil
	})
	for _, e := range events {
		t.Logf("claim event %s %s from %s: %q firstTimestamp=%s eventTime=%s count=%d",
			e.Type, e.Reason, e.Source.Component, e.Message, e.FirstTimestamp.Format(time.RFC3339Nano), e.EventTime.Format(time.RFC3339Nano), e.Count)
	}
	if err != nil {
		t.Fatalf("no %s Event on claim %s/%s within 10s: %v", csi.ReasonProvisioningSucceeded, ns, claimName, err)
	}
	provisioning, ok := reasonAt(csi.ReasonProvisioning)
	succeeded, _ := reasonAt(csi.ReasonProvisioningSucceeded)
	source := provisionDriverName + "_" + env.NodeName
	wantProvisioning := fmt.Sprintf("External provisioner is provisioning volume for claim %q", ns+"/"+claimName)
	if !ok || provisioning.Message != wantProvisioning || provisioning.Source.Component != source {
		t.Errorf("Provisioning Event %+v, want %q from %s", provisioning, wantProvisioning, source)
	}
	if want := "Successfully provisioned volume " + pv; succeeded.Message != want || succeeded.Source.Component != source {
		t.Errorf("ProvisioningSucceeded Event %+v, want %q from %s", succeeded, want, source)
	}
	// Whole seconds apart: the 4 s of the class, give or take the second
	// each stamp was cut to.
	if gap := succeeded.FirstTimestamp.Sub(provisioning.FirstTimestamp.Time); gap < 3*time.Second || gap > 5*time.Second {
		t.Errorf("ProvisioningSucceeded %v after Provisioning, want the class's 4s (± 1s of stamp precision)", gap)
	}
	if cond.LastTransitionTime.Before(&succeeded.FirstTimestamp) {
		t.Errorf("PodScheduled True at %v, before the ProvisioningSucceeded Event at %v", cond.LastTransitionTime, succeeded.FirstTimestamp)
	}

	podEvents, err := objectEvents(ctx, ns, "Pod", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range podEvents {
		t.Logf("pod event %s %s from %s: %q firstTimestamp=%s eventTime=%s count=%d",
			e.Type, e.Reason, e.Source.Component+e.ReportingController, e.Message, e.FirstTimestamp.Format(time.RFC3339Nano), e.EventTime.Format(time.RFC3339Nano), e.Count)
	}
}
