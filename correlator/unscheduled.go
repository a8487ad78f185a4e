package correlator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// Unscheduled is the start of pod, which is on no node yet (no
// spec.nodeName), as of now: derived by the same rules as a node's start
// in progress, from what the API server holds of it — the pod, its Events
// and its claims' (events, read as podevents.Reader reads them:
// Claims and ClaimsRead set; nil when they could not be read). No node's
// readyline has seen such a pod, and a claim being provisioned holds it
// there: the scheduler binds a pod only once its claims are bound
// (VolumeBinding's PreBind), so kubectl readyline explain asks the API
// server, as its user, and draws this.
func Unscheduled(pod *corev1.Pod, events *event.PodEvents, now time.Time) (*Timeline, error) {
	if !unscheduled(pod) {
		return nil, fmt.Errorf("pod %s/%s is on node %s: its node's readyline tells its start", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	c := New(Config{})
	c.Handle(&event.Tick{Time: now})
	c.Handle(&event.PodUpdate{Time: now, Action: event.PodAdded, Pod: pod})
	if events != nil {
		e := *events
		e.Time, e.PodUID, e.Namespace, e.Name = now, string(pod.UID), pod.Namespace, pod.Name
		c.Handle(&e)
	}
	tl, ok := c.Snapshot(Query{UID: string(pod.UID)})
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no start in progress (it was Ready, or done, or deleted)", pod.Namespace, pod.Name)
	}
	return tl, nil
}

// unscheduled: pod is on no node yet. A node's readyline sees only the
// pods bound to it; Unscheduled derives the others'.
func unscheduled(pod *corev1.Pod) bool { return pod.Spec.NodeName == "" }

// schedulingDetail says what holds a pod on no node yet: its claims being
// provisioned, a claim still unbound in the words of the last component
// that spoke of it (the PV controller's ExternalProvisioning, the
// provisioner's ProvisioningFailed), and the scheduler's own words (its
// PodScheduled False, else its latest FailedScheduling Event):
// "not scheduled yet: volume data: provisioning 5.0s so far (csi.example.dev)".
func (p *podState) schedulingDetail(tl *Timeline) string {
	var parts []string
	provisioning := map[string]bool{}
	for i := range tl.Volumes {
		if pr := tl.Volumes[i].Provision; pr != nil && pr.Open {
			parts = append(parts, describeProvision(&tl.Volumes[i]))
			provisioning[pr.Claim] = true
		}
	}
	for _, claim := range PodClaims(p.pod) {
		if provisioning[claim] {
			continue
		}
		if e, ok := latestOf(p.events.claims, func(e event.PodEvent) bool { return e.Claim == claim }); ok {
			parts = append(parts, "volume "+claimVolume(p.pod, claim)+": claim "+claim+" "+joinNonEmpty(": ", e.Reason, e.Message))
		}
	}
	parts = append(parts, schedulerSays(p.pod, p.events.of("")))
	return joinNonEmpty(": ", "not scheduled yet", joinNonEmpty("; ", parts...))
}

// schedulerSays is the scheduler's word on pod: its PodScheduled False
// condition ("the scheduler: Unschedulable: 0/3 nodes are available: ..."),
// else its latest FailedScheduling Event among events; "" when it said
// nothing (a pod it is binding, waiting for its claims, has neither).
func schedulerSays(pod *corev1.Pod, events []event.PodEvent) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "the scheduler: " + joinNonEmpty(": ", c.Reason, c.Message)
		}
	}
	if e, ok := latestOf(events, func(e event.PodEvent) bool { return e.Reason == reasonFailedScheduling }); ok {
		return "the scheduler: " + joinNonEmpty(": ", e.Reason, strings.TrimSpace(e.Message))
	}
	return ""
}

// reasonFailedScheduling is the scheduler's Event on a pod it could not
// place (pkg/scheduler/schedule_one.go).
const reasonFailedScheduling = "FailedScheduling"

// latestOf is the Event among events, which are oldest first, that matches
// and was last seen latest.
func latestOf(events []event.PodEvent, match func(event.PodEvent) bool) (event.PodEvent, bool) {
	var best event.PodEvent
	found := false
	for _, e := range events {
		if match(e) && (!found || !e.Last.Before(best.Last)) {
			best, found = e, true
		}
	}
	return best, found
}
