package correlator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// What happens to a pod after its start (a container exiting, restarts,
// back-off, Ready lost and regained, the phase going Failed or Succeeded)
// belongs to the same incarnation: the start itself still ends at Ready,
// and its timeline is not derived again, but the pod's life goes on being
// followed, in bounded memory, until the API deletes it. Each return to
// Ready after a loss is measured with the breakdown of a start (a
// Recovery): how long a restarted container took to be Ready again.

// After is what happened to a pod after its start ended, as of AsOf.
type After struct {
	AsOf time.Time `json:"as_of"`
	// Ready is whether the pod was Ready as of AsOf; NotReadySince when it
	// last lost it (zero while Ready).
	Ready         bool      `json:"ready"`
	NotReadySince time.Time `json:"not_ready_since,omitzero"`
	// Phase is the pod's phase as of AsOf; PhaseReason why, for Failed and
	// Succeeded.
	Phase       string `json:"phase,omitempty"`
	PhaseReason string `json:"phase_reason,omitempty"`
	// Containers are the containers' states as of AsOf, in spec order.
	Containers []AfterContainer `json:"containers,omitempty"`
	// Events are what happened, in time order: the first maxAfterEvents/4
	// and the latest, EventsOmitted counting the others.
	Events        []AfterEvent `json:"events,omitempty"`
	EventsOmitted int          `json:"events_omitted,omitempty"`
	// Recoveries are the returns to Ready after a loss, the latest
	// maxRecoveries of them, RecoveriesOmitted counting the others.
	Recoveries        []Recovery `json:"recoveries,omitempty"`
	RecoveriesOmitted int        `json:"recoveries_omitted,omitempty"`
}

// AfterContainer is a container's state after the start.
type AfterContainer struct {
	Name string `json:"name"`
	// Restarts is its restartCount; State "running", "waiting <Reason>"
	// or "exited <code>".
	Restarts int32  `json:"restarts"`
	State    string `json:"state,omitempty"`
	Message  string `json:"message,omitempty"`
}

// AfterEvent is one thing that happened after the start.
type AfterEvent struct {
	At        time.Time `json:"at"`
	Container string    `json:"container,omitempty"`
	// What says it: "exited 3", "killed by signal 9", "killed by its
	// livenessProbe (3 failures)", "restarted", "CrashLoopBackOff", "Ready
	// lost", "Ready again after 12.3s", "phase Failed: ...".
	What string `json:"what"`

	exitOf string // the container id whose entrypoint's exit this is
}

// Recovery is a return to Ready after a loss: from the loss (the exit of
// the container that took Ready away, when the kernel saw it; else the
// API's report of the loss) to Ready observed again, with the steps of the
// way back, which add up to it like a start's.
type Recovery struct {
	Pod PodRef `json:"pod"`
	// Start is the loss, End the return; Lost is when the API showed the
	// pod not Ready.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Lost  time.Time `json:"lost"`
	// Cause is what took Ready away, when known: "app exited 3", "app
	// killed by its livenessProbe (3 failures), restarted", the kubelet's
	// Unhealthy words of a readiness probe; CauseKind says which kind it
	// is (CauseExit, CauseLivenessProbe, ...).
	Cause     string    `json:"cause,omitempty"`
	CauseKind CauseKind `json:"cause_kind,omitempty"`
	// Containers are the containers that restarted on the way back.
	Containers []string  `json:"containers,omitempty"`
	Steps      []Step    `json:"steps,omitempty"`
	Breakdown  []Share   `json:"breakdown,omitempty"`
	Restarts   int       `json:"restarts,omitempty"`
	Created    time.Time `json:"created,omitzero"` // the pod's creation, for offsets
}

// Duration is End - Start.
func (r Recovery) Duration() time.Duration { return span(r.Start, r.End) }

// CauseKind is the kind of what took Ready away, for metrics.
type CauseKind string

// Kinds of causes of a Recovery.
const (
	// CauseExit: a container's process ended by itself.
	CauseExit CauseKind = "exit"
	// CauseLivenessProbe, CauseStartupProbe, CausePostStart: the kubelet
	// killed a container for its probe or hook.
	CauseLivenessProbe CauseKind = "livenessProbe"
	CauseStartupProbe  CauseKind = "startupProbe"
	CausePostStart     CauseKind = "postStart"
	// CauseKilled: the kubelet stopped a container for another reason.
	CauseKilled CauseKind = "killed"
	// CauseReadiness: no container ended; a readiness probe failed.
	CauseReadiness CauseKind = "readiness"
)

