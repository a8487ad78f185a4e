package correlator

import (
	"fmt"
	"sort"
	"time"

	"github.com/readyline/readyline/collector/event"
)

func (d *derivation) containers(final *Sandbox) []Container {
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
		if w := p.waiting[e.name]; w != nil && len(w.list) > 0 {
			out[i].Waiting = append([]WaitingReason(nil), w.list...)
			out[i].WaitingOmitted = w.omitted
		}
		out[i].Events = p.events.of(e.name)
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
		out[i].FailedCalls = d.failedContainerCalls(e.name)
	}
	// Connections are the pod's: one port may serve several containers.
	d.attributeConnections()
	for _, v := range d.views {
		for j := range v.out.Attempts {
			a := &v.out.Attempts[j]
			d.completeProbes(v.entry, a)
			d.tellProbes(v.entry, a)
			a.KilledBy = d.killedBy(v.entry, a) // its probes and hook all known now
		}
		backOffs(v.out.Attempts)
		d.milestones(v, final)
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
		// Only a hook that began before the next container was created
		// held it back: a restarted attempt's hook runs long after.
		if h := last.PostStart; h != nil && h.Inferred && h.End.IsZero() && next.created.After(h.Start) {
			h.End = next.created
		}
	}
	for _, v := range d.views {
		if n := len(v.out.Attempts); n > 0 {
			if h := v.out.Attempts[n-1].PostStart; h != nil && h.Inferred && h.End.IsZero() {
				// The last container: the API shows it running once the hook returned.
				if f := p.status[v.out.Attempts[n-1].ContainerID]; f != nil && !f.running.Before(h.Start) {
					h.End = f.running
				}
			}
		}
	}
	return out
}

// backOffs sets each attempt's wait since the previous one's exit.
func backOffs(atts []ContainerAttempt) {
	for j := 1; j < len(atts); j++ {
		exit := atts[j-1].Finished
		if p := atts[j-1].Process; p != nil && !p.Exit.IsZero() && (exit.IsZero() || p.Exit.Before(exit)) {
			exit = p.Exit
		}
		created := atts[j].Created
		if created.IsZero() && atts[j].Process != nil {
			created = atts[j].Process.Exec
		}
		if !exit.IsZero() && created.After(exit) {
			atts[j].BackOff = created.Sub(exit)
		}
	}
}

// failedContainerCalls are the CreateContainer calls for container name
// that returned an error: no container id came back, so they belong to no
// attempt and are known by the name in their request. A failed
// StartContainer names its container id and stays with its attempt.
func (d *derivation) failedContainerCalls(name string) []CRICall {
	var out []CRICall
	for _, c := range d.p.calls {
		if c.Method == event.CRICreateContainer && c.Err && c.ContainerID == "" &&
			c.ContainerName == name && c.PodUID == d.p.nodeUID {
			out = append(out, *criCall(c))
		}
	}
	sortCalls(out)
	return out
}

// sortCalls orders calls by their return.
func sortCalls(calls []CRICall) {
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].End.Before(calls[j].End) })
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
	var started time.Time
	if rt := p.runtime[id]; rt != nil {
		started = rt.StartedAt
	}
	entry, sessions := analyzeStarted(p.procs[id], started)
	if rt := p.runtime[id]; rt != nil {
		a.Created, a.Started, a.Finished, a.SandboxID = rt.CreatedAt, rt.StartedAt, rt.FinishedAt, rt.SandboxID
		if !rt.FinishedAt.IsZero() {
			code := int(rt.ExitCode)
			a.ExitCode, a.Reason = &code, rt.Reason
		}
	}
	if entry != nil {
		a.Process = &Process{
			PID: entry.pid, Filename: entry.filename, Argv: entry.argv, SpecArgv: specArgv(e.spec, entry.argv),
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
		if a.Reason == "" {
			a.Reason = f.reason
		}
	}
	for _, c := range d.p.calls {
		if c.ContainerID == id && c.Method != event.CRIExecSync {
			a.Calls = append(a.Calls, *criCall(c))
			if a.SandboxID == "" && c.Method == event.CRICreateContainer {
				a.SandboxID = c.PodSandboxID
			}
		}
	}
	sortCalls(a.Calls)
	d.classify(e, &a, sessions)
	return a
}

