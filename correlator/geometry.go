package correlator

import "time"

// The geometry of a timeline: the intervals its spans, its waterfall and
// its metrics are drawn over, from the moments it holds.

// Bounds returns the timeline's interval (its root span's): Start -> End,
// each filled from the earliest or latest known moment when the timeline
// lacks it.
func (tl *Timeline) Bounds() (start, end time.Time) {
	start, end = tl.Start, tl.End
	if !start.IsZero() && !end.IsZero() && !end.Before(start) {
		return start, end
	}
	lo, hi := tl.Start, tl.End
	tl.VisitTimes(func(t time.Time) {
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	})
	if start.IsZero() {
		start = lo
	}
	if end.IsZero() || end.Before(start) {
		end = hi
	}
	return start, end
}

// VisitTimes calls f with every non-zero moment of tl.
func (tl *Timeline) VisitTimes(f func(time.Time)) {
	g := func(ts ...time.Time) {
		for _, t := range ts {
			if !t.IsZero() {
				f(t)
			}
		}
	}
	g(tl.Start, tl.End)
	for _, p := range tl.Phases {
		g(p.Start, p.End)
	}
	if sb := tl.Sandbox; sb != nil {
		g(sb.Created, sb.PauseStart, sb.Ready)
		for _, c := range sb.FailedCalls {
			g(c.Start, c.End)
		}
	}
	for ci := range tl.Containers {
		tl.Containers[ci].visitFacts(g)
		for ai := range tl.Containers[ci].Attempts {
			tl.Containers[ci].Attempts[ai].visitTimes(g)
			g(tl.Containers[ci].Attempts[ai].NextCreated)
		}
	}
	for _, c := range tl.Conditions {
		g(c.Observed, c.Cause)
	}
}

// FactBounds returns the interval of what is known of a container beyond
// its attempts: its waiting reasons and failed calls. ok is false when
// nothing is.
func (c *Container) FactBounds() (start, end time.Time, ok bool) {
	c.visitFacts(func(ts ...time.Time) {
		for _, t := range ts {
			if t.IsZero() {
				continue
			}
			if start.IsZero() || t.Before(start) {
				start = t
			}
			if end.IsZero() || t.After(end) {
				end = t
			}
		}
	})
	return start, end, !start.IsZero()
}

// visitFacts calls g with the moments of the container's waiting reasons
// and failed calls, zero ones included.
func (c *Container) visitFacts(g func(...time.Time)) {
	for _, w := range c.Waiting {
		g(w.First, w.Last)
	}
	for _, call := range c.FailedCalls {
		g(call.Start, call.End)
	}
}

// visitTimes calls g with the attempt's moments, zero ones included: its
// own, then its process's, its postStart hook's, its probes' and its
// calls', each interval's start first.
func (a *ContainerAttempt) visitTimes(g func(...time.Time)) {
	g(a.Created, a.Started, a.Finished, a.StartedObserved, a.ReadyObserved)
	if p := a.Process; p != nil {
		g(p.Exec, p.Exit)
	}
	if h := a.PostStart; h != nil {
		g(h.Start, h.End)
	}
	for _, p := range a.Probes {
		g(p.Start, p.End)
	}
	for _, c := range a.Calls {
		g(c.Start, c.End)
	}
}

// Bounds returns the interval of a container attempt: from its first
// known moment (normally the runtime's creation) to its end, when it ended
// (End), else to its last known moment (readiness, the last probe
// attempt) or, when until is not zero (a start in progress), until. A call
// or probe that began after the end (the kubelet's StopContainer and
// RemoveContainer of a dead container, which may come long after) is no
// part of its run. ok is false when nothing is known.
func (a *ContainerAttempt) Bounds(until time.Time) (start, end time.Time, ok bool) {
	exit := a.End()
	a.visitTimes(func(ts ...time.Time) {
		for i, t := range ts {
			if t.IsZero() {
				continue
			}
			if start.IsZero() || t.Before(start) {
				start = t
			}
			if !exit.IsZero() && (t.After(exit) || (i > 0 && ts[0].After(exit))) {
				continue // after the end, or the end of something begun after it
			}
			if end.IsZero() || t.After(end) {
				end = t
			}
		}
	})
	if exit.IsZero() && !until.IsZero() && until.After(end) {
		end = until
	}
	return start, end, !start.IsZero()
}

// End is when an attempt ended: the later of its entrypoint's exit (the
// kernel's) and its Finished (the runtime's finish, stamped as it reaps
// the container; without it the exit, or the API's report); zero while it
// runs.
func (a *ContainerAttempt) End() time.Time {
	if exit := a.Exit(); exit.After(a.Finished) {
		return exit
	}
	return a.Finished
}

// Exit is when the attempt's entrypoint ended: the kernel's exit, else the
// runtime's finish time; zero while it runs.
func (a *ContainerAttempt) Exit() time.Time {
	if a.Process != nil && !a.Process.Exit.IsZero() {
		return a.Process.Exit
	}
	return a.Finished
}
