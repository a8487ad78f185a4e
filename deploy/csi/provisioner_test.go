package csi

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// eventually polls cond every 20 ms until it holds or within has passed.
func eventually(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func reasons(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list.Items {
		got = append(got, e.Reason)
	}
	slices.Sort(got)
	return got
}

// TestProvision: a claim of a class that waits for its first consumer is
// left alone until the scheduler chose its node; then its first attempt
// fails as asked, the second after a back-off makes its volume, pinned to
// the node, with the class's other parameters as attributes; Events say
// each step; a second provisioner (a restart) does not make it again; a
// released volume is deleted.
func TestProvision(t *testing.T) {
	const driver, ns = "csi.readyline.test", "team"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "host-1"}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Provisioner: driver, VolumeBindingMode: &wait,
			Parameters: map[string]string{ParamProvisionDelay: "50ms", ParamProvisionFailures: "1", AttrStageDelay: "2s"}},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", UID: "u-1",
				Annotations: map[string]string{AnnStorageProvisioner: driver}},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: new("slow"),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
			},
		},
		&corev1.PersistentVolumeClaim{ // another provisioner's
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other", UID: "u-2",
				Annotations: map[string]string{AnnStorageProvisioner: "other.example.com", AnnSelectedNode: "n1"}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("slow")},
		},
	)
	d := &Driver{Name: driver, NodeID: "n1"}
	go d.Provision(ctx, client)

	time.Sleep(300 * time.Millisecond)
	if calls := d.Calls(); len(calls) != 0 {
		t.Fatalf("calls %+v before the scheduler chose a node", calls)
	}
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Annotations[AnnSelectedNode] = "n1"
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	pvs := client.CoreV1().PersistentVolumes()
	var pv *corev1.PersistentVolume
	if !eventually(5*time.Second, func() bool { pv, err = pvs.Get(ctx, "pvc-u-1", metav1.GetOptions{}); return err == nil }) {
		t.Fatalf("no volume pvc-u-1: %v", err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver || pv.Spec.CSI.VolumeHandle != "vol-pvc-u-1" ||
		len(pv.Spec.CSI.VolumeAttributes) != 1 || pv.Spec.CSI.VolumeAttributes[AttrStageDelay] != "2s" {
		t.Errorf("volume source %+v, want %s's vol-pvc-u-1 with only stageDelay", pv.Spec.CSI, driver)
	}
	if c := pv.Spec.ClaimRef; c == nil || c.Namespace != ns || c.Name != "data" || c.UID != "u-1" {
		t.Errorf("claimRef %+v", c)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" || pv.Spec.StorageClassName != "slow" ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[AnnProvisionedBy] != driver {
		t.Errorf("volume %+v", pv)
	}
	if a := pv.Spec.NodeAffinity; a == nil || a.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "host-1" {
		t.Errorf("node affinity %+v, want host-1's", a)
	}
	calls := d.Calls()
	if len(calls) != 2 || calls[0].Method != MethodCreateVolume || calls[0].Err == nil || calls[1].Err != nil {
		t.Fatalf("calls %+v, want a failed CreateVolume then one that worked", calls)
	}
	// The call's own stamps around its timer of the class's delay.
	if took := calls[1].End.Sub(calls[1].Start); took < 50*time.Millisecond {
		t.Errorf("the second attempt took %v, want the class's 50ms at least", took)
	}
	if gap := calls[1].Start.Sub(calls[0].End); gap < time.Second {
		t.Errorf("the second attempt began %v after the first ended, want the 1s back-off", gap)
	}
	want := []string{ReasonProvisioning, ReasonProvisioningFailed, ReasonProvisioningSucceeded}
	var got []string
	if !eventually(2*time.Second, func() bool { got = slices.Compact(reasons(t, client, ns)); return slices.Equal(got, want) }) {
		t.Errorf("events %q, want %q", got, want)
	}

	restarted := &Driver{Name: driver, NodeID: "n1"}
	rctx, rcancel := context.WithCancel(ctx)
	go restarted.Provision(rctx, client)
	time.Sleep(300 * time.Millisecond)
	rcancel()
	if calls := restarted.Calls(); len(calls) != 0 {
		t.Errorf("a restarted provisioner made %+v, want nothing (the volume exists)", calls)
	}

	pv.Status.Phase = corev1.VolumeReleased
	if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*time.Second, func() bool { _, err = pvs.Get(ctx, pv.Name, metav1.GetOptions{}); return err != nil }) {
		t.Errorf("released volume %s not deleted", pv.Name)
	}
}
