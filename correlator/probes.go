package correlator

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// This file matches what the kubelet ran in a container to the postStart
// hook and the probes of its spec: exec sessions and ExecSync calls, TCP
// connections, status flips. The kubelet's probe rules (prober/worker.go:
// startup before the others, initialDelaySeconds, periodSeconds,
// successThreshold; the postStart hook before any probe) are applied here.

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

// probeGate is when the kubelet lets the probes of one container attempt
// run, after prober/worker.go doProbe:
//   - none while the container is not running in the kubelet's status,
//     which is written only after a postStart hook returned
//     (kuberuntime_container.go startContainer runs the hook before it
//     returns, and doProbe skips a container whose State.Running is nil);
//   - none until initialDelaySeconds after State.Running.StartedAt, which
//     the status holds truncated to the second (status_manager.go
//     normalizeStatus): int32(time.Since(StartedAt).Seconds()) <
//     InitialDelaySeconds skips the tick;
//   - the startup probe only until the container is started ("Stop probing
//     for startup once container has started"), readiness and liveness
//     only after ("Disable other probes until container has started");
//     without a startup probe the container is started once running
//     (prober_manager.go isContainerStarted).
type probeGate struct {
	// running .. finished: the attempt's process up (runtime start or
	// entrypoint exec) until its end.
	running, finished time.Time
	// statusStart is StartedAt as the status reports it (1 s).
	statusStart time.Time
	// hookEnd is the end of a postStart hook that was seen.
	hookEnd time.Time
	// startup: the spec has a startup probe (of startupDelay); startupDone
	// is its success when the result is known (exec), maybeStarted the
	// first attempt that may have succeeded (a connection that was not
	// refused), startupSeen whether any attempt was seen; startedObserved
	// is when the API showed started=true, after the kubelet knew it.
	startup                   bool
	startupDelay              time.Duration
	startupDone, maybeStarted time.Time
	startupSeen               bool
	startedObserved           time.Time
}

// clockSlack absorbs the rounding of kernel times into wall-clock times
// when a gate is compared with the runtime's timestamps.
const clockSlack = 10 * time.Millisecond

func (d *derivation) gateOf(e specEntry, a *ContainerAttempt) *probeGate {
	g := &probeGate{running: a.Started, finished: a.Finished, startedObserved: a.StartedObserved}
	if a.Process != nil && (g.running.IsZero() || a.Process.Exec.Before(g.running)) {
		g.running = a.Process.Exec
	}
	switch f := d.p.status[a.ContainerID]; {
	case f != nil && !f.startedAt.IsZero():
		g.statusStart = f.startedAt
	case !a.Started.IsZero():
		g.statusStart = a.Started.Truncate(time.Second)
	case a.Process != nil:
		g.statusStart = a.Process.Exec.Truncate(time.Second)
	}
	if sp := e.spec.StartupProbe; sp != nil {
		g.startup, g.startupDelay = true, time.Duration(sp.InitialDelaySeconds)*time.Second
	}
	return g
}

// started is the earliest the container can have counted as started; zero
// while it cannot have been.
func (g *probeGate) started() time.Time {
	switch {
	case !g.startup:
		return g.running
	case !g.startupDone.IsZero():
		return g.startupDone
	case !g.maybeStarted.IsZero():
		return g.maybeStarted
	case !g.startupSeen && !g.startedObserved.IsZero():
		// No attempt seen: the API's word, and the delay, bound it.
		return earliest(g.running, g.statusStart.Add(g.startupDelay))
	}
	return time.Time{}
}

// allows reports whether the kubelet could have run probe ps at t.
func (g *probeGate) allows(ps probeSpec, t time.Time) bool {
	if g.running.IsZero() || t.Add(clockSlack).Before(g.running) || (!g.finished.IsZero() && t.After(g.finished)) {
		return false
	}
	if !g.hookEnd.IsZero() && t.Add(clockSlack).Before(g.hookEnd) {
		return false
	}
	delay := time.Duration(ps.probe.InitialDelaySeconds) * time.Second
	if !g.statusStart.IsZero() && t.Add(clockSlack).Before(g.statusStart.Add(delay)) {
		return false
	}
	if ps.kind == ProbeStartup {
		done := g.startupDone
		if done.IsZero() {
			done = g.startedObserved
		}
		return done.IsZero() || !t.After(done)
	}
	from := g.started()
	return !from.IsZero() && !t.Add(clockSlack).Before(from)
}

