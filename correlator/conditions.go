package correlator

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var conditionOrder = []corev1.PodConditionType{
	corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized,
	corev1.ContainersReady, corev1.PodReady,
}

// conditions are the five lifecycle conditions and the readiness gates'
// conditions that became True, in the order they were observed. Each cause
// is looked for among the attempts before the observation: a cause is never
// later than what it caused (a later attempt's moment would read as a
// negative lag).
func (d *derivation) conditions(tl *Timeline) []ConditionTransition {
	var out []ConditionTransition
	types := append([]corev1.PodConditionType(nil), conditionOrder...)
	gate := map[corev1.PodConditionType]bool{}
	for _, g := range d.p.pod.Spec.ReadinessGates {
		if !gate[g.ConditionType] {
			gate[g.ConditionType] = true
			types = append(types, g.ConditionType)
		}
	}
	for _, typ := range types {
		f, ok := d.p.conds[typ]
		if !ok {
			continue
		}
		ct := ConditionTransition{Type: string(typ), ReadinessGate: gate[typ], Observed: f.observed,
			LastTransitionTime: f.lastTransition, EarlierObserved: f.earlier}
		late := d.deliveredLate(typ, f) // apilag.go
		if d.coarseAtFirstSight(f) && !f.lastTransition.IsZero() && !late {
			// True before readyline saw the pod: its own time, no lag.
			ct.Observed, ct.Coarse = f.lastTransition, true
		}
		bound := d.reportedBy(typ, f)
		if ct.ReadinessGate {
			ct.CauseEvent = "readiness gate set by its controller (API)"
		} else {
			ct.Cause, ct.CauseEvent = d.cause(typ, tl, bound)
		}
		if !ct.Cause.IsZero() && ct.Cause.After(bound) {
			// Defensive: every cause() branch bounds itself; a cause after
			// its observation is not the cause.
			ct.Cause, ct.CauseEvent = time.Time{}, "no cause seen before the observation"
		}
		if late {
			lateTransition(&ct, f.observed)
		}
		out = append(out, ct)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Observed.Before(out[j].Observed) })
	return out
}

// cause finds the event below the API that a condition observed at bound
// reports: the latest one not after bound (any, when bound is zero: the
// condition was not observed and a phase wants its end).
func (d *derivation) cause(typ corev1.PodConditionType, tl *Timeline, bound time.Time) (time.Time, string) {
	notAfter := func(t time.Time) bool { return !t.IsZero() && (bound.IsZero() || !t.After(bound)) }
	switch typ {
	case corev1.PodScheduled:
		return time.Time{}, "bound to the node (API, 1 s precision)"
	case corev1.PodReadyToStartContainers:
		// The final sandbox, else the latest earlier one ready by then.
		sbs := []*Sandbox{}
		if tl.Sandbox != nil {
			sbs = append(sbs, tl.Sandbox)
		}
		for i := len(tl.EarlierSandboxes) - 1; i >= 0; i-- {
			sbs = append(sbs, &tl.EarlierSandboxes[i])
		}
		if len(sbs) == 0 {
			return time.Time{}, "sandbox not seen"
		}
		for _, sb := range sbs {
			if t, by := sandboxReady(sb); notAfter(t) {
				if sb != tl.Sandbox {
					by += " (a sandbox later replaced)"
				}
				return t, by
			}
		}
		return time.Time{}, "no sandbox ready before the observation"
	case corev1.PodInitialized:
		// Init containers run in order: the last one is the latest to be done.
		var last *containerView
		for _, v := range d.views {
			if v.entry.kind != KindMain {
				last = v
			}
		}
		switch {
		case last == nil:
			return time.Time{}, "no init containers"
		case last.entry.kind == KindInit:
			if m, ok := last.latest(bound, func(m *milestones) time.Time { return m.done }); ok {
				return m.done, ContainerLabel(KindInit, last.entry.name) + " " + m.doneBy
			}
		case last.entry.kind == KindSidecar:
			// status/generate.go isInitContainerInitialized: a sidecar counts
			// once started, whichever attempt that was.
			if m, ok := last.latest(bound, func(m *milestones) time.Time { return m.started }); ok {
				return m.started, fmt.Sprintf("%s started (%s)", ContainerLabel(KindSidecar, last.entry.name), m.startedBy)
			}
		}
		return time.Time{}, "last init container's end not seen before the observation"
	case corev1.ContainersReady:
		return d.containersReady(bound)
	case corev1.PodReady:
		return d.podReady(tl, bound)
	}
	return time.Time{}, ""
}

// containersReady: every main container and sidecar ready, each by its
// latest attempt ready not after bound (status/generate.go
// GenerateContainersReadyCondition).
func (d *derivation) containersReady(bound time.Time) (time.Time, string) {
	var t time.Time
	by := ""
	for _, v := range d.views {
		if v.entry.kind == KindInit {
			continue
		}
		m, ok := v.latest(bound, func(m *milestones) time.Time { return m.ready })
		if !ok {
			return time.Time{}, fmt.Sprintf("%s's readiness not seen before the observation", v.entry.name)
		}
		if m.ready.After(t) {
			t, by = m.ready, fmt.Sprintf("%s ready (%s)", v.entry.name, m.readyBy)
		}
	}
	return t, by
}

// podReady is the later of ContainersReady's cause and the last readiness
// gate's True observation (status/generate.go GeneratePodReadyCondition:
// Ready is ContainersReady and every gate's condition True).
func (d *derivation) podReady(tl *Timeline, bound time.Time) (time.Time, string) {
	t, by := d.containersReady(bound)
	if f, ok := d.p.conds[corev1.ContainersReady]; ok && !bound.IsZero() && !d.reportedBy(corev1.ContainersReady, f).After(bound) {
		// The containers' readiness as ContainersReady reported it.
		t, by = d.containersReady(d.reportedBy(corev1.ContainersReady, f))
	}
	if t.IsZero() {
		return t, by
	}
	for _, g := range d.p.pod.Spec.ReadinessGates {
		f, ok := d.p.conds[g.ConditionType]
		if !ok || (!bound.IsZero() && f.observed.After(bound)) {
			return time.Time{}, fmt.Sprintf("readiness gate %s not seen True before the observation", g.ConditionType)
		}
		if f.observed.After(t) {
			t, by = f.observed, fmt.Sprintf("readiness gate %s True", g.ConditionType)
		}
	}
	return t, by
}

// sandboxReady is when a sandbox was ready and what says so.
func sandboxReady(sb *Sandbox) (time.Time, string) {
	switch {
	case sb.Call != nil && !sb.Call.Err:
		return sb.Call.End, "RunPodSandbox returned"
	case !sb.PauseStart.IsZero():
		return sb.PauseStart, "sandbox pause process started"
	default:
		return sb.Created, "sandbox created (runtime)"
	}
}
