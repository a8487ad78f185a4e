package correlator

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Conditions the API delivered late. readyline observes a condition when
// the pod watch delivers it (PodUpdate.Time); when the watch is down, or
// the API server lags, that is long after the kubelet set it, and a start
// during a 60 s outage would look 60 s long. The kubelet's status manager
// stamps each transition as it computes the status, on this node's clock,
// and keeps the stamp until the API has it (status_manager.go
// updateStatusInternal -> updateLastTransitionTime; normalizeStatus
// truncates it to the second), then writes it at once: a condition whose
// observation came more than apiLagSlack after its lastTransitionTime was
// delivered late. It is then taken at its lastTransitionTime, Coarse like a
// condition already True when readyline first saw the pod (sight.go),
// with no lag measured from the late observation, and the timeline is
// marked MarkAPILag.
//
// Only the kubelet's own conditions are judged so: PodScheduled is stamped
// by the API server's clock (another machine's, which may be seconds off
// this node's) and a readiness gate's by its controller.

// apiLagSlack: lastTransitionTime is truncated to the second, and the
// kubelet writes a status within a few hundred ms of computing it.
const apiLagSlack = 2 * time.Second

// kubeletCondition reports whether the kubelet sets typ's transitions on
// this node's clock (status/generate.go and the status manager).
func kubeletCondition(typ corev1.PodConditionType) bool {
	switch typ {
	case corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
		return true
	}
	return false
}

// deliveredLate reports whether condition typ's rise was delivered late:
// observed more than apiLagSlack after its lastTransitionTime. A condition
// already True at the first sight of a pod seen late (the daemon started
// after it, sight.go) or of a mirror pod (created after its static pod
// started, static.go) says nothing of the API's delay: those stay Coarse
// as they are.
func (d *derivation) deliveredLate(typ corev1.PodConditionType, f condFact) bool {
	if !kubeletCondition(typ) || f.lastTransition.IsZero() {
		return false
	}
	if f.atFirstSight && (d.late || d.p.nodeUID != d.p.uid) {
		return false
	}
	return f.observed.Sub(f.lastTransition) > apiLagSlack
}

// reportedBy is the latest moment condition typ can have become True: its
// observation, or for one delivered late the end of its lastTransitionTime's
// second. Causes are looked for before it.
func (d *derivation) reportedBy(typ corev1.PodConditionType, f condFact) time.Time {
	if d.deliveredLate(typ, f) {
		return f.lastTransition.Add(time.Second)
	}
	return f.observed
}

// observedAt is when condition typ became True as far as the timeline
// knows: its observation, or for one delivered late its lastTransitionTime.
func (d *derivation) observedAt(typ corev1.PodConditionType, f condFact) time.Time {
	if d.deliveredLate(typ, f) {
		return f.lastTransition
	}
	return f.observed
}

// lateTransition sets a condition delivered late at its lastTransitionTime,
// or at its cause when that falls inside the same second (the transition
// is no earlier than its cause): the finer time.
func lateTransition(ct *ConditionTransition, delivered time.Time) {
	ct.Delivered, ct.Coarse = delivered, true
	ct.Observed = ct.LastTransitionTime
	if c := ct.Cause; !c.Before(ct.Observed) && c.Before(ct.Observed.Add(time.Second)) {
		ct.Observed = c
	}
}

// firstSightLate reports whether the pod's first API object was itself
// delivered late: it says the kubelet had been at work (status.startTime)
// more than apiLagSlack before, though readyline was watching (the pod was
// created during an outage of the watch). The kubelet's wait before the
// sandbox then runs from that startTime, not from the late sight.
func (d *derivation) firstSightLate() (time.Time, bool) {
	st := d.p.firstPod.Status.StartTime
	if d.late || d.p.nodeUID != d.p.uid || st == nil || st.IsZero() {
		return time.Time{}, false
	}
	return st.Time, d.p.firstSeen.Sub(st.Time) > apiLagSlack
}

// markAPILag marks tl when conditions were delivered late, and says what
// that leaves out.
func markAPILag(tl *Timeline) {
	var names []string
	var most time.Duration
	for _, c := range tl.Conditions {
		if c.Delivered.IsZero() {
			continue
		}
		names = append(names, c.Type)
		most = max(most, c.Delivered.Sub(c.LastTransitionTime))
	}
	if len(names) == 0 {
		return
	}
	tl.Marks = append(tl.Marks, MarkAPILag)
	tl.Missing = append(tl.Missing, fmt.Sprintf(
		"when the API showed %s: the watch delivered them up to %s after their lastTransitionTime (1 s), which stands in",
		strings.Join(names, ", "), FormatDuration(most)))
}

// flipsBy is when the containers' started and ready flips happened at the
// latest, when the API delivered them late: by the end of ContainersReady's
// lastTransitionTime's second, if that was delivered late (every container
// was ready then); zero otherwise.
func (d *derivation) flipsBy() time.Time {
	if f, ok := d.p.conds[corev1.ContainersReady]; ok && d.deliveredLate(corev1.ContainersReady, f) {
		return f.lastTransition.Add(time.Second)
	}
	return time.Time{}
}
