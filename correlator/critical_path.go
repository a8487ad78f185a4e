package correlator

import (
	"cmp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// criticalPath is the chain of waits the start was made of: the pod-level
// phases up to the final sandbox, the image pulls (with their waits and
// back-offs) between the containers, each init container to its end (a
// sidecar to its start), the postStart hooks that held the next container
// (or the status) back, the main container ready last, and the readiness
// gates Ready waited for after that. The steps are in time order, none
// overlaps the one before (a later step starts where the earlier ended),
// and all lie inside Start..End, so they sum to no more than the start.
func (d *derivation) criticalPath(tl *Timeline) []Step {
	var out []Step
	add := func(name string, start, end time.Time) {
		if !start.IsZero() && !end.IsZero() && !end.Before(start) {
			out = append(out, Step{Name: name, Start: start, End: end})
		}
	}
	for _, ph := range tl.Phases {
		switch ph.Name {
		case PhaseSchedule, PhaseWaitSandbox, PhaseSandboxReplaced, PhaseSandbox:
			add(ph.Name, ph.Start, ph.End)
		}
	}
	// A container's start begins with its image (kuberuntime_container.go
	// startContainer: "Step 1: pull the image"), in the pod worker that
	// runs the pod's containers one after another: a pull, its wait in the
	// serialized puller and its back-off after a failed attempt hold every
	// container after it. (Pulls inside a step kept, a restart's, are cut.)
	for _, ip := range tl.ImagePulls {
		name := cmp.Or(ip.Container, ip.Volume, ip.Image)
		if w := ip.Wait; w != nil {
			add("image.pull.wait/"+name, w.Start, w.End)
		}
		if ip.BackOff > 0 && !ip.Call.Start.IsZero() {
			add("image.pull.back_off/"+name, ip.Call.Start.Add(-ip.BackOff), ip.Call.Start)
		}
		add("image.pull/"+name, ip.Call.Start, ip.Call.End)
	}
	var lastMain *containerView
	for i, v := range d.views {
		name := string(v.entry.kind) + "/" + v.entry.name
		// A postStart hook runs inside SyncPod's startContainer: the next
		// container is not even created until it returns
		// (kuberuntime_container.go startContainer).
		if h := d.blockingHook(i); h != nil {
			add(name, v.created, h.Start)
			add("postStart/"+v.entry.name, h.Start, h.End)
		}
		switch v.entry.kind {
		case KindInit:
			add(name, v.created, v.done)
		case KindSidecar:
			add(name, v.created, v.started)
		case KindMain:
			if lastMain == nil || v.ready.After(lastMain.ready) {
				lastMain = v
			}
		}
	}
	if lastMain != nil {
		add(string(lastMain.entry.kind)+"/"+lastMain.entry.name, lastMain.created, lastMain.ready)
		// The status (ready) is not written while the hook runs: a hook
		// ending after the container was ready held ContainersReady back.
		if atts := lastMain.out.Attempts; len(atts) > 0 {
			if h := atts[len(atts)-1].PostStart; h != nil && !h.End.IsZero() && h.End.After(lastMain.ready) {
				add("postStart/"+lastMain.entry.name, h.Start, h.End)
			}
		}
	}
	// Readiness gates: Ready waited for the last gate after the containers.
	for _, c := range tl.Conditions {
		if c.Type != CondReady || c.Cause.IsZero() {
			continue
		}
		for _, g := range tl.Conditions {
			if !g.ReadinessGate || !g.Observed.Equal(c.Cause) {
				continue
			}
			from, _ := d.containersReady(c.Observed)
			if f, ok := d.p.conds[corev1.ContainersReady]; ok && from.IsZero() {
				from = d.observedAt(corev1.ContainersReady, f)
			}
			add("readinessGate/"+g.Type, from, g.Observed)
			break
		}
	}
	return sequential(out, tl.Start, tl.End)
}

// blockingHook is the postStart hook of the i-th container's final attempt
// when it held back the creation of the container after it.
func (d *derivation) blockingHook(i int) *Hook {
	v := d.views[i]
	if i+1 >= len(d.views) || len(v.out.Attempts) == 0 {
		return nil
	}
	next := d.views[i+1]
	if v.entry.kind == KindMain && next.entry.kind != KindMain {
		return nil
	}
	h := v.out.Attempts[len(v.out.Attempts)-1].PostStart
	if h == nil || h.Start.IsZero() || h.End.IsZero() || next.created.IsZero() || h.End.After(next.created) || h.End.Equal(h.Start) {
		return nil
	}
	return h
}

// sequential puts steps in time order and cuts each to start no earlier
// than the previous one ended and to lie inside [lo, hi]; a step left
// with nothing of its own is dropped.
func sequential(steps []Step, lo, hi time.Time) []Step {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Start.Before(steps[j].Start) })
	out := steps[:0]
	prev := lo
	for _, s := range steps {
		length := s.End.Sub(s.Start)
		if !prev.IsZero() && s.Start.Before(prev) {
			s.Start = prev
		}
		if !hi.IsZero() && s.End.After(hi) {
			s.End = hi
		}
		if s.End.Before(s.Start) || (length > 0 && !s.End.After(s.Start)) {
			continue
		}
		out = append(out, s)
		prev = s.End
	}
	return out
}
