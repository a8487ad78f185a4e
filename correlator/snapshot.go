package correlator

import (
	"slices"
	"sort"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// A start is explained while it is in progress, not only once it ends: a
// Snapshot derives its timeline by the same rules, as of the correlator's
// clock, without changing anything the final timeline is derived from (a
// replay, which takes no snapshots, gives the same timelines as the live
// run that took many).

// Query names a pod start: by UID, or by namespace and name (then the
// newest start of that name).
type Query struct {
	UID       string
	Namespace string
	Name      string
}

func (q Query) matches(p *podState) bool {
	if q.UID != "" {
		return p.uid == q.UID || p.nodeUID == q.UID
	}
	return p.pod.Namespace == q.Namespace && p.pod.Name == q.Name
}

// Snapshot derives the start of the pod q names as of the correlator's
// clock, when that start is in progress here: Outcome starting (or the
// outcome it reached, when its grace period still runs), End and AsOf the
// clock, Waiting what it waits on now. inFlight are the kubelet's CRI calls
// that have entered and not returned (End zero), of any pod: those of this
// pod are drawn open to now; none of them is kept. ok is false when no
// start q names is in progress.
//
// Its cost is one derivation of the pod's facts, bounded by
// Config.MaxProcessesPerPod; it never blocks.
func (c *Correlator) Snapshot(q Query, inFlight ...*event.CRICall) (tl *Timeline, ok bool) {
	if q.UID != "" {
		q.UID = c.resolve(q.UID)
	}
	var p *podState
	for _, cand := range c.pods {
		if q.matches(cand) && (p == nil || olderFirst(p, cand) < 0) {
			p = cand // the newest of that name wins
		}
	}
	if p == nil {
		return nil, false
	}
	end := ending{OutcomeStarting, c.clock.now, ""}
	if p.outcome != "" {
		end = ending{p.outcome, p.doneAt, p.reason}
	}
	ctx := c.deriveContext()
	ctx.snapshot = true
	tl = p.timeline(ctx, end)
	tl.ReportedAt = p.reportedAt
	tl.AsOf, tl.Facts = c.clock.now, p.facts
	if tl.Outcome == OutcomeStarting {
		tl.InFlight = c.inFlightOf(p, inFlight)
		(&derivation{p: p, ctx: ctx}).queuedPulls(tl)
		tl.Waiting = p.waitingOn(tl)
	}
	tl.Gaps = c.gaps(p, tl)
	c.clock.present(tl, tl.Start)
	return tl, true
}

// inFlightOf picks the calls in flight that are p's: named by its UID, or
// by a container or sandbox id the index knows to be its.
func (c *Correlator) inFlightOf(p *podState, calls []*event.CRICall) []InFlightCall {
	var out []InFlightCall
	for _, call := range calls {
		if call == nil || !call.End.IsZero() || call.Time.IsZero() {
			continue
		}
		uid := call.PodUID
		if uid == "" {
			uid, _ = c.index.lookup(call, c.clock.now)
		}
		if c.resolve(uid) != p.uid {
			continue
		}
		f := InFlightCall{Method: call.Method, Start: call.Time, Container: call.ContainerName, Image: call.Image, Progress: call.Progress}
		switch {
		case call.Method.IsCSI():
			f.Volume, f.Driver = podVolumeName(p.pod, call.Volume, call.Driver), call.Driver
		case call.Method.IsVolume():
			f.Volume, f.Driver = call.Volume, call.Driver
		}
		if f.Container == "" && call.ContainerID != "" {
			f.Container = p.names[call.ContainerID].name
		}
		if f.Container == "" && f.Image != "" {
			for _, e := range startOrder(p.pod) {
				if sameImage(e.spec.Image, f.Image) {
					f.Container = e.name // the first that needs it: the pull is for it
					break
				}
			}
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// StartSummary is one start in progress, as InProgress lists it.
type StartSummary struct {
	Pod   PodRef
	Start time.Time
	// AsOf is the correlator's clock.
	AsOf time.Time
	// Outcome is starting, or the outcome reached during the grace period.
	Outcome Outcome
}

// InProgress lists the starts in progress, oldest first. It costs no
// derivation.
func (c *Correlator) InProgress() []StartSummary {
	pods := c.sortedPods()
	out := make([]StartSummary, 0, len(pods))
	for _, p := range pods {
		s := StartSummary{Pod: PodRef{UID: p.uid, Namespace: p.pod.Namespace, Name: p.pod.Name, Node: p.pod.Spec.NodeName},
			Start: p.firstPod.CreationTimestamp.Time, AsOf: c.clock.now, Outcome: OutcomeStarting}
		if s.Start.IsZero() || s.Start.After(p.firstSeen) {
			s.Start = p.firstSeen
		}
		if p.outcome != "" {
			s.Outcome = p.outcome
		}
		out = append(out, s)
	}
	// On the clock of the events (clock.go), as timelines are.
	if d := time.Duration(c.clock.current() - c.clock.anchor); d != 0 {
		for i := range out {
			out[i].Start, out[i].AsOf = shiftNonZero(out[i].Start, d), shiftNonZero(out[i].AsOf, d)
		}
	}
	return slices.Clip(out)
}
