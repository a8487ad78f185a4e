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
	// The sandbox phase starts with the first RunPodSandbox call, failed
	// ones included: the retries and the back-off between them are time
	// spent getting a sandbox, not waiting for the kubelet to try.
	if sb := tl.Sandbox; sb != nil && sb.Call != nil && !sb.Call.Start.IsZero() {
		start := firstCallStart(sb.FailedCalls, sb.Call.Start)
		add(PhaseWaitSandbox, d.p.firstSeen, start, "api")
		add(PhaseSandbox, start, sb.Call.End, "kernel")
	} else if sb != nil {
		start := firstCallStart(sb.FailedCalls, sb.Created)
		add(PhaseWaitSandbox, d.p.firstSeen, start, "api")
		add(PhaseSandbox, start, sb.Ready, "runtime")
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

// firstCallStart is the earliest start among calls and t (zero times
// ignored).
func firstCallStart(calls []CRICall, t time.Time) time.Time {
	for _, c := range calls {
		t = earliest(t, c.Start)
	}
	return t
}