// killedBy tells whether the kubelet killed an attempt for its liveness or
// startup probe, or its postStart hook (ContainerAttempt.KilledBy). The
// kill is the kubelet's StopContainer call for the attempt, or its Killing
// event, when the pod was not being deleted then; without either, a signal
// (or a shell's 128+signal) exit. It is for a probe when failureThreshold
// attempts of it in a row failed just before (the prober's condition for a
// Failure result, prober/worker.go, on which computePodActions kills), for
// the hook when the hook failed before it.
func (d *derivation) killedBy(e specEntry, a *ContainerAttempt) ProbeKind {
	if a.Exit().IsZero() && a.Finished.IsZero() {
		// A kill is a fact that happened: the kubelet's action and the
		// exit after it. An attempt that still runs was not killed (its
		// StopContainer may be in flight: it is not yet).
		return ""
	}
	if k := d.p.events.killing(e.name, firstCreated([]ContainerAttempt{*a}), a.Exit()); k != "" {
		return k // the kubelet said why
	}
	kill := d.killOf(a)
	if kill.IsZero() {
		return ""
	}
	if h := a.PostStart; h != nil && h.failed() && !h.Start.After(kill) {
		return KilledPostStart
	}
	for _, ps := range probesOf(e.spec) {
		if ps.kind == ProbeReadiness {
			continue // readiness failures do not restart a container
		}
		threshold := int(ps.probe.FailureThreshold)
		if threshold <= 0 {
			threshold = 3
		}
		var run []ProbeAttempt
		for _, pa := range a.Probes {
			if pa.Kind == ps.kind && !pa.Start.After(kill) {
				run = append(run, pa)
			}
		}
		if len(run) < threshold {
			continue
		}
		failed := true
		for _, pa := range run[len(run)-threshold:] {
			failed = failed && pa.Result.Failed()
		}
		if failed {
			return ps.kind
		}
	}
	return ""
}

// killOf is when the kubelet began to kill an attempt: its StopContainer
// call, before the pod's deletion; else, when it was not seen, the
// attempt's end if a signal ended it. Zero when it was not
// killed, or was killed for the pod's deletion.
func (d *derivation) killOf(a *ContainerAttempt) time.Time {
	deleting := d.p.deletingSince()
	var kill time.Time
	for _, c := range a.Calls {
		if c.Method == event.CRIStopContainer && !c.Start.IsZero() {
			kill = earliest(kill, c.Start)
		}
	}
	if !kill.IsZero() {
		if !deleting.IsZero() && !kill.Before(deleting) {
			return time.Time{}
		}
		return kill
	}
	end := a.Finished
	if a.Process != nil && !a.Process.Exit.IsZero() {
		end = a.Process.Exit
	}
	signalled := (a.Process != nil && a.Process.Signal != 0) || (a.ExitCode != nil && *a.ExitCode > 128)
	if end.IsZero() || !signalled || (!deleting.IsZero() && !end.Before(deleting)) {
		return time.Time{}
	}
	return end
}

// exitStatus is a shell-like status: the code, or 128+signal.
func exitStatus(r *procRecord) *int {
	if r.signal != 0 {
		s := 128 + r.signal
		return &s
	}
	return r.exitCode
}

// milestones fills the moments the kubelet's rules turn on, for every
// attempt; the view's own are the final attempt's, with created the
// creation of the first attempt in the final sandbox (an attempt in a
// replaced sandbox belongs to pod.sandbox_replaced, not to pod.init or
// pod.containers).
func (d *derivation) milestones(v *containerView, final *Sandbox) {
	atts := v.out.Attempts
	if len(atts) == 0 {
		return
	}
	v.atts = make([]milestones, len(atts))
	for i := range atts {
		v.atts[i] = attemptMilestones(v.entry, &atts[i])
	}
	v.milestones = v.atts[len(atts)-1]
	v.created = time.Time{}
	for i := range atts {
		if inSandbox(&atts[i], v.atts[i].created, final) {
			v.created = v.atts[i].created
			break
		}
	}
	if v.created.IsZero() {
		v.created = v.atts[len(atts)-1].created
	}
}

