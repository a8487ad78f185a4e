package correlator

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// derivation builds a Timeline from a podState's facts.
type derivation struct {
	p     *podState
	ctx   *deriveContext
	views []*containerView // start order
}

// deriveContext is what the correlator knows beyond one pod: host-side
// processes and other pods' sandbox calls.
type deriveContext struct {
	cni          *cniBuffer
	sandboxCalls []sandboxCall
}

// containerView is a container of the timeline with the moments the
// kubelet's rules turn on, taken from its latest attempt.
type containerView struct {
	entry specEntry
	out   *Container
	// created: the first attempt's creation; started: when it counted as
	// started (entrypoint running, or startupProbe success); ready: when it
	// counted as ready; done: a regular init container's successful exit.
	created, started, ready, done time.Time
	startedBy, readyBy, doneBy    string
}

func (p *podState) timeline(ctx *deriveContext) *Timeline {
	if ctx == nil {
		ctx = &deriveContext{cni: &cniBuffer{}}
	}
	pod := p.pod
	tl := &Timeline{
		Pod:     PodRef{UID: p.uid, Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName},
		Start:   pod.CreationTimestamp.Time,
		End:     p.doneAt,
		Outcome: p.outcome,
		Reason:  p.reason,
	}
	if tl.Start.IsZero() || tl.Start.After(p.firstSeen) {
		tl.Start = p.firstSeen
	}
	d := &derivation{p: p, ctx: ctx}
	tl.Sandbox = d.sandbox()
	tl.ImagePulls = d.imagePulls()
	tl.Containers = d.containers()
	tl.Conditions = d.conditions(tl.Sandbox)
	tl.Phases = d.phases(tl)
	tl.Insights = d.insights(tl)
	tl.CriticalPath = d.criticalPath(tl)
	return tl
}

// ---- sandbox

func (d *derivation) sandbox() *Sandbox {
	p := d.p
	var sb *Sandbox
	for id, rt := range p.runtime {
		if !rt.Sandbox {
			continue
		}
		if sb == nil || rt.CreatedAt.Before(sb.Created) || (rt.CreatedAt.Equal(sb.Created) && id < sb.ID) {
			sb = &Sandbox{ID: id, Created: rt.CreatedAt, PodIP: rt.PodIP}
		}
	}
	call := d.sandboxCall(sb)
	if sb == nil && call != nil && call.PodSandboxID != "" {
		sb = &Sandbox{ID: call.PodSandboxID}
	}
	if sb == nil {
		// No word from the runtime: the pause process alone names it.
		for _, id := range sortedKeys(p.procs) {
			if _, isContainer := p.names[id]; isContainer || id == "" {
				continue
			}
			if e, _ := analyze(p.procs[id]); e != nil && path.Base(e.filename) == "pause" {
				sb = &Sandbox{ID: id}
				break
			}
		}
	}
	if sb == nil {
		return nil
	}
	if cp := p.procs[sb.ID]; cp != nil {
		if e, _ := analyze(cp); e != nil {
			sb.PauseStart = e.exec
		}
	}
	sb.Ready = sb.PauseStart
	if sb.Ready.IsZero() {
		sb.Ready = sb.Created
	}
	if sb.Created.IsZero() || (!sb.PauseStart.IsZero() && sb.PauseStart.Before(sb.Created)) {
		sb.Created = earliest(sb.Created, sb.PauseStart)
	}
	if call != nil {
		sb.Call = criCall(call)
		sb.Ready = call.End // RunPodSandbox returned: network and pause are up
	}
	sb.CNI = d.cni(sb, call)
	return sb
}

// cni finds the CNI plugins that set up the sandbox's network: those whose
// CNI_CONTAINERID names it, or, when the kernel could not read that, those
// that ran inside its RunPodSandbox call and inside no other pod's.
func (d *derivation) cni(sb *Sandbox, call *event.CRICall) []Process {
	var procs []*procRecord
	if procs = d.ctx.cni.forSandbox(sb.ID); len(procs) == 0 && call != nil && !call.Time.IsZero() {
		procs = d.cniWithin(call.Time, call.End)
	}
	out := make([]Process, 0, len(procs))
	for _, r := range procs {
		out = append(out, Process{PID: r.pid, Filename: r.filename, Argv: r.argv,
			Exec: r.exec, Exit: r.exit, ExitCode: r.exitCode, Signal: r.signal})
	}
	return out
}

