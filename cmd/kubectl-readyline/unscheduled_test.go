package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/exporter/waterfall"
)

// claimPod is a pod of the user's on no node yet, created ago, with a
// volume of the claim data-claim.
func claimPod(ago time.Duration) *corev1.Pod {
	pod := userPod("team", "db", "")
	pod.CreationTimestamp = metav1.NewTime(time.Now().Add(-ago).Truncate(time.Second))
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}}
	return pod
}

// claimEvent is an Event of the provisioner's about data-claim, first
// and last seen ago.
func claimEvent(name, typ, reason, message string, count int32, first, last time.Duration) *corev1.Event {
	now := time.Now()
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "team", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "team", Name: "data-claim", UID: "uid-data-claim"},
		Type:           typ, Reason: reason, Message: message, Count: count,
		Source:         corev1.EventSource{Component: "csi.readyline.test_n1_6f1c"},
		FirstTimestamp: metav1.NewTime(now.Add(-first).Truncate(time.Second)),
		LastTimestamp:  metav1.NewTime(now.Add(-last).Truncate(time.Second)),
	}
}

// TestExplainUnscheduled: the start of a pod on no node yet, held by its
// claim's provisioner, is told from the API server as the user, in the
// provisioner's words: the provisioning in flight, its failed attempts and
// the last one's error, drawn open in the waterfall. No daemon is asked.
func TestExplainUnscheduled(t *testing.T) {
	ctx := context.Background()
	conn := &fakeConn{}
	provisioning := claimEvent("data-claim.1", "Normal", "Provisioning", `External provisioner is provisioning volume for claim "team/data-claim"`, 3, 5*time.Second, time.Second)
	ds := testDaemonSet(t, conn, nil, claimPod(8*time.Second), provisioning,
		claimEvent("data-claim.2", "Warning", "ProvisioningFailed", "failed to provision volume with StorageClass \"slow\": rpc error: code = ResourceExhausted desc = out of space", 2, 4*time.Second, 2*time.Second))
	tl, err := ds.orUnscheduled(ds.explain)(ctx, "team", "db")
	if err != nil {
		t.Fatal(err)
	}
	if len(conn.forwards) > 0 {
		t.Errorf("asked a daemon (%v) about a pod on no node", conn.forwards)
	}
	for _, want := range []string{"not scheduled yet: volume data: provisioning ", "s so far, 2 attempts failed (csi.readyline.test): failed to provision volume with StorageClass \"slow\": rpc error: code = ResourceExhausted desc = out of space"} {
		if !strings.Contains(tl.Waiting, want) {
			t.Errorf("waiting %q, want it to say %q", tl.Waiting, want)
		}
	}
	if len(tl.Volumes) != 1 || tl.Volumes[0].Provision == nil || !tl.Volumes[0].Provision.Open || tl.Volumes[0].Provision.Claim != "data-claim" {
		t.Fatalf("volumes %+v, want data's provisioning in flight", tl.Volumes)
	}
	if p := tl.Volumes[0].Provision; !p.Start.Equal(provisioning.FirstTimestamp.Time) || !p.End.Equal(tl.AsOf) {
		t.Errorf("provisioning %v..%v, want from its first Provisioning (%v) to the answer's as-of (%v)", p.Start, p.End, provisioning.FirstTimestamp, tl.AsOf)
	}
	var out bytes.Buffer
	if err := waterfall.Render(&out, tl, 100); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"team/db", "not scheduled yet", "volume data provisioning "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the waterfall does not say %q:\n%s", want, out.String())
		}
	}

	// A user who may not list Events is told the pod's own account, and why
	// not more.
	ds = testDaemonSet(t, conn, []string{"list events"}, claimPod(8*time.Second))
	tl, err = ds.orUnscheduled(ds.explain)(ctx, "team", "db")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tl.Waiting, "not scheduled yet") || !strings.Contains(tl.EventsUnread, "forbidden") {
		t.Errorf("without Events: waiting %q, unread %q", tl.Waiting, tl.EventsUnread)
	}
}
