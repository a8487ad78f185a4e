package correlator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// When readyline first saw a pod. A daemon that starts, or restarts (a
// DaemonSet rollout), in the middle of a pod start sees the pod for the first
// time with part of its start behind it: the API reports conditions already
// True, the runtime reports a sandbox and containers created earlier, and the
// kernel events and CRI calls of that earlier part were never seen. The
// timeline says so (ObservedSince, Missing, Coarse conditions) instead of
// dating what it found at the moment it found it.
//
// "Late" is decided from the pod itself, never from a TTL or from the
// daemon's own start: facts older than the first sight by more than
// sightSlack, reported by the pod's first API object (status.startTime,
// conditions' lastTransitionTime, container states and restart counts) or by
// the runtime (sandbox and container creation times).

// sightSlack is how much older than the first sight a fact may be and still
// count as seen when it happened: the API's timestamps are truncated to the
// second, and the watch delivers an update within about a second.
const sightSlack = 2 * time.Second

// firstSight is the earliest moment readyline saw anything of the pod: its
// first API update or its first node fact (earlier for a static pod, whose
// mirror pod comes after it started).
func (p *podState) firstSight() time.Time { return earliest(p.firstSeen, p.nodeSight) }

// sandboxCreation is when the pod's sandbox was created as the node reports
// it: the start of the RunPodSandbox call the kernel saw, or the runtime's
// creation time; zero when no sandbox fact has come.
func (p *podState) sandboxCreation() time.Time {
	var t time.Time
	for _, rt := range p.runtime {
		if rt.Sandbox {
			t = earliest(t, rt.CreatedAt)
		}
	}
	for _, c := range p.calls {
		if c.Method == event.CRIRunPodSandbox {
			t = earliest(t, c.Time)
		}
	}
	return t
}

// nodeStart is the first moment of the pod on the node: the earliest
// creation the runtime reports, CRI call or node fact seen.
func (p *podState) nodeStart() time.Time {
	t := p.nodeSight
	for _, rt := range p.runtime {
		t = earliest(t, rt.CreatedAt)
	}
	for _, c := range p.calls {
		t = earliest(t, c.Time)
	}
	return t
}

// seenLate reports whether readyline first saw the pod after its start had
// begun on the node, so that node facts of the start are missing:
//
//   - the runtime reports the sandbox or a container created before the
//     first sight;
//   - or the first API object says the kubelet had been at work before it
//     (status.startTime, a condition's lastTransitionTime, a container
//     started or restarted), unless readyline saw the sandbox being
//     created: the kubelet's steps before the sandbox (admission, volumes;
//     for a static pod, all of its mirror-less life) leave no node facts to
//     miss, and the conditions they set are Coarse on their own
//     (coarseAtFirstSight).
func (p *podState) seenLate() bool {
	sight := p.firstSight()
	old := func(t time.Time) bool { return !t.IsZero() && t.Before(sight.Add(-sightSlack)) }
	for _, rt := range p.runtime {
		if old(rt.CreatedAt) || old(rt.StartedAt) {
			return true
		}
	}
	if sb := p.sandboxCreation(); !sb.IsZero() && !old(sb) {
		return false // the node's part was seen from the sandbox on
	}
	st := &p.firstPod.Status
	if st.StartTime != nil && old(st.StartTime.Time) {
		return true
	}
	for _, c := range st.Conditions {
		if c.Status == corev1.ConditionTrue && old(c.LastTransitionTime.Time) {
			return true
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if cs.RestartCount > 0 {
				return true
			}
			if r := cs.State.Running; r != nil && old(r.StartedAt.Time) {
				return true
			}
			if t := cs.State.Terminated; t != nil && (old(t.StartedAt.Time) || old(t.FinishedAt.Time)) {
				return true
			}
		}
	}
	return false
}

// coarseAtFirstSight reports whether a condition's observation says nothing
// of when it became True: it was True in the pod's first API object, and
// either the pod was seen late or the condition's lastTransitionTime is older
// than that first sight (a static pod's mirror created after the fact, a
// watch that lagged).
func (d *derivation) coarseAtFirstSight(f condFact) bool {
	if !f.atFirstSight {
		return false
	}
	return d.late || f.lastTransition.Before(d.p.firstSeen.Add(-sightSlack))
}

// missing names what a late-seen start's timeline lacks: the kernel's and
// the kubelet's view of what happened before since.
func (d *derivation) missing(tl *Timeline, since time.Time) []string {
	before := func(t time.Time) bool { return !t.IsZero() && t.Before(since) }
	var out []string
	if sb := tl.Sandbox; sb != nil && before(sb.Created) {
		if sb.Call == nil {
			out = append(out, "the RunPodSandbox call (the sandbox's times are the runtime's)")
		}
		if sb.PauseStart.IsZero() {
			out = append(out, "the pause process")
		}
		if len(sb.CNI) == 0 {
			out = append(out, "the CNI plugins")
		}
	}
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if !before(earliest(a.Created, a.Started)) {
				continue
			}
			name := ContainerLabel(c.Kind, c.Name)
			if a.Attempt > 0 {
				name += fmt.Sprintf(" #%d", a.Attempt)
			}
			switch {
			case a.Process == nil && len(a.Calls) == 0:
				out = append(out, name+": its process and CRI calls")
			case a.Process == nil:
				out = append(out, name+": its process")
			case len(a.Calls) == 0:
				out = append(out, name+": its CRI calls")
			}
		}
	}
	for _, c := range tl.Conditions {
		if c.Coarse {
			out = append(out, "the transitions of the conditions already True (their lastTransitionTime, 1 s, stands in)")
			break
		}
	}
	return out
}