// sandboxCall finds the pod's RunPodSandbox call: the one that returned its
// sandbox, else the last one that named its UID.
func (d *derivation) sandboxCall(sb *Sandbox) *event.CRICall {
	var found *event.CRICall
	for _, c := range d.p.calls {
		if !strings.HasSuffix(c.Method, "/RunPodSandbox") {
			continue
		}
		if sb != nil && c.PodSandboxID == sb.ID {
			return c
		}
		if c.PodUID == d.p.uid {
			found = c
		}
	}
	return found
}

func criCall(c *event.CRICall) *CRICall {
	return &CRICall{Method: c.Method, Start: c.Time, End: c.End, Err: c.Err}
}

// cniWithin returns the CNI plugin processes that ran inside this pod's
// RunPodSandbox call and inside no other pod's: when two sandboxes were
// set up at once, their plugins cannot be told apart by time.
func (d *derivation) cniWithin(start, end time.Time) []*procRecord {
	var out []*procRecord
	for _, r := range d.ctx.cni.within(start, end) {
		if r.cniContainerID != "" {
			continue // it said which sandbox it worked for: not this one
		}
		shared := false
		for _, sc := range d.ctx.sandboxCalls {
			if sc.uid != d.p.uid && !r.exec.Before(sc.start) && !r.exec.After(sc.end) {
				shared = true
				break
			}
		}
		if !shared {
			out = append(out, r)
		}
	}
	return out
}

// imagePulls are the pod's PullImage calls, with the container whose image
// was pulled.
func (d *derivation) imagePulls() []ImagePull {
	var out []ImagePull
	for _, c := range d.p.calls {
		if !strings.HasSuffix(c.Method, "/PullImage") || c.PodUID != d.p.uid {
			continue
		}
		ip := ImagePull{Image: c.Image, Ref: c.ImageRef, Call: *criCall(c)}
		for _, e := range startOrder(d.p.pod) {
			if e.spec.Image == c.Image {
				ip.Container = e.name
				break
			}
		}
		out = append(out, ip)
	}
	return out
}

// ---- containers

func (d *derivation) containers() []Container {
	p := d.p
	byName := make(map[string][]string)
	for _, id := range sortedKeys(p.names) {
		na := p.names[id]
		byName[na.name] = append(byName[na.name], id)
	}
	order := startOrder(p.pod)
	out := make([]Container, len(order))
	for i, e := range order {
		out[i] = Container{Name: e.name, Kind: e.kind, Index: e.index, Image: e.spec.Image}
		v := &containerView{entry: e, out: &out[i]}
		d.views = append(d.views, v)
		for _, id := range d.sortAttempts(byName[e.name]) {
			out[i].Attempts = append(out[i].Attempts, d.attempt(e, id))
		}
		for j := range out[i].Attempts {
			if out[i].Attempts[j].Attempt < 0 {
				out[i].Attempts[j].Attempt = j
			}
		}
		d.milestones(v)
	}
	// What each container's successor waited for.
	for i, v := range d.views {
		if i+1 >= len(d.views) || len(v.out.Attempts) == 0 {
			continue
		}
		next := d.views[i+1]
		if v.entry.kind == KindMain && next.entry.kind != KindMain {
			continue
		}
		last := &v.out.Attempts[len(v.out.Attempts)-1]
		last.NextCreated = next.created
		if h := last.PostStart; h != nil && h.Inferred && h.End.IsZero() && !next.created.IsZero() {
			h.End = next.created
		}
	}
	for _, v := range d.views {
		if n := len(v.out.Attempts); n > 0 {
			if h := v.out.Attempts[n-1].PostStart; h != nil && h.Inferred && h.End.IsZero() {
				// The last container: the API shows it running once the hook returned.
				if f := p.status[v.out.Attempts[n-1].ContainerID]; f != nil {
					h.End = f.running
				}
			}
		}
	}
	return out
}

