package correlator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// unscheduledPod is a pod with the claim data-claim, created at t0, on no
// node yet.
func unscheduledPod(t *testing.T) *corev1.Pod {
	sc := newScenario(t, "waiting", corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
		},
	})
	sc.pod.Spec.NodeName = ""
	return sc.pod
}

// claimEvent is an Event of the provisioner csi.test about data-claim.
func claimEvent(typ, reason, message string, first, last float64, count int32) event.PodEvent {
	return event.PodEvent{Type: typ, Reason: reason, Message: message, Claim: "data-claim", Component: "csi.test_node-1_1f2e", Count: count, First: at(first), Last: at(last)}
}

// TestUnscheduled: a pod on no node yet is a start in progress that is all
// scheduling; a claim whose provisioner began and has not succeeded is its
// volume's provisioning in flight, to the as-of, with its failures and the
// last one's words, on the critical path to the end; once provisioned and
// not yet bound, the claim's last word says so; the scheduler's own words
// come last.
func TestUnscheduled(t *testing.T) {
	pod := unscheduledPod(t)
	failed := claimEvent("Warning", "ProvisioningFailed", "rpc error: code = ResourceExhausted desc = out of space", 1, 3, 2)
	tl, err := Unscheduled(pod, &event.PodEvents{ClaimsRead: true, Claims: []event.PodEvent{
		claimEvent("Normal", "Provisioning", "External provisioner is provisioning volume", 1, 4, 3), failed}}, at(6.5))
	if err != nil {
		t.Fatal(err)
	}
	if tl.Outcome != OutcomeStarting || !tl.AsOf.Equal(at(6.5)) || !tl.End.Equal(at(6.5)) || tl.Sandbox != nil {
		t.Fatalf("outcome %s as of %v, end %v: want a start in progress as of +6.5s", tl.Outcome, tl.AsOf, tl.End)
	}
	if len(tl.Phases) != 1 || tl.Phases[0].Name != PhaseSchedule || !tl.Phases[0].End.Equal(at(6.5)) {
		t.Errorf("phases %+v, want scheduling to the as-of only", tl.Phases)
	}
	want := "not scheduled yet: volume data: provisioning 5.5s so far, 2 attempts failed (csi.test): rpc error: code = ResourceExhausted desc = out of space"
	if tl.Waiting != want {
		t.Errorf("waiting %q\n want %q", tl.Waiting, want)
	}
	if len(tl.Volumes) != 1 || tl.Volumes[0].Provision == nil || !tl.Volumes[0].Provision.Open || !tl.Volumes[0].Provision.End.Equal(at(6.5)) {
		t.Fatalf("volumes %+v, want data's provisioning open to +6.5s", tl.Volumes)
	}
	last := tl.CriticalPath[len(tl.CriticalPath)-1]
	if last.Name != VolumeStepName("data") || !last.Start.Equal(at(1)) || !last.End.Equal(at(6.5)) {
		t.Errorf("critical path %+v, want it to end in data's provisioning, +1s..+6.5s", tl.CriticalPath)
	}
	var sum float64
	for _, s := range tl.Breakdown {
		sum += s.Duration.Seconds()
	}
	if sum != 6.5 {
		t.Errorf("breakdown sums to %vs, want the 6.5s so far", sum)
	}

	// Provisioned, not bound yet (the scheduler re-checks each second), and
	// the scheduler's word.
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/1 nodes are available: 1 node(s) did not have enough free storage."}}
	tl, err = Unscheduled(pod, &event.PodEvents{ClaimsRead: true, Claims: []event.PodEvent{
		claimEvent("Normal", "Provisioning", "External provisioner is provisioning volume", 1, 1, 1),
		claimEvent("Normal", "ProvisioningSucceeded", "Successfully provisioned volume pvc-1", 4, 4, 1)}}, at(6))
	if err != nil {
		t.Fatal(err)
	}
	want = "not scheduled yet: volume data: claim data-claim ProvisioningSucceeded: Successfully provisioned volume pvc-1; the scheduler: Unschedulable: 0/1 nodes are available: 1 node(s) did not have enough free storage."
	if tl.Waiting != want {
		t.Errorf("waiting %q\n want %q", tl.Waiting, want)
	}
	if p := tl.Volumes[0].Provision; p == nil || p.Open || !p.End.Equal(at(4)) {
		t.Errorf("provision %+v, want made +1s..+4s", p)
	}

	// Nothing read (Events forbidden): the pod's own account.
	pod.Status.Conditions = nil
	tl, err = Unscheduled(pod, &event.PodEvents{Err: "forbidden: events is forbidden"}, at(3))
	if err != nil || tl.Waiting != "not scheduled yet" || !strings.HasPrefix(tl.EventsUnread, "forbidden") {
		t.Errorf("without Events: %v, waiting %q, unread %q", err, tl.Waiting, tl.EventsUnread)
	}

	pod.Spec.NodeName = "vm"
	if _, err := Unscheduled(pod, nil, at(3)); err == nil || !strings.Contains(err.Error(), "is on node vm") {
		t.Errorf("a pod on a node: %v, want an error saying its node tells it", err)
	}
}