// Bounds of what is kept of a pod after its start.
const (
	maxAfterEvents   = 32
	maxRecoveries    = 8
	maxAfterCalls    = 64
	maxAfterAttempts = 16
)

// afterState follows a pod after its start.
type afterState struct {
	pod      PodRef
	created  time.Time
	nodeUID  string
	ready    bool
	notReady time.Time // when Ready was last lost (observed)
	// regained: when Ready was observed again after notReady, its Recovery
	// not built yet: it waits for the node's facts up to then, which may
	// still be in a kernel ring buffer (Correlator.finishRecoveries).
	regained time.Time
	phase    corev1.PodPhase
	reason   string
	// ended: when the phase went Failed or Succeeded (zero before).
	ended    time.Time
	deleting bool
	// containers by name; names maps container ids to names.
	containers map[string]*afterContainer
	names      map[string]string
	order      []string // spec order
	// procs: container id -> its entrypoint, as the kernel saw it.
	procs map[string]*afterProc
	// calls: the kubelet's recent CRI calls for the pod (Create, Start,
	// Stop, ExecSync), the latest maxAfterCalls.
	calls    []*event.CRICall
	events   []AfterEvent
	omitted  int
	recs     []Recovery
	recsOmit int
	kubelet  kubeletEvents
	asOf     time.Time
}

type afterContainer struct {
	restarts int32
	id       string
	state    string
	message  string
	waiting  string
	// thresholds are the failureThresholds of its liveness and startup
	// probes (the kubelet kills after that many failures in a row).
	thresholds map[ProbeKind]int
}

// afterProc is a container's entrypoint: the first program exec'd in it
// that is not the runtime's.
type afterProc struct {
	pid        uint32
	exec, exit time.Time
	code       *int
	signal     int
	// stopped is when the kubelet's StopContainer call for it began, when
	// its exit came within that call: the kubelet killed it.
	stopped time.Time
}

// newAfter starts following p after its start, which tl tells.
func newAfter(p *podState, tl *Timeline) *afterState {
	a := &afterState{pod: tl.Pod, created: tl.Start, nodeUID: p.nodeUID, containers: map[string]*afterContainer{},
		names: map[string]string{}, procs: map[string]*afterProc{}, kubelet: p.events, asOf: tl.End}
	for _, e := range startOrder(p.pod) {
		a.order = append(a.order, e.name)
		a.containers[e.name] = &afterContainer{thresholds: map[ProbeKind]int{
			ProbeLiveness: failureThreshold(e, ProbeLiveness), ProbeStartup: failureThreshold(e, ProbeStartup)}}
	}
	for id, na := range p.names {
		a.names[id] = na.name
	}
	for _, c := range tl.Containers {
		if n := len(c.Attempts); n > 0 && a.containers[c.Name] != nil {
			a.containers[c.Name].id = c.Attempts[n-1].ContainerID
		}
	}
	// Every attempt's entrypoint the start saw, those after its end too
	// (a restart during the grace period): their exits are the pod's life.
	var exits []AfterEvent
	for _, id := range sortedKeys(p.procs) {
		name, ok := p.names[id]
		entry, _ := analyze(p.procs[id])
		if !ok || entry == nil {
			continue
		}
		a.procs[id] = &afterProc{pid: entry.pid, exec: entry.exec, exit: entry.exit, code: entry.exitCode, signal: entry.signal}
		if !entry.exit.IsZero() && entry.exit.After(tl.End) {
			exits = append(exits, AfterEvent{At: entry.exit, Container: name.name, What: exitWords(entry.exitCode, entry.signal), exitOf: id})
		}
	}
	slices.SortStableFunc(exits, func(x, y AfterEvent) int { return x.At.Compare(y.At) })
	for _, e := range exits {
		a.note(e.At, e.Container, e.What)
	}
	a.ready = tl.Outcome == OutcomeReady
	for _, c := range p.calls {
		a.stopped(c)
	}
	a.observePod(p.pod, tl.End, false)
	return a
}

