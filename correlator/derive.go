package correlator

import (
	"sort"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// A Timeline is derived in steps, one file each: sandbox.go, containers.go
// (with probes.go for the hooks and probes), conditions.go, phases.go,
// insights.go and critical_path.go. This file holds the derivation itself and
// the helpers the steps share.

// derivation builds a Timeline from a podState's facts.
type derivation struct {
	p     *podState
	ctx   *deriveContext
	views []*containerView // start order
	// gates: when each container attempt's probes could run, by id.
	gates map[string]*probeGate
	// ambiguous: connections several containers' probes could have made.
	ambiguous []AmbiguousProbe
	// late: readyline saw the pod after its start had begun (sight.go).
	late bool
}

// deriveContext is what the correlator knows beyond one pod: host-side
// processes and other pods' sandbox and image pull calls.
type deriveContext struct {
	cni          *cniBuffer
	sandboxCalls []sandboxCall
	pullCalls    []pullCall
	pullSamples  pullSamples
	// snapshot: the derivation is a Snapshot's, which must leave the pod's
	// facts as they were (the CNI plugins it remembers, sandbox.go).
	snapshot bool
}

// containerView is a container of the timeline with the moments the
// kubelet's rules turn on: for each attempt (atts, in the order of
// out.Attempts), and in the embedded milestones those of the final attempt
// with created the creation of the first attempt in the final sandbox.
type containerView struct {
	entry specEntry
	out   *Container
	atts  []milestones
	milestones
}

// milestones are the moments of one container attempt: created; started,
// when it counted as started (entrypoint running, or startupProbe
// success); ready, when it counted as ready; done, a regular init
// container's successful exit.
type milestones struct {
	created, started, ready, done time.Time
	finished                      time.Time // the attempt's end, zero while running
	startedBy, readyBy, doneBy    string
}

// latest returns the milestones of the latest attempt whose moment (picked
// by at) is known and not after bound (any, when bound is zero): the
// attempt that caused what the API reported at bound, never a later one.
// An attempt still running at bound is preferred to one that had ended:
// the kubelet reports the readiness of the container it runs.
func (v *containerView) latest(bound time.Time, at func(*milestones) time.Time) (*milestones, bool) {
	var ended *milestones
	for i := len(v.atts) - 1; i >= 0; i-- {
		t := at(&v.atts[i])
		if t.IsZero() || (!bound.IsZero() && t.After(bound)) {
			continue
		}
		if fin := v.atts[i].finished; bound.IsZero() || fin.IsZero() || !fin.Before(bound) || !v.atts[i].done.IsZero() {
			return &v.atts[i], true
		}
		if ended == nil {
			ended = &v.atts[i]
		}
	}
	return ended, ended != nil
}

// ending is how and when the timeline being derived ends: the start's
// outcome, or the report deadline of a start still in progress.
type ending struct {
	outcome Outcome
	at      time.Time
	reason  string
}

func (p *podState) timeline(ctx *deriveContext, end ending) *Timeline {
	if ctx == nil {
		ctx = &deriveContext{cni: &cniBuffer{}}
	}
	pod := p.pod
	tl := &Timeline{
		Pod:         PodRef{UID: p.uid, Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName},
		Start:       p.firstPod.CreationTimestamp.Time, // as first read (clock.go)
		End:         end.at,
		Outcome:     end.outcome,
		Reason:      end.reason,
		TraceParent: traceParent(pod),
	}
	if tl.Start.IsZero() || tl.Start.After(p.firstSeen) {
		tl.Start = p.firstSeen
	}
	if p.nodeUID != p.uid {
		// A static pod started on the node before its mirror pod existed.
		tl.Pod.ConfigHash = p.nodeUID
		tl.Start = earliest(tl.Start, p.nodeStart())
	}
	d := &derivation{p: p, ctx: ctx, gates: make(map[string]*probeGate), late: p.seenLate()}
	tl.Events, tl.EventsUnread = p.events.of(""), p.events.unread
	tl.Sandbox, tl.EarlierSandboxes = d.sandboxes()
	if sb := tl.Sandbox; sb != nil && len(sb.FailedCalls) > 0 {
		sb.Error = p.events.sandboxError()
	}
	tl.Containers = d.containers(tl.Sandbox)
	tl.ImagePulls = d.imagePulls(tl) // after the containers: who needed the image, and when
	tl.AmbiguousProbes = d.ambiguous
	tl.Conditions = d.conditions(tl)
	if tl.Outcome == OutcomeReady {
		for _, c := range tl.Conditions {
			if c.Type == CondReady && c.Coarse {
				// Ready before the first sight: its own time, not its
				// sighting. lastTransitionTime is truncated to the second;
				// a cause inside that second is the finer time.
				end := c.LastTransitionTime
				if !c.Cause.Before(end) && c.Cause.Before(end.Add(time.Second)) {
					end = c.Cause
				}
				tl.End = latest(end, tl.Start)
			}
		}
	}
	if d.late {
		tl.ObservedSince = p.firstSight()
		tl.Missing = d.missing(tl, tl.ObservedSince)
	}
	switch tl.Outcome {
	case OutcomeTimeout:
		tl.Volumes = d.volumeSetups(tl) // for stuckDetail; again with the attaches after the phases
		tl.Reason = joinNonEmpty(": ", end.reason, p.stuckDetail(tl))
	case OutcomeFailed:
		tl.Reason = d.failedBecause(tl, end.reason)
	}
	markAPILag(tl)
	tl.Phases = d.phases(tl)
	tl.Volumes = d.volumeSetups(tl) // after the phases: an attach waits from the pod's arrival on the node
	tl.Insights = d.insights(tl)
	tl.CriticalPath = d.criticalPath(tl)
	tl.Breakdown = BreakdownOf(tl)
	boundProbes(tl) // last: every rule above saw every attempt
	return tl
}

func criCall(c *event.CRICall) *CRICall {
	return &CRICall{Method: c.Method, Start: c.Time, End: c.End, Err: c.Err}
}

// analyze finds a container's entrypoint (its first program, not the
// runtime's) and the exec sessions the kubelet started in it (probes and
// hooks): processes whose ancestry does not lead back to the entrypoint.
func analyze(cp *containerProcs) (entry *procRecord, sessions []*procRecord) {
	return analyzeStarted(cp, time.Time{})
}

// analyzeStarted is analyze for a container the runtime says started at
// started (zero: unknown). The entrypoint execs as the container starts, so
// a first program seen more than sightSlack later is not it: the kernel
// missed the entrypoint (readyline was not yet watching, or the ring buffer
// dropped it), and every process seen is then an exec session or a child of
// the unseen entrypoint, which no probe or hook command matches.
func analyzeStarted(cp *containerProcs, started time.Time) (entry *procRecord, sessions []*procRecord) {
	if cp == nil {
		return nil, nil
	}
	list := make([]*procRecord, 0, len(cp.list))
	for _, r := range cp.list {
		if !isRuntimeNoise(r) {
			list = append(list, r)
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].first().Before(list[j].first()) })
	for _, r := range list {
		if !r.exec.IsZero() {
			entry = r
			break
		}
	}
	members := make(map[uint32]bool) // pids of the entrypoint and its children
	switch {
	case entry == nil:
		return nil, nil
	case !started.IsZero() && entry.exec.After(started.Add(sightSlack)):
		entry = nil
	default:
		members[entry.pid] = true
	}
	session := make(map[uint32]bool) // pids inside an exec session
	for _, r := range list {
		switch {
		case entry != nil && r == entry:
		case entry != nil && r.first().Before(entry.exec):
			// the runtime's own steps into the container before the entrypoint
		case members[r.ppid]:
			members[r.pid] = true
		case session[r.ppid]:
			session[r.pid] = true
		case !r.exec.IsZero():
			session[r.pid] = true
			sessions = append(sessions, r)
		}
	}
	return entry, sessions
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
