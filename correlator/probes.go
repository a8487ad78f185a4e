package correlator

import (
	"sort"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// This file matches what the kubelet ran in a container to the postStart
// hook and the probes of its spec: exec sessions and ExecSync calls, TCP
// connections, status flips. The kubelet's probe rules (startup before the
// others, periodSeconds) are applied here.

// execItem is one command the kubelet ran in a container: an exec
// session the kernel saw, its ExecSync call, or both joined.
type execItem struct {
	argv       []string
	truncated  bool
	start, end time.Time
	exitCode   *int
	call       *CRICall
}

// execItems joins a container's exec sessions (processes) with its
// ExecSync calls: a call contains its session's exec and names the same
// command. The call's bounds are then the item's; calls whose process was
// not seen stand alone.
func (d *derivation) execItems(id string, sessions []*procRecord) []*execItem {
	var items []*execItem
	for _, s := range sessions {
		items = append(items, &execItem{argv: s.argv, truncated: s.truncated, start: s.exec, end: s.exit, exitCode: exitStatus(s)})
	}
	for _, c := range d.p.calls {
		if c.ContainerID != id || c.Method != event.CRIExecSync {
			continue
		}
		var match *execItem
		for _, it := range items {
			if it.call == nil && !c.Time.IsZero() && !it.start.Before(c.Time) && !it.start.After(c.End) &&
				(len(c.Cmd) == 0 || commandMatches(it.argv, it.truncated, c.Cmd) || commandMatches(c.Cmd, true, it.argv)) {
				match = it
				break
			}
		}
		call := criCall(c)
		if match == nil {
			match = &execItem{argv: c.Cmd, truncated: true, start: c.Time, end: c.End}
			if !c.Err {
				zero := 0
				match.exitCode = &zero // ExecSync returns an error for a non-zero exit
			}
			items = append(items, match)
		}
		match.call = call
		if !c.Time.IsZero() {
			match.start = c.Time
		}
		match.end = c.End
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].start.Before(items[j].start) })
	return items
}

// classify sorts what the kubelet ran in a container into its postStart
// hook and probe attempts: exec ones from the kernel and the CRI, httpGet
// and tcpSocket ones from its TCP connections, and, where neither was
// seen, from the API's status flips.
func (d *derivation) classify(e specEntry, a *ContainerAttempt, sessions []*procRecord) {
	spec := e.spec
	var hookCmd []string
	hookHandler := ""
	if spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		hookHandler = hookHandlerOf(spec.Lifecycle.PostStart)
		if spec.Lifecycle.PostStart.Exec != nil {
			hookCmd = spec.Lifecycle.PostStart.Exec.Command
		}
	}
	probes := probesOf(spec)
	last := make(map[ProbeKind]time.Time)
	var startupDone time.Time
	for _, it := range d.execItems(a.ContainerID, sessions) {
		if a.PostStart == nil && hookCmd != nil && commandMatches(it.argv, it.truncated, hookCmd) {
			a.PostStart = &Hook{Handler: "exec", Command: hookCmd, Start: it.start, End: it.end, ExitCode: it.exitCode, Call: it.call}
			continue
		}
		var cands []probeSpec
		for _, ps := range probes {
			if commandMatches(it.argv, it.truncated, ps.command()) {
				cands = append(cands, ps)
			}
		}
		if len(cands) == 0 {
			continue // kubectl exec, or something else
		}
		kind := pickProbe(cands, it.start, startupDone, last)
		pa := ProbeAttempt{Kind: kind, Handler: "exec", Start: it.start, End: it.end, Result: ProbeUnknown, ExitCode: it.exitCode, Call: it.call}
		if pa.ExitCode != nil {
			pa.Result = ProbeFailure
			if *pa.ExitCode == 0 {
				pa.Result = ProbeSuccess
			}
		}
		if kind == ProbeStartup && pa.Result == ProbeSuccess && startupDone.IsZero() {
			startupDone = it.end
		}
		last[kind] = it.start
		a.Probes = append(a.Probes, pa)
	}
	a.Probes = append(a.Probes, d.networkProbes(e, a)...)
	sort.SliceStable(a.Probes, func(i, j int) bool { return a.Probes[i].Start.Before(a.Probes[j].Start) })
	if a.PostStart == nil && hookHandler != "" && (a.Process != nil || !a.Started.IsZero()) {
		start := a.Started
		if a.Process != nil && (start.IsZero() || a.Process.Exec.Before(start)) {
			start = a.Process.Exec
		}
		a.PostStart = &Hook{Handler: hookHandler, Command: hookCmd, Start: start, Inferred: true}
	}
}

