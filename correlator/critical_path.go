package correlator

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// criticalPath is the chain of waits the start was made of, each step
// with what its time was (Step.Kind): the wait before the sandbox and the
// sandbox's calls (failed ones and the back-off between them included),
// the image pulls (with their waits and back-offs) between the
// containers, each init container's attempts to its end (a sidecar's to
// its start) with the crash-loop back-offs between them, the postStart
// hooks that held the next container (or the status) back, the main
// container ready last (or, not ready, the first not ready) with its
// probes' delay and failures, and the readiness gates Ready waited for
// after that. A start in progress or that did not reach Ready runs to
// what failed or what it still waits on: its last step is open to End.
//
// The steps are in time order, none overlaps the one before (a later step
// starts where the earlier ended), and all lie inside Start..End, so they
// sum to no more than the start; the time between them is what Breakdown
// calls ShareOther (and, at the end of a Ready start, ShareAPILag).
func (d *derivation) criticalPath(tl *Timeline) []Step {
	cp := &pathBuilder{end: tl.End}
	for _, ph := range tl.Phases {
		switch ph.Name {
		case PhaseSchedule:
			// PodScheduled has 1 s timestamps: until the node saw the pod
			// (the wait before its sandbox began), it was being scheduled
			// and delivered.
			end := ph.End
			if w, ok := phaseNamed(tl, PhaseWaitSandbox); ok {
				end = latest(end, w.Start)
			}
			provisionSteps(cp, tl.Volumes, ph.Start, end)
		case PhaseWaitSandbox:
			kind, what := ShareWaitSandbox, ""
			if v := d.p.events.volumeWait(); v != "" {
				kind, what = ShareWaitVolumes, v
			}
			volumeSteps(cp, tl.Volumes, kind, what, ph.Start, ph.End)
		case PhaseSandboxReplaced:
			cp.add(ph.Name, ShareSandboxReplaced, "", ph.Start, ph.End)
		}
	}
	if sb := tl.Sandbox; sb != nil {
		d.sandboxSteps(cp, sb, tl)
	}
	// A container's start begins with its image (kuberuntime_container.go
	// startContainer: "Step 1: pull the image"), in the pod worker that
	// runs the pod's containers one after another: a pull, its wait in the
	// serialized puller and its back-off after a failed attempt hold every
	// container after it. (Pulls inside a step kept, a restart's, are cut.)
	for _, ip := range tl.ImagePulls {
		name := ip.StepFor()
		if w := ip.Wait; w != nil {
			cp.add(ImagePullWaitStepName(name), SharePullWait, ip.Image, w.Start, w.End)
		}
		if ip.BackOff > 0 && !ip.Call.Start.IsZero() {
			cp.add(ImagePullBackOffStepName(name), SharePullBackOff, ip.Image, ip.Call.Start.Add(-ip.BackOff), ip.Call.Start)
		}
		kind := SharePull
		if ip.Call.Err {
			kind = SharePullFailed
		}
		cp.add(ImagePullStepName(name), kind, ip.Image, ip.Call.Start, ip.Call.End)
	}
	// A start not Ready whose last pull of an image failed waits, in the
	// image's back-off, for the next pull (ImagePullBackOff): to End.
	for i, ip := range tl.ImagePulls {
		if ip.Call.Err && tl.Outcome != OutcomeReady && !laterPull(tl.ImagePulls[i+1:], ip) {
			cp.add(ImagePullBackOffStepName(ip.StepFor()), SharePullBackOff, ip.Image, ip.Call.End, cp.end)
		}
	}
	var last *containerView
	for i, v := range d.views {
		switch v.entry.kind {
		case KindInit, KindSidecar:
			d.containerSteps(cp, v, tl)
			// A postStart hook runs inside SyncPod's startContainer: the
			// next container is not even created until it returns
			// (kuberuntime_container.go startContainer).
			if h := d.blockingHook(i); h != nil {
				cp.add(PostStartStepName(v.entry.name), ShareHook, v.entry.name, h.Start, h.End)
			}
		case KindMain:
			// A main container's hook holds the next one's creation too.
			if h := d.blockingHook(i); h != nil {
				cp.add(ContainerStepName(v.entry.kind, v.entry.name), ShareCalls, v.entry.name, v.created, h.Start)
				cp.add(PostStartStepName(v.entry.name), ShareHook, v.entry.name, h.Start, h.End)
			}
			switch {
			case v.ready.IsZero() && (last == nil || !last.ready.IsZero()):
				last = v // the first one not ready holds the start
			case last == nil || (!last.ready.IsZero() && v.ready.After(last.ready)):
				last = v
			}
		}
	}
	if last != nil {
		d.containerSteps(cp, last, tl)
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
			cp.add(ReadinessGateStepName(g.Type), ShareGate, g.Type, from, g.Observed)
			break
		}
	}
	return sequential(cp.steps, tl.Start, tl.End)
}

