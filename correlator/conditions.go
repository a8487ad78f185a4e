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

func (d *derivation) conditions(sb *Sandbox) []ConditionTransition {
	var out []ConditionTransition
	for _, typ := range conditionOrder {
		f, ok := d.p.conds[typ]
		if !ok {
			continue
		}
		ct := ConditionTransition{Type: string(typ), Observed: f.observed, LastTransitionTime: f.lastTransition}
		if d.coarseAtFirstSight(f) && !f.lastTransition.IsZero() {
			ct.Observed, ct.Coarse = f.lastTransition, true
		}
		ct.Cause, ct.CauseEvent = d.cause(typ, sb)
		out = append(out, ct)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Observed.Before(out[j].Observed) })
	return out
}

// cause finds the event below the API that a condition reports.
func (d *derivation) cause(typ corev1.PodConditionType, sb *Sandbox) (time.Time, string) {
	switch typ {
	case corev1.PodScheduled:
		return time.Time{}, "bound to the node (API, 1 s precision)"
	case corev1.PodReadyToStartContainers:
		switch {
		case sb == nil:
			return time.Time{}, "sandbox not seen"
		case sb.Call != nil:
			return sb.Call.End, "RunPodSandbox returned"
		case !sb.PauseStart.IsZero():
			return sb.PauseStart, "sandbox pause process started"
		default:
			return sb.Created, "sandbox created (runtime)"
		}
	case corev1.PodInitialized:
		var last *containerView
		for _, v := range d.views {
			if v.entry.kind != KindMain {
				last = v
			}
		}
		switch {
		case last == nil:
			return time.Time{}, "no init containers"
		case last.entry.kind == KindInit && !last.done.IsZero():
			return last.done, fmt.Sprintf("init container %s %s", last.entry.name, last.doneBy)
		case last.entry.kind == KindSidecar && !last.started.IsZero():
			return last.started, fmt.Sprintf("sidecar %s started (%s)", last.entry.name, last.startedBy)
		}
		return time.Time{}, "last init container's end not seen"
	case corev1.ContainersReady, corev1.PodReady:
		if typ == corev1.PodReady && len(d.p.pod.Spec.ReadinessGates) > 0 {
			return d.gatesCause()
		}
		var t time.Time
		by := ""
		for _, v := range d.views {
			if v.entry.kind == KindInit {
				continue
			}
			if v.ready.IsZero() {
				return time.Time{}, fmt.Sprintf("%s's readiness not seen", v.entry.name)
			}
			if v.ready.After(t) {
				t, by = v.ready, fmt.Sprintf("%s ready (%s)", v.entry.name, v.readyBy)
			}
		}
		return t, by
	}
	return time.Time{}, ""
}

func (d *derivation) gatesCause() (time.Time, string) {
	var t time.Time
	by := "readiness gates"
	for _, g := range d.p.pod.Spec.ReadinessGates {
		f, ok := d.p.conds[g.ConditionType]
		if !ok {
			return time.Time{}, fmt.Sprintf("readiness gate %s not seen True", g.ConditionType)
		}
		if f.observed.After(t) {
			t, by = f.observed, fmt.Sprintf("readiness gate %s True", g.ConditionType)
		}
	}
	return t, by
}