// filter keeps the probes the gate lets run at t.
func (g *probeGate) filter(cands []probeSpec, t time.Time) []probeSpec {
	var out []probeSpec
	for _, c := range cands {
		if g.allows(c, t) {
			out = append(out, c)
		}
	}
	return out
}

// classify sorts the commands the kubelet ran in a container into its
// postStart hook and exec probe attempts, from the kernel and the CRI; its
// connections are attributed for the whole pod (attributeConnections), and
// completeProbes adds what only the API's status flips show.
func (d *derivation) classify(e specEntry, a *ContainerAttempt, sessions []*procRecord) {
	spec := e.spec
	hookCmd := hookCommand(spec)
	g := d.gateOf(e, a)
	d.gates[a.ContainerID] = g
	probes := probesOf(spec)
	last := make(map[ProbeKind]time.Time)
	for _, it := range d.execItems(a.ContainerID, sessions) {
		if a.PostStart == nil && hookCmd != nil && commandMatches(it.argv, it.truncated, hookCmd) {
			a.PostStart = &Hook{Handler: "exec", Command: hookCmd, Start: it.start, End: it.end, ExitCode: it.exitCode, Call: it.call}
			g.hookEnd = it.end
			continue
		}
		var cands []probeSpec
		for _, ps := range probes {
			if commandMatches(it.argv, it.truncated, ps.cmd) {
				cands = append(cands, ps)
			}
		}
		if len(cands) == 0 {
			continue // kubectl exec, or something else
		}
		allowed := g.filter(cands, it.start)
		if len(allowed) == 0 {
			if it.call == nil {
				continue // a session the kubelet's gating rules out: kubectl exec
			}
			// An ExecSync is the kubelet's, and only probes and hooks make
			// one: its command names the probe even when the times the
			// gate was built from say it could not run.
			allowed = cands
		}
		kind := pickProbe(allowed, it.start, g.startupDone, last)
		pa := ProbeAttempt{Kind: kind, Handler: "exec", Start: it.start, End: it.end, Result: ProbeUnknown, ExitCode: it.exitCode, Call: it.call}
		if pa.ExitCode != nil {
			pa.Result = ProbeFailure
			if *pa.ExitCode == 0 {
				pa.Result = ProbeSuccess
			}
		}
		if kind == ProbeStartup {
			g.startupSeen = true
			if pa.Result == ProbeSuccess && g.startupDone.IsZero() {
				g.startupDone = it.end
			}
		}
		last[kind] = it.start
		a.Probes = append(a.Probes, pa)
	}
}

// completeProbes finishes a container attempt's probes and hook once its
// connections are attributed: status flips stand in for network probes
// the kernel did not see (Inferred), and a hook not seen is inferred from
// the container's start.
func (d *derivation) completeProbes(e specEntry, a *ContainerAttempt) {
	seen := map[ProbeKind]bool{}
	for _, pa := range a.Probes {
		if pa.Conn != nil {
			seen[pa.Kind] = true
		}
	}
	for _, ps := range probesOf(e.spec) {
		if ps.handler == "exec" || seen[ps.kind] {
			continue
		}
		switch {
		case ps.kind == ProbeStartup && !a.StartedObserved.IsZero():
			a.Probes = append(a.Probes, ProbeAttempt{Kind: ps.kind, Handler: ps.handler,
				Start: a.StartedObserved, End: a.StartedObserved, Result: ProbeSuccess, Inferred: true})
		case ps.kind == ProbeReadiness && !a.ReadyObserved.IsZero():
			a.Probes = append(a.Probes, ProbeAttempt{Kind: ps.kind, Handler: ps.handler,
				Start: a.ReadyObserved, End: a.ReadyObserved, Result: ProbeSuccess, Inferred: true})
		}
	}
	sort.SliceStable(a.Probes, func(i, j int) bool { return a.Probes[i].Start.Before(a.Probes[j].Start) })
	spec := e.spec
	if a.PostStart == nil && spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil && (a.Process != nil || !a.Started.IsZero()) {
		cmd := hookCommand(spec)
		start := a.Started
		if a.Process != nil && (start.IsZero() || a.Process.Exec.Before(start)) {
			start = a.Process.Exec
		}
		a.PostStart = &Hook{Handler: hookHandlerOf(spec.Lifecycle.PostStart), Command: cmd, Start: start, Inferred: true}
	}
}

