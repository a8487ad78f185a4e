package correlator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

func (d *derivation) phases(tl *Timeline) []Phase {
	var out []Phase
	add := func(name string, start, end time.Time, source string) {
		if !start.IsZero() && !end.IsZero() && !end.Before(start) {
			out = append(out, Phase{Name: name, Start: start, End: end, Source: source})
		}
	}
	if unscheduled(d.p.pod) {
		// On no node yet (Unscheduled): all of it so far is scheduling.
		add(PhaseSchedule, tl.Start, tl.End, "api")
		return out
	}
	if f, ok := d.p.conds[corev1.PodScheduled]; ok {
		// A pod created with its nodeName is marked scheduled by the
		// kubelet, on the node's clock: a node a second behind the API
		// server's puts that before the pod's creation. It was on its node
		// from the start: scheduling took no time, not an unknown one.
		end := f.lastTransition
		if !end.IsZero() && end.Before(tl.Start) {
			end = tl.Start
		}
		add(PhaseSchedule, tl.Start, end, "api-coarse")
	}
	// Each sandbox's time starts with its first RunPodSandbox call, failed
	// ones included: the retries and the back-off between them are time
	// spent getting a sandbox, not waiting for the kubelet to try. The
	// kubelet's wait ends when it began the first sandbox; the sandboxes
	// that did not last fill the time up to the final one.
	// The wait runs from the pod's first sight, or from status.startTime
	// (1 s) when the API delivered the pod late (apilag.go).
	waitFrom, waitSource := d.p.firstSeen, "api"
	if st, late := d.firstSightLate(); late {
		waitFrom, waitSource = st, "api-coarse"
	}
	if sb := tl.Sandbox; sb != nil {
		start, source := sb.Begin(), "runtime"
		if sb.Call != nil && !sb.Call.Start.IsZero() {
			source = "kernel"
		}
		if len(tl.EarlierSandboxes) > 0 {
			e := &tl.EarlierSandboxes[0]
			first, source0 := e.Begin(), "runtime"
			if e.Call != nil && !e.Call.Start.IsZero() {
				source0 = "kernel"
			}
			add(PhaseWaitSandbox, waitFrom, first, waitSource)
			add(PhaseSandboxReplaced, first, start, source0)
		} else {
			add(PhaseWaitSandbox, waitFrom, start, waitSource)
		}
		end := sb.Ready
		if sb.Call != nil {
			end = sb.Call.End
		}
		add(PhaseSandbox, start, end, source)
	} else if tl.Outcome != OutcomeReady {
		// No sandbox yet: the start still waits before it (admission,
		// volumes), or ended there.
		add(PhaseWaitSandbox, waitFrom, tl.End, waitSource)
	}
	var firstInit, firstMain *containerView
	for _, v := range d.views {
		if v.entry.kind == KindMain {
			if firstMain == nil {
				firstMain = v
			}
		} else if firstInit == nil {
			firstInit = v
		}
	}
	// Each phase ends at its condition's cause, found before the
	// condition's observation (or, not observed, before the outcome).
	bound := func(typ corev1.PodConditionType) time.Time {
		if f, ok := d.p.conds[typ]; ok {
			return d.reportedBy(typ, f)
		}
		return tl.End
	}
	if firstInit != nil {
		t, _ := d.cause(corev1.PodInitialized, tl, bound(corev1.PodInitialized))
		if firstMain != nil && !firstMain.created.IsZero() && t.After(firstMain.created) {
			// The main containers are created once the init containers
			// are done (computePodActions): init cannot end after that.
			t = firstMain.created
		}
		add(PhaseInit, firstInit.created, t, "kernel")
	}
	if firstMain != nil {
		t, _ := d.cause(corev1.ContainersReady, tl, bound(corev1.ContainersReady))
		if t.IsZero() {
			if f, ok := d.p.conds[corev1.ContainersReady]; ok {
				t = d.observedAt(corev1.ContainersReady, f)
			}
		}
		add(PhaseContainers, firstMain.created, t, "kernel")
	}
	return out
}