// sortAttempts orders a container's ids by attempt number, then creation.
func (d *derivation) sortAttempts(ids []string) []string {
	p := d.p
	first := func(id string) time.Time {
		if rt := p.runtime[id]; rt != nil && !rt.CreatedAt.IsZero() {
			return rt.CreatedAt
		}
		if cp := p.procs[id]; cp != nil && len(cp.list) > 0 {
			return cp.list[0].first()
		}
		if f := p.status[id]; f != nil {
			return earliest(f.running, f.terminated)
		}
		return time.Time{}
	}
	sort.SliceStable(ids, func(i, j int) bool {
		ai, aj := p.names[ids[i]].attempt, p.names[ids[j]].attempt
		if ai >= 0 && aj >= 0 && ai != aj {
			return ai < aj
		}
		ti, tj := first(ids[i]), first(ids[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return ids[i] < ids[j]
	})
	return ids
}

func (d *derivation) attempt(e specEntry, id string) ContainerAttempt {
	p := d.p
	a := ContainerAttempt{Attempt: p.names[id].attempt, ContainerID: id}
	entry, sessions := analyze(p.procs[id])
	if rt := p.runtime[id]; rt != nil {
		a.Created, a.Started, a.Finished = rt.CreatedAt, rt.StartedAt, rt.FinishedAt
		if !rt.FinishedAt.IsZero() {
			code := int(rt.ExitCode)
			a.ExitCode = &code
		}
	}
	if entry != nil {
		a.Process = &Process{
			PID: entry.pid, Filename: entry.filename, Argv: entry.argv,
			Exec: entry.exec, Exit: entry.exit, ExitCode: entry.exitCode, Signal: entry.signal,
		}
		if a.Finished.IsZero() && !entry.exit.IsZero() {
			a.Finished, a.ExitCode = entry.exit, exitStatus(entry)
		}
	}
	if f := p.status[id]; f != nil {
		a.StartedObserved, a.ReadyObserved = f.started, f.ready
		if a.ExitCode == nil && f.exitCode != nil {
			a.ExitCode = f.exitCode
			if a.Finished.IsZero() {
				a.Finished = f.terminated
			}
		}
	}
	for _, c := range d.p.calls {
		if c.ContainerID == id && !strings.HasSuffix(c.Method, "/ExecSync") {
			a.Calls = append(a.Calls, *criCall(c))
		}
	}
	sort.SliceStable(a.Calls, func(i, j int) bool { return a.Calls[i].End.Before(a.Calls[j].End) })
	d.classify(e, &a, sessions)
	return a
}

// exitStatus is a shell-like status: the code, or 128+signal.
func exitStatus(r *procRecord) *int {
	if r.signal != 0 {
		s := 128 + r.signal
		return &s
	}
	return r.exitCode
}

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
		if c.ContainerID != id || !strings.HasSuffix(c.Method, "/ExecSync") {
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

// milestones fills the moments the kubelet's rules turn on, from the
// container's latest attempt.
func (d *derivation) milestones(v *containerView) {
	atts := v.out.Attempts
	if len(atts) == 0 {
		return
	}
	v.created = atts[0].Created
	if v.created.IsZero() && atts[0].Process != nil {
		v.created = atts[0].Process.Exec
	}
	a := &atts[len(atts)-1]
	spec := v.entry.spec

	// Started: startupProbe success, or else running.
	switch {
	case spec.StartupProbe != nil:
		if t := firstSuccess(a.Probes, ProbeStartup); !t.IsZero() {
			v.started, v.startedBy = t, "startupProbe succeeded"
			if handlerOf(&spec.StartupProbe.ProbeHandler) != "exec" {
				v.startedBy = handlerOf(&spec.StartupProbe.ProbeHandler) + " startupProbe: started=true in the API"
			}
		}
	case a.Process != nil:
		v.started, v.startedBy = a.Process.Exec, "entrypoint exec"
	case !a.Started.IsZero():
		v.started, v.startedBy = a.Started, "runtime started"
	}
	// Ready: readinessProbe success after start, or else started.
	switch {
	case v.entry.kind == KindInit:
	case spec.ReadinessProbe != nil:
		if t := firstSuccess(a.Probes, ProbeReadiness); !t.IsZero() {
			v.ready, v.readyBy = t, "readinessProbe succeeded"
			if handlerOf(&spec.ReadinessProbe.ProbeHandler) != "exec" {
				v.readyBy = handlerOf(&spec.ReadinessProbe.ProbeHandler) + " readinessProbe: ready=true in the API"
			}
		}
	default:
		v.ready, v.readyBy = v.started, v.startedBy
	}
	if v.entry.kind == KindInit && a.ExitCode != nil && *a.ExitCode == 0 {
		v.done, v.doneBy = a.Finished, "exited 0"
	}
}

func firstSuccess(probes []ProbeAttempt, kind ProbeKind) time.Time {
	for _, pa := range probes {
		if pa.Kind == kind && pa.Result == ProbeSuccess {
			return pa.End
		}
	}
	return time.Time{}
}

// ---- conditions

var conditionOrder = []corev1.PodConditionType{
	corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized,
	corev1.ContainersReady, corev1.PodReady,
}

func (d *derivation) conditions(sb *Sandbox) []ConditionTransition {
	var out []ConditionTransition
	for _, typ := range conditionOrder {
		f, ok := d.p.conds[typ]
		if !ok {
			continue
		}
		ct := ConditionTransition{Type: string(typ), Observed: f.observed, LastTransitionTime: f.lastTransition}
		ct.Cause, ct.CauseEvent = d.cause(typ, sb)
		out = append(out, ct)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Observed.Before(out[j].Observed) })
	return out
}

// cause finds the event below the API that a condition reports.
func (d *derivation) cause(typ corev1.PodConditionType, sb *Sandbox) (time.Time, string) {
	switch typ {
	case corev1.PodScheduled:
		return time.Time{}, "bound to the node (API, 1 s precision)"
	case corev1.PodReadyToStartContainers:
		switch {
		case sb == nil:
			return time.Time{}, "sandbox not seen"
		case sb.Call != nil:
			return sb.Call.End, "RunPodSandbox returned"
		case !sb.PauseStart.IsZero():
			return sb.PauseStart, "sandbox pause process started"
		default:
			return sb.Created, "sandbox created (runtime)"
		}
	case corev1.PodInitialized:
		var last *containerView
		for _, v := range d.views {
			if v.entry.kind != KindMain {
				last = v
			}
		}
		switch {
		case last == nil:
			return time.Time{}, "no init containers"
		case last.entry.kind == KindInit && !last.done.IsZero():
			return last.done, fmt.Sprintf("init container %s %s", last.entry.name, last.doneBy)
		case last.entry.kind == KindSidecar && !last.started.IsZero():
			return last.started, fmt.Sprintf("sidecar %s started (%s)", last.entry.name, last.startedBy)
		}
		return time.Time{}, "last init container's end not seen"
	case corev1.ContainersReady, corev1.PodReady:
		if typ == corev1.PodReady && len(d.p.pod.Spec.ReadinessGates) > 0 {
			return d.gatesCause()
		}
		var t time.Time
		by := ""
		for _, v := range d.views {
			if v.entry.kind == KindInit {
				continue
			}
			if v.ready.IsZero() {
				return time.Time{}, fmt.Sprintf("%s's readiness not seen", v.entry.name)
			}
			if v.ready.After(t) {
				t, by = v.ready, fmt.Sprintf("%s ready (%s)", v.entry.name, v.readyBy)
			}
		}
		return t, by
	}
	return time.Time{}, ""
}

func (d *derivation) gatesCause() (time.Time, string) {
	var t time.Time
	by := "readiness gates"
	for _, g := range d.p.pod.Spec.ReadinessGates {
		f, ok := d.p.conds[g.ConditionType]
		if !ok {
			return time.Time{}, fmt.Sprintf("readiness gate %s not seen True", g.ConditionType)
		}
		if f.observed.After(t) {
			t, by = f.observed, fmt.Sprintf("readiness gate %s True", g.ConditionType)
		}
	}
	return t, by
}

// ---- phases

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

// ---- insights

// Thresholds below which a wait is not worth a sentence.
const (
	lagWorthNoting      = time.Second
	reactionWorthNoting = 500 * time.Millisecond
)

func (d *derivation) insights(tl *Timeline) []Insight {
	var out []Insight
	for i, v := range d.views {
		atts := v.out.Attempts
		if len(atts) == 0 {
			continue
		}
		a := atts[len(atts)-1]
		name := v.entry.name
		if len(atts) > 1 {
			codes := ""
			for j, at := range atts {
				if j > 0 {
					codes += ", "
				}
				if at.ExitCode != nil {
					codes += fmt.Sprint(*at.ExitCode)
				} else {
					codes += "running"
				}
			}
			out = append(out, Insight{Kind: InsightRetries, Container: name, Duration: span(atts[0].Created, a.Created),
				Message: fmt.Sprintf("%s ran %d times (exit codes %s); the retries took %s", name, len(atts), codes, fmtDur(span(atts[0].Created, a.Created)))})
		}
		if h := a.PostStart; h != nil && !h.End.IsZero() {
			if i+1 < len(d.views) && !d.views[i+1].created.IsZero() && !a.NextCreated.IsZero() {
				next := d.views[i+1].entry.name
				w := span(h.Start, a.NextCreated)
				out = append(out, Insight{Kind: InsightPostStartWait, Container: next, Duration: w,
					Message: fmt.Sprintf("%s was created %s after %s's postStart hook began: the kubelet waits for the hook (%s) before the next container", next, fmtDur(w), name, fmtDur(span(h.Start, h.End)))})
			} else if hd := span(h.Start, h.End); hd >= lagWorthNoting {
				out = append(out, Insight{Kind: InsightPostStartWait, Container: name, Duration: hd,
					Message: fmt.Sprintf("%s's postStart hook ran %s; the API showed %s running only after it returned", name, fmtDur(hd), name)})
			}
		}
		if ins, ok := probeDelayInsight(v.entry, a); ok {
			out = append(out, ins)
		}
		if v.entry.kind == KindInit && !v.done.IsZero() && !a.NextCreated.IsZero() && i+1 < len(d.views) {
			if r := span(v.done, a.NextCreated); r >= reactionWorthNoting {
				next := d.views[i+1].entry.name
				out = append(out, Insight{Kind: InsightKubeletReaction, Container: name, Duration: r,
					Message: fmt.Sprintf("the kubelet created %s %s after %s exited", next, fmtDur(r), name)})
			}
		}
	}
	for _, c := range tl.Conditions {
		if lag := c.Lag(); lag >= lagWorthNoting {
			out = append(out, Insight{Kind: InsightStatusLag, Duration: lag,
				Message: fmt.Sprintf("%s was reported %s after %s", c.Type, fmtDur(lag), c.CauseEvent)})
		}
	}
	if total := span(tl.Start, tl.End); total > 0 {
		var slow *Phase
		for i := range tl.Phases {
			if slow == nil || tl.Phases[i].Duration() > slow.Duration() {
				slow = &tl.Phases[i]
			}
		}
		if slow != nil && slow.Duration() > 0 {
			out = append(out, Insight{Kind: InsightSlowestPhase, Duration: slow.Duration(),
				Message: fmt.Sprintf("the longest phase was %s: %s of %s", slow.Name, fmtDur(slow.Duration()), fmtDur(total))})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Duration > out[j].Duration })
	return out
}

// probeDelayInsight: initialDelaySeconds kept the first probe away while the
// process was already up.
func probeDelayInsight(e specEntry, a ContainerAttempt) (Insight, bool) {
	if a.Process == nil {
		return Insight{}, false
	}
	for _, ps := range probesOf(e.spec) {
		if ps.kind == ProbeLiveness || ps.probe.InitialDelaySeconds <= 0 {
			continue
		}
		delay := time.Duration(ps.probe.InitialDelaySeconds) * time.Second
		for _, pa := range a.Probes {
			if pa.Kind != ps.kind || pa.Inferred {
				continue
			}
			idle := span(a.Process.Exec, pa.Start)
			return Insight{Kind: InsightProbeDelay, Container: e.name, Duration: idle,
				Message: fmt.Sprintf("%sProbe initialDelaySeconds=%d left %s idle %s after its process started", ps.kind, ps.probe.InitialDelaySeconds, e.name, fmtDur(idle))}, true
		}
		return Insight{Kind: InsightProbeDelay, Container: e.name, Duration: delay,
			Message: fmt.Sprintf("%sProbe initialDelaySeconds=%d kept %s's first %s probe at least %s after its process started", ps.kind, ps.probe.InitialDelaySeconds, e.name, ps.handler, fmtDur(delay))}, true
	}
	return Insight{}, false
}

// ---- critical path

func (d *derivation) criticalPath(tl *Timeline) []Step {
	var out []Step
	for _, ph := range tl.Phases {
		if ph.Name == PhaseSchedule || ph.Name == PhaseWaitSandbox || ph.Name == PhaseSandbox {
			out = append(out, Step{Name: ph.Name, Start: ph.Start, End: ph.End})
		}
	}
	var lastMain *containerView
	for _, v := range d.views {
		switch v.entry.kind {
		case KindInit:
			out = appendStep(out, string(v.entry.kind)+"/"+v.entry.name, v.created, v.done)
		case KindSidecar:
			out = appendStep(out, string(v.entry.kind)+"/"+v.entry.name, v.created, v.started)
		case KindMain:
			if lastMain == nil || v.ready.After(lastMain.ready) {
				lastMain = v
			}
		}
	}
	if lastMain != nil {
		out = appendStep(out, string(lastMain.entry.kind)+"/"+lastMain.entry.name, lastMain.created, lastMain.ready)
	}
	return out
}

func appendStep(steps []Step, name string, start, end time.Time) []Step {
	if start.IsZero() || end.IsZero() || end.Before(start) {
		return steps
	}
	return append(steps, Step{Name: name, Start: start, End: end})
}

// ---- helpers

// analyze finds a container's entrypoint (its first program, not the
// runtime's) and the exec sessions the kubelet started in it (probes and
// hooks): processes whose ancestry does not lead back to the entrypoint.
func analyze(cp *containerProcs) (entry *procRecord, sessions []*procRecord) {
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
	if entry == nil {
		return nil, nil
	}
	members := map[uint32]bool{entry.pid: true}
	session := make(map[uint32]bool) // pids inside an exec session
	for _, r := range list {
		switch {
		case r == entry:
		case r.first().Before(entry.exec):
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

// fmtDur prints a duration for humans: 1.234s, 15.0s, 120ms.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