// netTarget is one container attempt whose probes or httpGet postStart
// hook connect to the pod's IP.
type netTarget struct {
	container string
	att       *ContainerAttempt
	gate      *probeGate
	probes    []probeSpec
	ports     map[ProbeKind]uint16
	// hookPort: an httpGet postStart hook's port (0: none); hookBound: the
	// latest it can have run (the next container created, the API showing
	// this one running, its end), zero when unknown.
	hookPort  uint16
	hookBound time.Time
	last      map[ProbeKind]time.Time
}

// netPick is one target's reading of a connection.
type netPick struct {
	t    *netTarget
	kind ProbeKind
	hook bool
}

// attributeConnections gives each kubelet connection to the pod to at most
// one probe or postStart hook of one container attempt. The kernel sees
// the port, not the request: a port several probes or containers share
// (service meshes probe one port from two containers) is told apart by
// the kubelet's gating (probeGate), then timing (pickProbe; a probe that
// ran less than half a period ago is not running again). A connection that
// two containers could still have made is ambiguous: it goes on the
// timeline, on neither container.
//
// An httpGet postStart hook is the kubelet's first connection to the
// hook's port once the container runs (lifecycle/handlers.go
// runHTTPHandler, called by kuberuntime_container.go startContainer right
// after StartContainer; the container's probes wait for it, see probeGate).
//
// The kernel sees a refused connection, not an HTTP status: the attempts
// before the API flipped a status (started, ready) succeeded: the last
// one, or the last successThreshold ones of a readiness probe (worker.go
// doProbe sets the result only after that many in a row).
func (d *derivation) attributeConnections() {
	var targets []*netTarget
	for i, v := range d.views {
		var next time.Time
		if i+1 < len(d.views) {
			next = firstCreated(d.views[i+1].out.Attempts)
		}
		for j := range v.out.Attempts {
			a := &v.out.Attempts[j]
			tg := &netTarget{container: v.entry.name, att: a, gate: d.gates[a.ContainerID],
				ports: map[ProbeKind]uint16{}, last: map[ProbeKind]time.Time{}}
			if tg.gate == nil {
				continue
			}
			for _, ps := range probesOf(v.entry.spec) {
				if port, ok := probePort(v.entry.spec, ps.probe, d.p.pod.Spec.HostNetwork); ok {
					tg.probes = append(tg.probes, ps)
					tg.ports[ps.kind] = port
				}
			}
			if port, ok := hookPort(v.entry.spec, d.p.pod.Spec.HostNetwork); ok && a.PostStart == nil {
				tg.hookPort = port
				if next.After(tg.gate.running) {
					tg.hookBound = next
				}
				if f := d.p.status[a.ContainerID]; f != nil {
					tg.hookBound = earliest(tg.hookBound, f.running)
				}
				tg.hookBound = earliest(tg.hookBound, a.Finished)
			}
			if len(tg.probes) > 0 || tg.hookPort != 0 {
				targets = append(targets, tg)
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	conns := append([]*event.TCPConnection(nil), d.p.conns...)
	sort.SliceStable(conns, func(i, j int) bool { return conns[i].Time.Before(conns[j].Time) })
	for _, c := range conns {
		var picks []netPick
		for _, tg := range targets {
			if p, ok := tg.read(c); ok {
				picks = append(picks, p)
			}
		}
		if len(picks) > 1 {
			// A probe that ran moments ago is not the one running now.
			var fresh []netPick
			for _, p := range picks {
				prev, ran := p.t.last[p.kind]
				if p.hook || !ran || c.Time.Sub(prev) >= probePeriod(p.t.spec(p.kind))/2 {
					fresh = append(fresh, p)
				}
			}
			if len(fresh) > 0 {
				picks = fresh
			}
		}
		conn := &Connection{Daddr: c.Daddr, Dport: c.Dport, Established: c.Established, Result: string(c.Result)}
		switch {
		case len(picks) == 0:
			// No probe or hook of the pod could run then: not a probe.
		case len(picks) > 1:
			amb := AmbiguousProbe{Start: c.Time, End: c.End, Conn: conn}
			for _, p := range picks {
				kind := string(p.kind)
				if p.hook {
					kind = HookPostStart
				}
				amb.Candidates = append(amb.Candidates, ProbeTarget{Container: p.t.container, Attempt: p.t.att.Attempt, Kind: kind})
			}
			d.ambiguous = append(d.ambiguous, amb)
		case picks[0].hook:
			tg := picks[0].t
			tg.att.PostStart = &Hook{Handler: "httpGet", Start: c.Time, End: c.End, Conn: conn}
			tg.gate.hookEnd = c.End
		default:
			tg, kind := picks[0].t, picks[0].kind
			pa := ProbeAttempt{Kind: kind, Handler: tg.spec(kind).handler, Start: c.Time, End: c.End, Result: ProbeUnknown, Conn: conn}
			switch {
			case c.Result == event.TCPAborted:
				pa.Result = ProbeTimeout // the prober gave up: its timeoutSeconds
			case !answered(c.Result):
				pa.Result = ProbeFailure
			}
			if kind == ProbeStartup {
				tg.gate.startupSeen = true
				if !pa.Result.Failed() && tg.gate.maybeStarted.IsZero() {
					tg.gate.maybeStarted = c.End // the result comes with the answer
					if c.End.IsZero() {
						tg.gate.maybeStarted = c.Time
					}
				}
			}
			tg.last[kind] = c.Time
			tg.att.Probes = append(tg.att.Probes, pa)
		}
	}
	for _, tg := range targets {
		tg.markFlips(d.flipsBy())
	}
}

// answered: the probe's connection was accepted, so the kernel cannot tell
// its result. A reset after the handshake is one too: Go's servers (the
// control plane's, probed over HTTPS) reset a connection they close with
// the client's TLS close_notify unread, after the response went out.
// Refused, timed-out and aborted handshakes failed the probe.
func answered(r event.TCPResult) bool {
	return r == event.TCPEstablished || r == event.TCPReset
}

// read is what connection c would be for this target: its httpGet hook
// while that has not been seen, else the probe on c's port that the gate
// lets run and timing picks.
func (tg *netTarget) read(c *event.TCPConnection) (netPick, bool) {
	g := tg.gate
	if g.running.IsZero() || c.Time.Add(clockSlack).Before(g.running) || (!g.finished.IsZero() && c.Time.After(g.finished)) {
		return netPick{}, false
	}
	if tg.hookPort != 0 && tg.att.PostStart == nil && c.Dport == tg.hookPort &&
		(tg.hookBound.IsZero() || !c.Time.After(tg.hookBound)) {
		return netPick{t: tg, hook: true}, true
	}
	var cands []probeSpec
	for _, ps := range tg.probes {
		if tg.ports[ps.kind] == c.Dport && g.allows(ps, c.Time) {
			cands = append(cands, ps)
		}
	}
	if len(cands) == 0 {
		return netPick{}, false
	}
	// The startup probe runs until the container counts as started, which
	// the API shows a moment after its success.
	done := g.startupDone
	if done.IsZero() {
		done = g.startedObserved
	}
	return netPick{t: tg, kind: pickProbe(cands, c.Time, done, tg.last)}, true
}

func (tg *netTarget) spec(kind ProbeKind) probeSpec {
	for _, ps := range tg.probes {
		if ps.kind == kind {
			return ps
		}
	}
	return probeSpec{kind: kind, probe: &corev1.Probe{}}
}

// markFlips marks as successes the connection attempts that flipped the
// API's status: the last startup attempt before started=true, and the last
// successThreshold readiness attempts before ready=true (a refused one
// among them ends the run: the data missed an attempt). A flip observed
// after by (non-zero: the status was delivered late) happened by then.
func (tg *netTarget) markFlips(by time.Time) {
	a := tg.att
	for _, flip := range []struct {
		kind ProbeKind
		at   time.Time
		n    int
	}{{ProbeStartup, a.StartedObserved, 1}, {ProbeReadiness, a.ReadyObserved, successThreshold(tg.spec(ProbeReadiness))}} {
		if flip.at.IsZero() {
			continue
		}
		if !by.IsZero() && flip.at.After(by) {
			flip.at = by
		}
		left := flip.n
		for i := len(a.Probes) - 1; i >= 0 && left > 0; i-- {
			pa := &a.Probes[i]
			if pa.Kind != flip.kind || pa.Conn == nil || pa.Start.After(flip.at) {
				continue
			}
			if pa.Result.Failed() {
				break
			}
			pa.Result = ProbeSuccess
			left--
		}
	}
}

// successThreshold is a probe's successThreshold (default 1).
func successThreshold(c probeSpec) int {
	if c.probe == nil || c.probe.SuccessThreshold <= 0 {
		return 1
	}
	return int(c.probe.SuccessThreshold)
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
	if c.probe == nil || c.probe.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(c.probe.PeriodSeconds) * time.Second
}

// failed reports whether the hook failed: its command exited non-zero, or
// its ExecSync call returned an error.
func (h *Hook) failed() bool {
	return (h.ExitCode != nil && *h.ExitCode != 0) || (h.Call != nil && h.Call.Err)
}