// laterPull reports whether one of later pulls is of ip's image for the
// same container or volume.
func laterPull(later []ImagePull, ip ImagePull) bool {
	for _, l := range later {
		if l.Image == ip.Image && l.Container == ip.Container && l.Volume == ip.Volume {
			return true
		}
	}
	return false
}

// pathBuilder collects the steps of a critical path.
type pathBuilder struct {
	steps []Step
	end   time.Time // the timeline's End: where open steps end
}

// add keeps a step with both ends known and in order; of the steps
// inside a container's attempt, only those that took time.
func (b *pathBuilder) add(name string, kind ShareKind, what string, start, end time.Time) {
	if end.Equal(start) && (kind == ShareRun || kind == ShareProbeDelay || kind == ShareCalls || kind == ShareStop) {
		return
	}
	if !start.IsZero() && !end.IsZero() && !end.Before(start) {
		b.steps = append(b.steps, Step{Name: name, Kind: kind, What: what, Start: start, End: end})
	}
}

// sandboxSteps are the final sandbox's: its failed RunPodSandbox calls and
// the back-off between them, then the call that made it (or, the runtime's
// word only, its creation to ready); a sandbox not made waits, after its
// last failed call, for the next one.
func (d *derivation) sandboxSteps(cp *pathBuilder, sb *Sandbox, tl *Timeline) {
	var prev time.Time
	for _, c := range sb.FailedCalls {
		if !prev.IsZero() {
			cp.add(SandboxCallsStepName, ShareSandboxFailed, "back-off", prev, c.Start)
		}
		cp.add(SandboxCallsStepName, ShareSandboxFailed, sb.Error, c.Start, c.End)
		prev = c.End
	}
	switch {
	case sb.Call != nil && !sb.Call.Start.IsZero():
		if !prev.IsZero() {
			cp.add(SandboxCallsStepName, ShareSandboxFailed, "back-off", prev, sb.Call.Start)
		}
		cp.add(PhaseSandbox, ShareSandbox, "", sb.Call.Start, sb.Call.End)
	case sb.ID != "":
		if ph, ok := phaseNamed(tl, PhaseSandbox); ok {
			cp.add(PhaseSandbox, ShareSandbox, "", latest(ph.Start, prev), ph.End)
		}
	case !prev.IsZero() && tl.Outcome != OutcomeReady:
		cp.add(SandboxCallsStepName, ShareSandboxFailed, joinNonEmpty(": ", "waiting for the next RunPodSandbox", sb.Error), prev, cp.end)
	}
}

// containerSteps are the steps of a container's attempts in the final
// sandbox, up to its milestone (an init container's end, a sidecar's
// start, a main container's readiness) or, not reached, to End: each
// attempt's calls, its run (before and after its postStart hook), its
// probes' delay and failures, the kubelet's kill of it and the app's
// stop, and the crash-loop back-off before the next attempt (or, the last
// attempt ended and nothing after it, to End).
func (d *derivation) containerSteps(cp *pathBuilder, v *containerView, tl *Timeline) {
	atts := v.out.Attempts
	name := ContainerStepName(v.entry.kind, v.entry.name)
	goalOf := func(m *milestones) time.Time {
		switch v.entry.kind {
		case KindInit:
			return m.done
		case KindSidecar:
			return m.started
		}
		return m.ready
	}
	var prevEnd time.Time
	for i := range atts {
		a, m := &atts[i], &v.atts[i]
		if !inSandbox(a, m.created, tl.Sandbox) {
			continue
		}
		begin := m.created
		for _, c := range a.Calls {
			if c.Method == event.CRICreateContainer && !c.Start.IsZero() {
				begin = earliest(begin, c.Start)
			}
		}
		if !prevEnd.IsZero() {
			cp.add(BackOffStepName, ShareBackOff, v.entry.name, prevEnd, begin)
		}
		exec := attemptStarted(a)
		cp.add(name, ShareCalls, v.entry.name, begin, exec)
		goal := goalOf(m)
		if h := a.PostStart; v.entry.kind == KindMain && !goal.IsZero() && h != nil && h.End.After(goal) {
			goal = h.End // the kubelet writes no status while the hook runs
		}
		end := a.Exit()
		stop := goal
		switch {
		case !goal.IsZero():
		case !end.IsZero():
			stop = end
		case tl.Outcome != OutcomeReady:
			stop = cp.end // running, not there yet
		}
		d.runSteps(cp, v, a, name, exec, stop)
		prevEnd = end
		if !goal.IsZero() && (end.IsZero() || goal.Before(end)) {
			prevEnd = time.Time{} // reached its milestone
		}
	}
	if !prevEnd.IsZero() && tl.Outcome != OutcomeReady && goalOf(&v.milestones).IsZero() {
		// Ended, and not started again yet: the crash-loop back-off.
		cp.add(BackOffStepName, ShareBackOff, v.entry.name, prevEnd, cp.end)
	}
}

