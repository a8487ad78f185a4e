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
	if f, ok := d.p.conds[corev1.PodScheduled]; ok {
		add(PhaseSchedule, tl.Start, f.lastTransition, "api-coarse")
	}
	if sb := tl.Sandbox; sb != nil && sb.Call != nil && !sb.Call.Start.IsZero() {
		add(PhaseWaitSandbox, d.p.firstSeen, sb.Call.Start, "api")
		add(PhaseSandbox, sb.Call.Start, sb.Call.End, "kernel")
	} else if sb != nil {
		add(PhaseWaitSandbox, d.p.firstSeen, sb.Created, "api")
		add(PhaseSandbox, sb.Created, sb.Ready, "runtime")
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
	if firstInit != nil {
		t, _ := d.cause(corev1.PodInitialized, tl.Sandbox)
		add(PhaseInit, firstInit.created, t, "kernel")
	}
	if firstMain != nil {
		t, _ := d.cause(corev1.ContainersReady, tl.Sandbox)
		if t.IsZero() {
			if f, ok := d.p.conds[corev1.ContainersReady]; ok {
				t = f.observed
			}
		}
		add(PhaseContainers, firstMain.created, t, "kernel")
	}
	return out
}