// note keeps one thing that happened, within maxAfterEvents: the first
// quarter and the latest.
func (a *afterState) note(at time.Time, container, what string) {
	a.noteEvent(AfterEvent{At: at, Container: container, What: what})
}

func (a *afterState) noteEvent(e AfterEvent) {
	if len(a.events) >= maxAfterEvents {
		keep := maxAfterEvents / 4
		a.events = slices.Delete(a.events, keep, keep+1)
		a.omitted++
	}
	a.events = append(a.events, e)
}

// stopLag bounds how long after its StopContainer call returned an exit
// may come and still be the call's doing (the call waits for the exit;
// the kernel's and the uprobes' stamps differ by clockSlack).
const stopLag = time.Second

// stopped takes a StopContainer call of the kubelet: the entrypoint of its
// container that exited within it was killed, not the pod being deleted.
func (a *afterState) stopped(c *event.CRICall) {
	if c.Method != event.CRIStopContainer || c.Time.IsZero() || a.deleting {
		return
	}
	pr := a.procs[c.ContainerID]
	if pr == nil || !pr.stopped.IsZero() {
		return
	}
	if !pr.exit.IsZero() && (pr.exit.Before(c.Time.Add(-clockSlack)) || (!c.End.IsZero() && pr.exit.After(c.End.Add(stopLag)))) {
		return // it ended before the call, or long after
	}
	pr.stopped = c.Time
}

// killWords says how the kubelet killed container name's entrypoint pr
// (pr.stopped set): "killed by its livenessProbe (3 failures)" when its
// Killing Event names the probe, "killed after its postStart hook failed",
// else "killed by the kubelet"; and the kind.
func (a *afterState) killWords(name string, pr *afterProc) (string, CauseKind) {
	kind := a.kubelet.killing(name, pr.stopped.Add(-time.Second), latest(pr.exit, pr.stopped).Add(time.Second))
	ac := a.containers[name]
	switch kind {
	case ProbeLiveness, ProbeStartup:
		n := 3
		if ac != nil && ac.thresholds[kind] > 0 {
			n = ac.thresholds[kind]
		}
		return fmt.Sprintf("killed by its %sProbe (%d %s)", kind, n, plural(n, "failure", "failures")), CauseKind(kind + "Probe")
	case KilledPostStart:
		return "killed after its postStart hook failed", CausePostStart
	}
	return "killed by the kubelet", CauseKilled
}

// exitWords says how a process ended: "exited 3", "killed by signal 9".
func exitWords(code *int, signal int) string {
	switch {
	case signal != 0:
		return fmt.Sprintf("killed by signal %d", signal)
	case code != nil:
		return fmt.Sprintf("exited %d", *code)
	}
	return "exited"
}

// observe takes a pod update after the start; it returns the Recovery the
// update completes (a return to Ready still waiting for its facts, when
// Ready is lost again), nil otherwise. A return to Ready is built by
// finishRecovery.
func (a *afterState) observe(e *event.PodUpdate) *Recovery {
	if e.Pod == nil {
		return nil
	}
	a.asOf = latest(a.asOf, e.Time)
	return a.observePod(e.Pod, e.Time, e.Action == event.PodDeleted)
}

func (a *afterState) observePod(pod *corev1.Pod, at time.Time, deleted bool) *Recovery {
	if deleted || pod.DeletionTimestamp != nil {
		if !a.deleting {
			a.note(at, "", "deleted")
		}
		a.deleting = true
	}
	// The containers first: a return to Ready is measured on the attempt
	// the same update names.
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			a.observeContainer(&list[i], at)
		}
	}
	var rec *Recovery
	ready := conditionTrue(pod, corev1.PodReady)
	switch {
	case a.ready && !ready && !a.deleting:
		rec = a.finishRecovery() // the last one, with the facts in by now
		a.notReady = at
		a.note(at, "", "Ready lost")
	case !a.ready && ready && !a.notReady.IsZero():
		a.regained = at
	}
	a.ready = ready
	if pod.Status.Phase != a.phase {
		if a.phase != "" && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
			a.reason, a.ended = joinNonEmpty(": ", pod.Status.Reason, pod.Status.Message), at
			a.note(at, "", joinNonEmpty(": ", "phase "+string(pod.Status.Phase), a.reason))
		}
		a.phase = pod.Status.Phase
	}
	return rec
}