// runSteps are an attempt's steps from its process's start to stop: its
// run up to its postStart hook and the hook; the delay before its gating
// probe's first attempt and the probe's failures up to the success (or to
// the kubelet's kill); the app's stop after the kill.
func (d *derivation) runSteps(cp *pathBuilder, v *containerView, a *ContainerAttempt, name string, from, stop time.Time) {
	if from.IsZero() || stop.IsZero() {
		return
	}
	if h := a.PostStart; h != nil && !h.Start.IsZero() && !h.End.IsZero() && h.Start.Before(stop) {
		cp.add(name, ShareRun, v.entry.name, from, h.Start)
		cp.add(PostStartStepName(v.entry.name), ShareHook, v.entry.name, h.Start, earlier(h.End, stop))
		from = h.End
	}
	kill := d.killOf(a)
	if a.KilledBy == "" || kill.IsZero() || kill.After(stop) {
		kill = time.Time{}
	}
	probeEnd := stop
	if !kill.IsZero() {
		probeEnd = kill
	}
	// The probes its milestone waits for, in turn: the startup probe to
	// its success, then a main container's readiness probe.
	gates := gatingProbes(v)
	cur := from
	for gi, gate := range gates {
		gateEnd := probeEnd
		if gi < len(gates)-1 {
			if t := firstSuccess(a.Probes, gate); !t.IsZero() && t.After(cur) && t.Before(probeEnd) {
				gateEnd = t
			}
		}
		first, lastFail := probeSpan(a.Probes, gate, cur, gateEnd)
		if first.IsZero() {
			// Its attempts were not seen (an httpGet probe without the
			// TCP source): initialDelaySeconds kept it away at least.
			first = earlier(cur.Add(probeDelay(v, gate)), gateEnd)
		}
		cp.add(name, ShareProbeDelay, v.entry.name, cur, first)
		if !lastFail.IsZero() {
			cp.add(name, ShareProbeFailing, v.entry.name, first, lastFail)
			first = lastFail
		}
		cp.add(name, ShareRun, v.entry.name, first, gateEnd)
		cur = gateEnd
	}
	cp.add(name, ShareRun, v.entry.name, cur, probeEnd)
	if !kill.IsZero() {
		cp.add(name, ShareStop, v.entry.name, kill, stop)
	}
}

// gatingProbes are the probes a container's milestone waits for, in
// order: its startup probe (a sidecar's start, and a main container's
// readiness, wait for it), then a main container's readiness probe.
func gatingProbes(v *containerView) []ProbeKind {
	var out []ProbeKind
	spec := v.entry.spec
	if spec.StartupProbe != nil && v.entry.kind != KindInit {
		out = append(out, ProbeStartup)
	}
	if spec.ReadinessProbe != nil && v.entry.kind == KindMain {
		out = append(out, ProbeReadiness)
	}
	return out
}

// probeDelay is the initialDelaySeconds of the container's probe of kind.
func probeDelay(v *containerView, kind ProbeKind) time.Duration {
	for _, ps := range probesOf(v.entry.spec) {
		if ps.kind == kind {
			return time.Duration(ps.probe.InitialDelaySeconds) * time.Second
		}
	}
	return 0
}

// probeSpan is the start of the first seen attempt of a probe kind within
// [from, to], and the end of the last failed one there.
func probeSpan(probes []ProbeAttempt, kind ProbeKind, from, to time.Time) (first, lastFail time.Time) {
	for _, pa := range probes {
		if pa.Kind != kind || pa.Inferred || pa.Start.Before(from) || pa.Start.After(to) {
			continue
		}
		if first.IsZero() {
			first = pa.Start
		}
		if pa.Result.Failed() && !pa.End.IsZero() {
			lastFail = earlier(pa.End, to)
		}
	}
	return first, lastFail
}

// attemptStarted is when an attempt's process started: its entrypoint's
// exec, else the runtime's start.
func attemptStarted(a *ContainerAttempt) time.Time {
	if a.Process != nil && !a.Process.Exec.IsZero() {
		return a.Process.Exec
	}
	return a.Started
}

// earlier is the earlier of two known times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func phaseNamed(tl *Timeline, name string) (Phase, bool) {
	for _, p := range tl.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
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