// networkProbes are a container's httpGet and tcpSocket probe attempts:
// the kubelet's TCP connections to the pod's IP and the probe's port while
// the container ran. The kernel sees a refused connection, not an HTTP
// status: the last attempt of a probe before the API flipped its status
// (started, ready) is its success; without connections, the flip alone
// stands for it (Inferred).
func (d *derivation) networkProbes(e specEntry, a *ContainerAttempt) []ProbeAttempt {
	var out []ProbeAttempt
	from := a.Started
	if a.Process != nil && (from.IsZero() || a.Process.Exec.Before(from)) {
		from = a.Process.Exec
	}
	byPort := map[uint16][]probeSpec{}
	for _, ps := range probesOf(e.spec) {
		if port, ok := probePort(e.spec, ps.probe); ok {
			byPort[port] = append(byPort[port], ps)
		}
	}
	seen := map[ProbeKind]bool{}
	for port, specs := range byPort {
		var conns []*event.TCPConnection
		for _, c := range d.p.conns {
			if c.Dport == port && !c.Time.Before(from) && (a.Finished.IsZero() || !c.Time.After(a.Finished)) {
				conns = append(conns, c)
			}
		}
		sort.SliceStable(conns, func(i, j int) bool { return conns[i].Time.Before(conns[j].Time) })
		last := make(map[ProbeKind]time.Time)
		for _, c := range conns {
			// The startup probe runs until the container counts as started,
			// which the API shows a moment after its success.
			kind := pickProbe(specs, c.Time, a.StartedObserved, last)
			var handler string
			for _, s := range specs {
				if s.kind == kind {
					handler = s.handler
				}
			}
			pa := ProbeAttempt{Kind: kind, Handler: handler, Start: c.Time, End: c.End, Result: ProbeUnknown,
				Conn: &Connection{Daddr: c.Daddr, Dport: c.Dport, Established: c.Established, Result: string(c.Result)}}
			if c.Result != event.TCPEstablished {
				pa.Result = ProbeFailure
			}
			last[kind] = c.Time
			seen[kind] = true
			out = append(out, pa)
		}
		// The last attempt before the status flip succeeded.
		for _, flip := range []struct {
			kind ProbeKind
			at   time.Time
		}{{ProbeStartup, a.StartedObserved}, {ProbeReadiness, a.ReadyObserved}} {
			if flip.at.IsZero() {
				continue
			}
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].Kind == flip.kind && out[i].Conn.Dport == port && !out[i].Start.After(flip.at) {
					if out[i].Result == ProbeUnknown {
						out[i].Result = ProbeSuccess
					}
					break
				}
			}
		}
	}
	// Status flips stand in for probes the kernel did not see.
	for _, ps := range probesOf(e.spec) {
		if ps.handler == "exec" || seen[ps.kind] {
			continue
		}
		switch {
		case ps.kind == ProbeStartup && !a.StartedObserved.IsZero():
			out = append(out, ProbeAttempt{Kind: ps.kind, Handler: ps.handler,
				Start: a.StartedObserved, End: a.StartedObserved, Result: ProbeSuccess, Inferred: true})
		case ps.kind == ProbeReadiness && !a.ReadyObserved.IsZero():
			out = append(out, ProbeAttempt{Kind: ps.kind, Handler: ps.handler,
				Start: a.ReadyObserved, End: a.ReadyObserved, Result: ProbeSuccess, Inferred: true})
		}
	}
	return out
}

// pickProbe decides which of several probes with the same command an
// attempt at time t was: only the startup probe runs until it succeeds;
// after that, the probe whose period predicts t best.
func pickProbe(cands []probeSpec, t, startupDone time.Time, last map[ProbeKind]time.Time) ProbeKind {
	if len(cands) == 1 {
		return cands[0].kind
	}
	var rest []probeSpec
	for _, c := range cands {
		if c.kind == ProbeStartup {
			// The startup probe runs until it succeeds, once per period: an
			// attempt sooner than half a period after the last one is another
			// probe's (readiness starts right after the startup success).
			prev, ran := last[ProbeStartup]
			tooSoon := ran && t.Sub(prev) < probePeriod(c)/2
			if !tooSoon && (startupDone.IsZero() || !t.After(startupDone)) {
				return ProbeStartup
			}
			continue
		}
		rest = append(rest, c)
	}
	if len(rest) == 0 {
		return ProbeStartup
	}
	best, bestErr := rest[0].kind, time.Duration(-1)
	for _, c := range rest {
		var errAbs time.Duration
		if prev, ok := last[c.kind]; ok {
			if t.Sub(prev) < probePeriod(c)/2 {
				continue // it ran moments ago: this is another probe
			}
			errAbs = t.Sub(prev.Add(probePeriod(c))).Abs() // one period after its last attempt
		} else {
			// Its first attempt: within one period after the startup success.
			from := startupDone
			if p, ran := last[ProbeStartup]; ran && (from.IsZero() || p.After(from)) {
				from = p
			}
			if from.IsZero() {
				continue
			}
			switch to := from.Add(probePeriod(c)); {
			case t.Before(from):
				errAbs = from.Sub(t)
			case t.After(to):
				errAbs = t.Sub(to)
			}
			// A probe with a rhythm already is the likelier one.
			errAbs += probePeriod(c) / 2
		}
		if bestErr < 0 || errAbs < bestErr {
			best, bestErr = c.kind, errAbs
		}
	}
	return best
}

// probePeriod is a probe's periodSeconds (default 10 s).
func probePeriod(c probeSpec) time.Duration {
	if c.probe.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(c.probe.PeriodSeconds) * time.Second
}