func (a *afterState) observeContainer(cs *corev1.ContainerStatus, at time.Time) {
	ac := a.containers[cs.Name]
	if ac == nil {
		return
	}
	if cs.ContainerID != "" {
		id := stripRuntime(cs.ContainerID)
		a.names[id] = cs.Name
		ac.id = id
	}
	if cs.RestartCount > ac.restarts {
		a.note(at, cs.Name, fmt.Sprintf("restarted (restart %d)", cs.RestartCount))
		ac.restarts = cs.RestartCount
	}
	switch st := cs.State; {
	case st.Waiting != nil:
		ac.state, ac.message = "waiting "+st.Waiting.Reason, st.Waiting.Message
		if st.Waiting.Reason != ac.waiting && !isDefaultWaiting(st.Waiting.Reason) {
			what := st.Waiting.Reason
			if m := backOffMessage.FindStringSubmatch(st.Waiting.Message); m != nil {
				what += " " + m[1]
			}
			a.note(at, cs.Name, what)
		}
		ac.waiting = st.Waiting.Reason
	case st.Running != nil:
		ac.state, ac.message, ac.waiting = "running", "", ""
	case st.Terminated != nil:
		state := fmt.Sprintf("exited %d", st.Terminated.ExitCode)
		if st.Terminated.Reason != "" && st.Terminated.Reason != "Error" && st.Terminated.Reason != "Completed" {
			state += " (" + st.Terminated.Reason + ")"
		}
		if state != ac.state && !a.exitNoted(cs.Name) {
			a.note(at, cs.Name, state)
		}
		ac.state, ac.message, ac.waiting = state, st.Terminated.Message, ""
	}
}

// exitNoted reports whether the container's latest exit is already noted
// from the kernel (its time is better than the API's).
func (a *afterState) exitNoted(name string) bool {
	ac := a.containers[name]
	if ac == nil {
		return false
	}
	pr := a.procs[ac.id]
	return pr != nil && !pr.exit.IsZero()
}

// record takes a node event of the pod after its start.
func (a *afterState) record(ev event.Event) {
	switch e := ev.(type) {
	case *event.CRICall:
		if e.Method.IsVolume() {
			return // a Secret's or configMap's volume set up again: nothing of the pod's life
		}
		if e.ContainerID != "" && e.ContainerName != "" {
			a.names[e.ContainerID] = e.ContainerName
		}
		a.stopped(e)
		a.calls = append(a.calls, e)
		if len(a.calls) > maxAfterCalls {
			a.calls = slices.Delete(a.calls, 0, len(a.calls)-maxAfterCalls)
		}
	case *event.ContainerInfo:
		if !e.Sandbox && e.ContainerName != "" {
			a.names[e.ContainerID] = e.ContainerName
		}
	case *event.ProcessExec:
		// The first program of a container the pod's start did not know:
		// a restart's entrypoint (the runtime names it later).
		if e.ContainerID == "" || a.procs[e.ContainerID] != nil || isRuntimeNoise(&procRecord{filename: e.Filename, argv: e.Argv}) {
			return
		}
		if len(a.procs) >= maxAfterAttempts*(len(a.order)+1) {
			a.forgetProcs()
		}
		a.procs[e.ContainerID] = &afterProc{pid: e.PID, exec: e.Time}
	case *event.ProcessExit:
		pr := a.procs[e.ContainerID]
		if pr == nil || pr.pid != e.PID || !pr.exit.IsZero() {
			return
		}
		pr.exit, pr.code, pr.signal = e.Time, exitCodeOf(e), e.Signal
		a.noteEvent(AfterEvent{At: e.Time, Container: a.names[e.ContainerID], What: exitWords(pr.code, pr.signal), exitOf: e.ContainerID})
	case *event.PodEvents:
		a.kubelet.take(e)
	}
	a.asOf = latest(a.asOf, ev.When())
}

// forgetProcs drops the entrypoints of containers that are no one's
// current attempt.
func (a *afterState) forgetProcs() {
	current := map[string]bool{}
	for _, ac := range a.containers {
		current[ac.id] = true
	}
	for id := range a.procs {
		if !current[id] {
			delete(a.procs, id)
		}
	}
}

// notReadySince is notReady while Ready is lost: zero once it is
// regained, its Recovery built or not.
func (a *afterState) notReadySince() time.Time {
	if !a.regained.IsZero() {
		return time.Time{}
	}
	return a.notReady
}