// inSandbox reports whether an attempt created at created ran in sb: it
// says so, or it was created after sb was.
func inSandbox(a *ContainerAttempt, created time.Time, sb *Sandbox) bool {
	switch {
	case sb == nil:
		return true
	case a.SandboxID != "":
		return a.SandboxID == sb.ID
	}
	from := sb.Created
	if sb.Call != nil && !sb.Call.Start.IsZero() {
		from = sb.Call.Start
	}
	return from.IsZero() || created.IsZero() || !created.Before(from)
}

func attemptMilestones(e specEntry, a *ContainerAttempt) milestones {
	var m milestones
	m.created, m.finished = a.Created, a.Finished
	if m.created.IsZero() && a.Process != nil {
		m.created = a.Process.Exec
	}
	spec := e.spec
	// Started: startupProbe success, or else running.
	switch {
	case spec.StartupProbe != nil:
		if t := firstSuccess(a.Probes, ProbeStartup); !t.IsZero() {
			m.started, m.startedBy = t, "startupProbe succeeded"
			if handlerOf(&spec.StartupProbe.ProbeHandler) != "exec" {
				m.startedBy = handlerOf(&spec.StartupProbe.ProbeHandler) + " startupProbe: started=true in the API"
			}
		}
	case a.Process != nil:
		m.started, m.startedBy = a.Process.Exec, "entrypoint exec"
	case !a.Started.IsZero():
		m.started, m.startedBy = a.Started, "runtime started"
	}
	// Ready: readinessProbe success after start, or else started.
	switch {
	case e.kind == KindInit:
	case spec.ReadinessProbe != nil:
		n := successThreshold(probeSpec{kind: ProbeReadiness, probe: spec.ReadinessProbe})
		t := nthSuccess(a.Probes, ProbeReadiness, n)
		if t.IsZero() && !a.ReadyObserved.IsZero() {
			// Fewer successes in a row seen than the threshold: some were
			// missed, and the last one seen is the latest known.
			t = lastSuccess(a.Probes, ProbeReadiness, a.ReadyObserved)
		}
		if !t.IsZero() {
			m.ready, m.readyBy = t, "readinessProbe succeeded"
			if handlerOf(&spec.ReadinessProbe.ProbeHandler) != "exec" {
				m.readyBy = handlerOf(&spec.ReadinessProbe.ProbeHandler) + " readinessProbe: ready=true in the API"
			}
		}
	default:
		m.ready, m.readyBy = m.started, m.startedBy
	}
	if e.kind == KindInit && a.ExitCode != nil && *a.ExitCode == 0 {
		m.done, m.doneBy = a.Finished, "exited 0"
	}
	if a.Attempt > 0 {
		for _, by := range []*string{&m.startedBy, &m.readyBy, &m.doneBy} {
			if *by != "" {
				*by += fmt.Sprintf(", attempt %d", a.Attempt)
			}
		}
	}
	return m
}

func firstSuccess(probes []ProbeAttempt, kind ProbeKind) time.Time {
	return nthSuccess(probes, kind, 1)
}

// nthSuccess is the end of the attempt that made n successes of a probe
// in a row: the one whose result the kubelet sets (prober/worker.go
// doProbe: "Success or failure is below threshold - leave the probe state
// unchanged" until resultRun reaches successThreshold).
func nthSuccess(probes []ProbeAttempt, kind ProbeKind, n int) time.Time {
	run := 0
	for _, pa := range probes {
		if pa.Kind != kind {
			continue
		}
		if pa.Result != ProbeSuccess {
			run = 0
			continue
		}
		if run++; run >= n {
			return pa.End
		}
	}
	return time.Time{}
}

// lastSuccess is the end of the last successful attempt of a probe that
// started before the time given.
func lastSuccess(probes []ProbeAttempt, kind ProbeKind, before time.Time) time.Time {
	var t time.Time
	for _, pa := range probes {
		if pa.Kind == kind && pa.Result == ProbeSuccess && !pa.Start.After(before) {
			t = pa.End
		}
	}
	return t
}

// firstCreated is when a container's first attempt was created (or its
// process seen).
func firstCreated(atts []ContainerAttempt) time.Time {
	if len(atts) == 0 {
		return time.Time{}
	}
	if !atts[0].Created.IsZero() || atts[0].Process == nil {
		return atts[0].Created
	}
	return atts[0].Process.Exec
}