// finishRecovery builds the Recovery of the return to Ready observed last
// (regained), with the facts in now, keeps it and returns it; nil when
// none waits.
func (a *afterState) finishRecovery() *Recovery {
	if a.regained.IsZero() {
		return nil
	}
	r := a.recovery(a.regained)
	note := AfterEvent{At: a.regained, What: "Ready again after " + FormatDuration(r.Duration())}
	a.noteEvent(note)
	// In time: before what was noted while it waited.
	if n := len(a.events); n > 1 {
		if i := slices.IndexFunc(a.events[:n-1], func(e AfterEvent) bool { return e.At.After(note.At) }); i >= 0 {
			copy(a.events[i+1:], a.events[i:n-1])
			a.events[i] = note
		}
	}
	a.take(r)
	a.notReady, a.regained = time.Time{}, time.Time{}
	return &r
}

// recovery measures the way back to Ready, observed at regained: from the
// exit that took it away (or the loss as observed) through the back-off,
// the new attempt's calls and run, to the readiness the API reported.
func (a *afterState) recovery(regained time.Time) Recovery {
	r := Recovery{Pod: a.pod, Lost: a.notReady, Start: a.notReady, End: regained, Created: a.created}
	// The attempts that ended around the loss, and the new ones after it.
	var exit time.Time
	for id, pr := range a.procs {
		name := a.names[id]
		if pr.exit.IsZero() || pr.exit.After(a.notReady) || pr.exit.Before(a.notReady.Add(-maxLossLag)) {
			continue
		}
		if exit.IsZero() || pr.exit.Before(exit) {
			exit = pr.exit
			r.Cause, r.CauseKind = name+" "+exitWords(pr.code, pr.signal), CauseExit
			if !pr.stopped.IsZero() {
				words, kind := a.killWords(name, pr)
				r.Cause, r.CauseKind = name+" "+words+", restarted", kind
			}
		}
		if !slices.Contains(r.Containers, name) {
			r.Containers = append(r.Containers, name)
		}
	}
	if !exit.IsZero() {
		r.Start = exit
	}
	if r.Cause == "" {
		r.CauseKind = CauseReadiness
		if u, ok := a.kubelet.latest("*", reasonUnhealthy); ok {
			r.Cause = u.Message
		} else {
			r.Cause = "readiness lost"
		}
	}
	cp := &pathBuilder{end: regained}
	var ready time.Time
	for _, name := range r.Containers {
		var prevExit time.Time
		for id, pr := range a.procs {
			if a.names[id] == name && !pr.exit.IsZero() && !pr.exit.After(a.notReady) && pr.exit.After(prevExit) {
				prevExit = pr.exit
			}
		}
		id := a.containers[name].id
		var begin, started time.Time
		for _, c := range a.calls {
			if c.Time.Before(r.Start) || c.Time.After(regained) {
				continue
			}
			switch {
			case c.Method == event.CRICreateContainer && c.ContainerName == name:
				begin = earliest(begin, c.Time)
			case c.Method == event.CRIStartContainer && c.ContainerID == id:
				started = latest(started, c.End)
			case c.Method == event.CRIExecSync && c.ContainerID == id && !c.Err:
				ready = latest(ready, c.End) // the readiness probe's success
			}
		}
		pr := a.procs[id]
		cp.add(BackOffStepName, ShareBackOff, name, prevExit, begin)
		cp.add(ContainerStepName(KindMain, name), ShareCalls, name, begin, started)
		if pr != nil {
			cp.add(ContainerStepName(KindMain, name), ShareCalls, name, started, pr.exec)
			cp.add(ContainerStepName(KindMain, name), ShareRun, name, pr.exec, earlier(ready, regained))
		}
	}
	if len(r.Containers) == 0 {
		cp.add(ReadinessProbeStepName, ShareProbeFailing, "", r.Start, regained)
	}
	r.Steps = sequential(cp.steps, r.Start, regained)
	for _, name := range r.Containers {
		r.Restarts += int(a.containers[name].restarts)
	}
	tl := &Timeline{Start: r.Start, End: regained, Outcome: OutcomeReady, CriticalPath: r.Steps}
	r.Breakdown = BreakdownOf(tl)
	return r
}

// maxLossLag is how long before the API showed Ready lost the exit that
// took it away may be: the kubelet's PLEG relists every second, its status
// manager writes, the watch delivers.
const maxLossLag = 10 * time.Second

// take keeps a Recovery, the latest maxRecoveries.
func (a *afterState) take(r Recovery) {
	a.recs = append(a.recs, r)
	if len(a.recs) > maxRecoveries {
		a.recs = slices.Delete(a.recs, 0, 1)
		a.recsOmit++
	}
}

// after is what the pod's life after its start looks like now.
func (a *afterState) after() *After {
	reason := a.reason
	if reason == "" && !a.ended.IsZero() {
		reason = a.kubelet.disruption() // an eviction the status does not say
	}
	out := &After{AsOf: a.asOf, Ready: a.ready, NotReadySince: a.notReadySince(), Phase: string(a.phase), PhaseReason: reason,
		Events: slices.Clone(a.events), EventsOmitted: a.omitted, Recoveries: slices.Clone(a.recs), RecoveriesOmitted: a.recsOmit}
	// An exit the kubelet caused is told by its action, not by the
	// status a graceful app exits with.
	for i, e := range out.Events {
		if pr := a.procs[e.exitOf]; pr != nil && !pr.stopped.IsZero() {
			out.Events[i].What, _ = a.killWords(e.Container, pr)
		}
	}
	slices.SortStableFunc(out.Events, func(x, y AfterEvent) int { return x.At.Compare(y.At) })
	for _, name := range a.order {
		ac := a.containers[name]
		out.Containers = append(out.Containers, AfterContainer{Name: name, Restarts: ac.restarts, State: ac.state, Message: ac.message})
	}
	return out
}

// Summary says in a line what happened after the start, from created:
// "then: app exited 3 at +4.0s; restarted 5 times, CrashLoopBackOff; not
// Ready since +4.1s"; "" when nothing did.
func (af *After) Summary(created time.Time) string {
	if af == nil {
		return ""
	}
	var parts []string
	off := func(t time.Time) string { return "+" + FormatDuration(t.Sub(created)) }
	for _, e := range af.Events {
		if strings.HasPrefix(e.What, "exited") || strings.HasPrefix(e.What, "killed") {
			parts = append(parts, fmt.Sprintf("%s %s at %s", e.Container, e.What, off(e.At)))
			break // the first exit; the rest are counted below
		}
	}
	for _, c := range af.Containers {
		var s []string
		if c.Restarts > 0 {
			s = append(s, "restarted "+times(int(c.Restarts)))
		}
		if st, ok := strings.CutPrefix(c.State, "waiting "); ok {
			s = append(s, st)
		}
		if len(s) > 0 {
			parts = append(parts, c.Name+" "+strings.Join(s, ", "))
		}
	}
	if n := len(af.Recoveries); n > 0 {
		r := af.Recoveries[n-1]
		parts = append(parts, fmt.Sprintf("Ready again %s, the last after %s", times(n+af.RecoveriesOmitted), FormatDuration(r.Duration())))
	}
	switch {
	case af.Phase == string(corev1.PodFailed) || af.Phase == string(corev1.PodSucceeded):
		parts = append(parts, joinNonEmpty(": ", "phase "+af.Phase, af.PhaseReason))
	case !af.Ready && !af.NotReadySince.IsZero():
		parts = append(parts, "not Ready since "+off(af.NotReadySince))
	}
	if len(parts) == 0 {
		return ""
	}
	return "then: " + strings.Join(parts, "; ")
}

// After returns what happened to the pod with this UID after its start
// ended here (Ready), as of now; ok is false for a pod whose start is in
// progress, was not traced here, or is forgotten.
func (c *Correlator) After(uid string) (*After, bool) {
	ep, ok := c.ended[c.resolve(uid)]
	if !ok || ep.after == nil {
		return nil, false
	}
	af := ep.after.after()
	af.AsOf = latest(af.AsOf, c.clock.now)
	c.clock.toCurrent(af)
	return af, true
}

// TakeRecoveries returns the returns to Ready after a loss completed since
// the last call, in order, and forgets them: the caller exports them (a
// span in the pod's trace, a histogram).
func (c *Correlator) TakeRecoveries() []Recovery {
	out := c.recoveries
	c.recoveries = nil
	for i := range out {
		c.clock.toCurrent(&out[i])
	}
	return out
}
