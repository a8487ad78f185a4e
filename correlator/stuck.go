package correlator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// This file says why a pod start did not reach Ready: the reason of a
// Failed pod, of a deleted one, and what holds one that timed out.

// failureReason explains a Failed pod from its status. A reason the kubelet
// wrote into the status wins over the containers' exit codes: when the
// kubelet fails a pod itself it kills the containers (exit 137), and the
// kill is the effect, not the cause. It sets status.reason and message for
// activeDeadlineSeconds (active_deadline.go: DeadlineExceeded), eviction
// (eviction/eviction_manager.go evictPod: Evicted), preemption of a pod for
// a critical one (preemption/preemption.go: Preempting) and node shutdown
// (nodeshutdown/nodeshutdown_manager.go killPods: Terminated), the last
// three with a True DisruptionTarget condition; a DisruptionTarget set by
// someone else (the eviction API, the taint manager, the scheduler) may
// come without a status reason.
func failureReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" {
		return joinNonEmpty(": ", pod.Status.Reason, pod.Status.Message)
	}
	if d := disruption(pod); d != "" {
		return d
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			msg := fmt.Sprintf("%s exited with code %d", ContainerLabel(kindOf(pod, cs.Name), cs.Name), t.ExitCode)
			if t.Reason != "" && t.Reason != "Error" {
				msg += " (" + t.Reason + ")"
			}
			return msg
		}
	}
	if pod.Status.Message != "" {
		return pod.Status.Message
	}
	return "pod failed"
}

// deletedReason explains a pod deleted before it was Ready, with the
// disruption that deleted it when one was recorded (the scheduler's
// preemption, the eviction API and the taint manager set DisruptionTarget
// before they delete).
func deletedReason(pod *corev1.Pod) string {
	return joinNonEmpty(": ", "pod deleted before it was Ready", disruption(pod))
}

// disruption describes a True DisruptionTarget condition, "" without one:
// "DisruptionTarget TerminationByKubelet: The node was low on resource: memory. ...".
func disruption(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return joinNonEmpty(": ", joinNonEmpty(" ", string(c.Type), c.Reason), c.Message)
		}
	}
	return ""
}

// stuckDetail says what holds a pod start that has not reached Ready, from
// the pod's latest status, the calls seen so far, the kubelet's Events and
// the start's timeline tl as derived: the volumes the wait before the
// sandbox waits on, a sandbox that could not be created (with the
// runtime's error), then, in start order, the init container that holds
// the ones after it, each sidecar and main container that is not ready
// (with the kubelet's kills), and the readiness gates not True. Parts are
// joined with "; ".
func (p *podState) stuckDetail(tl *Timeline) string {
	pod := p.pod
	if unscheduled(pod) {
		return p.schedulingDetail(tl)
	}
	var parts []string
	if tl.Sandbox == nil {
		if v := p.events.volumeWait(); v != "" {
			parts = append(parts, v)
		}
		parts = append(parts, unsetClaims(pod, tl)...)
	}
	if s := p.sandboxFailures(); s != "" {
		parts = append(parts, joinNonEmpty(": ", s, p.events.sandboxError()))
	}
	statuses := make(map[string]*corev1.ContainerStatus)
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			statuses[list[i].Name] = &list[i]
		}
	}
	initialized := conditionTrue(pod, corev1.PodInitialized)
	if len(statuses) > 0 {
	order:
		for _, e := range startOrder(pod) {
			cs := statuses[e.name]
			switch e.kind {
			case KindInit:
				// The next container starts once this one exited 0
				// (kubelet_pods.go convertToAPIContainerStatuses skips such
				// an init container; kuberuntime computeInitContainerActions
				// moves on). Initialized True: a status lost to a restart
				// of the kubelet does not hold anything.
				if initialized || (cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0) {
					continue
				}
				parts = append(parts, p.describeContainer(e, cs, tl))
				break order
			case KindSidecar:
				// A sidecar lets the next container start once started,
				// and counts for ContainersReady (status/generate.go
				// GenerateContainersReadyCondition).
				if cs != nil && cs.Started != nil && *cs.Started {
					if !cs.Ready {
						parts = append(parts, p.describeContainer(e, cs, tl))
					}
					continue
				}
				parts = append(parts, p.describeContainer(e, cs, tl))
				if !initialized {
					break order
				}
			case KindMain:
				if cs == nil || !cs.Ready {
					parts = append(parts, p.describeContainer(e, cs, tl))
				}
			}
		}
	}
	for _, g := range pod.Spec.ReadinessGates {
		if !conditionTrue(pod, g.ConditionType) {
			parts = append(parts, fmt.Sprintf("readiness gate %s not True", g.ConditionType))
		}
	}
	return strings.Join(parts, "; ")
}

// sandboxFailures is "RunPodSandbox failed 3 times" when the pod's
// RunPodSandbox calls since its latest sandbox was made all failed (or
// there was none: the runtime reported no sandbox and no call succeeded).
// A sandbox that died and could not be replaced holds the start as one
// never made does. These are the failed calls of the timeline's Sandbox
// when it was not made.
func (p *podState) sandboxFailures() string {
	var made time.Time // the latest sandbox made: its call, or the runtime's word
	for _, c := range p.calls {
		if c.Method == event.CRIRunPodSandbox && c.PodUID == p.nodeUID && !c.Err && c.Time.After(made) {
			made = c.Time
		}
	}
	for _, rt := range p.runtime {
		if rt.Sandbox && rt.CreatedAt.After(made) {
			made = rt.CreatedAt
		}
	}
	failed := 0
	for _, c := range p.calls {
		if c.Method == event.CRIRunPodSandbox && c.PodUID == p.nodeUID && c.Err && (made.IsZero() || c.Time.After(made)) {
			failed++
		}
	}
	switch failed {
	case 0:
		return ""
	case 1:
		return "RunPodSandbox failed once"
	}
	return fmt.Sprintf("RunPodSandbox failed %d times", failed)
}

// describeContainer is describeContainer with, for a container held by
// its image pull, the failed pulls of its image seen since it was last
// pulled: "app: ImagePullBackOff after 3 failed pulls of nginx:nope
// (Back-off pulling image ...)"; for one the kubelet killed for its probe
// or hook, the kills: "app: killed 4 times after its startupProbe failed
// 3 times in a row; CrashLoopBackOff 20s".
func (p *podState) describeContainer(e specEntry, cs *corev1.ContainerStatus, tl *Timeline) string {
	if s := p.describeProbeHold(e, cs, tl); s != "" {
		return s
	}
	if s := describeKills(e, cs, tl); s != "" {
		return s
	}
	if cs == nil || cs.State.Waiting == nil || !isPullReason(cs.State.Waiting.Reason) {
		return describeContainer(e, cs, "")
	}
	// The failures since the image's latest successful pull: those before
	// it no longer hold the container (it got its image once).
	var pulled time.Time
	for _, c := range p.calls {
		if c.Method == event.CRIPullImage && !c.Err && c.PodUID == p.nodeUID && sameImage(e.spec.Image, c.Image) && c.End.After(pulled) {
			pulled = c.End
		}
	}
	failed := 0
	for _, c := range p.calls {
		if c.Method == event.CRIPullImage && c.Err && c.PodUID == p.nodeUID && sameImage(e.spec.Image, c.Image) && c.End.After(pulled) {
			failed++
		}
	}
	if failed == 0 {
		return describeContainer(e, cs, "")
	}
	return describeContainer(e, cs, fmt.Sprintf("after %d failed %s of %s", failed, plural(failed, "pull", "pulls"), defaultTagged(e.spec.Image)))
}

// describeContainer is "app: CrashLoopBackOff (back-off 40s restarting
// failed container=app ...), last exit 3", "init wait: running",
// "sidecar proxy: running, not ready"; detail, when given, follows a
// waiting reason, before its message.
func describeContainer(e specEntry, cs *corev1.ContainerStatus, detail string) string {
	name := containerLabel(e)
	if cs == nil {
		return name + ": no status"
	}
	var state string
	switch st := cs.State; {
	case st.Waiting != nil:
		state = st.Waiting.Reason
		if state == "" {
			state = "waiting"
		}
		if detail != "" {
			state += " " + detail
		}
		if st.Waiting.Message != "" {
			state += " (" + st.Waiting.Message + ")"
		}
	case st.Running != nil:
		switch {
		case e.kind == KindInit:
			state = "running"
		case cs.Started == nil || !*cs.Started:
			state = "running, not started" // its startupProbe has not succeeded
		default:
			state = "running, not ready"
		}
	case st.Terminated != nil:
		state = "exited with code " + exitDetail(st.Terminated)
	default:
		state = "no state"
	}
	if t := cs.LastTerminationState.Terminated; t != nil && cs.State.Terminated == nil {
		state += ", last exit " + exitDetail(t)
	}
	return name + ": " + state
}

// exitDetail is "3", or "137 (OOMKilled)" when the reason says more than
// Error or Completed.
func exitDetail(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprint(t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		s += " (" + t.Reason + ")"
	}
	return s
}

func conditionTrue(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// joinNonEmpty joins the non-empty parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

// inFlightWorth is how long a call must have run before a start is said
// to wait on it: the kubelet's calls take milliseconds when all is well.
const inFlightWorth = time.Second

// waitingOn says what a start in progress (tl, a Snapshot's) waits on now:
// the kubelet's calls that have run long and not returned, then what the
// pod's status and the kubelet's events say holds it (stuckDetail); when
// neither says anything, the step it is at.
func (p *podState) waitingOn(tl *Timeline) string {
	var parts []string
	for _, f := range tl.InFlight {
		if ran := tl.AsOf.Sub(f.Start); ran >= inFlightWorth {
			parts = append(parts, f.describe(ran, tl.AsOf))
		}
	}
	if s := p.stuckDetail(tl); s != "" {
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		parts = append(parts, stepOf(tl))
	}
	return strings.Join(parts, "; ")
}

// describe is "PullImage nginx:1.27 for app: running for 4.2s, not
// returned yet", and for a pull its wait behind other pods' pulls
// ("(waited 3.1s behind 2 pulls)") and how far it came as of asOf:
// "112/270 MB, 4 of 7 layers, 18 MB/s", or "no bytes for 45s".
func (f InFlightCall) describe(ran time.Duration, asOf time.Time) string {
	if f.isVolumeCall() {
		return f.describeVolumeCall(ran)
	}
	s := f.Method.Short()
	if f.Image != "" {
		s += " " + f.Image
	}
	if f.Container != "" {
		s += " for " + f.Container
	}
	if q := f.QueuedText(); q != "" {
		s += " (" + q + ")"
	}
	s += ": running for " + FormatDuration(ran) + ", not returned yet"
	if p := f.ProgressText(asOf); p != "" {
		s += ", " + p
	}
	return s
}

// QueuedText is "waited 3.1s behind 2 pulls" for a pull that waited in
// the kubelet's serialized puller before its call, "" otherwise.
func (f InFlightCall) QueuedText() string {
	if f.Queued == nil {
		return ""
	}
	return fmt.Sprintf("waited %s behind %d %s", FormatDuration(f.Queued.Duration()), f.Queued.Behind, plural(f.Queued.Behind, "pull", "pulls"))
}

// ProgressText says how far a pull in flight has come as of asOf
// ("112/270 MB, 4 of 7 layers, 18 MB/s", "no bytes for 45s"), "" when
// unknown.
func (f InFlightCall) ProgressText(asOf time.Time) string {
	return pullProgress(f.Progress, f.Start, asOf)
}

// stalledPull is how long a pull may go without a byte before it is said
// to have none.
const stalledPull = 10 * time.Second

// pullProgress says how far a pull begun at start has come, as of asOf.
func pullProgress(p *event.PullProgress, start, asOf time.Time) string {
	if p == nil {
		return ""
	}
	last := p.LastByte
	if last.IsZero() {
		last = start
	}
	if idle := asOf.Sub(last); idle >= stalledPull {
		if p.LastByte.IsZero() {
			return "no bytes for " + FormatDuration(idle)
		}
		return fmtBytes(p.Bytes) + " so far, no bytes for " + FormatDuration(idle)
	}
	var parts []string
	switch {
	case p.Total > 0:
		parts = append(parts, fmtBytesOf(p.Bytes, p.Total))
	case p.Bytes > 0:
		parts = append(parts, fmtBytes(p.Bytes))
	}
	if p.Layers > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d layers", p.LayersDone, p.Layers))
	} else if p.InProgress == 1 {
		parts = append(parts, "1 layer in progress")
	} else if p.InProgress > 1 {
		parts = append(parts, fmt.Sprintf("%d layers in progress", p.InProgress))
	}
	if secs := asOf.Sub(start).Seconds(); secs > 0 && p.Bytes > 0 {
		parts = append(parts, fmtBytes(int64(float64(p.Bytes)/secs))+"/s")
	}
	return strings.Join(parts, ", ")
}

// fmtBytes is n in the unit a pull's size reads best in: kB, MB or GB
// (decimal, as registries and crictl print them).
func fmtBytes(n int64) string {
	v, unit := inUnit(n, n)
	return v + " " + unit
}

// fmtBytesOf is "112/270 MB": n of total, in total's unit.
func fmtBytesOf(n, total int64) string {
	v, unit := inUnit(n, total)
	t, _ := inUnit(total, total)
	return v + "/" + t + " " + unit
}

// inUnit is n in the unit that suits scale.
func inUnit(n, scale int64) (string, string) {
	switch {
	case scale < 1e6:
		return strconv.FormatInt(n/1000, 10), "kB"
	case scale < 1e9:
		return strconv.FormatInt(n/1e6, 10), "MB"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64), "GB"
}

// stepOf names the step a start in progress is at, from its timeline,
// when nothing says more: the last of the kubelet's steps that began.
func stepOf(tl *Timeline) string {
	switch {
	case tl.Sandbox == nil:
		return "the kubelet has not asked for the pod's sandbox yet (admission, volumes)"
	case tl.Sandbox.ID == "" && len(tl.Sandbox.FailedCalls) > 0:
		return "the sandbox: every RunPodSandbox call so far failed"
	}
	for i := len(tl.Containers) - 1; i >= 0; i-- {
		c := &tl.Containers[i]
		if len(c.Attempts) == 0 {
			continue
		}
		a := &c.Attempts[len(c.Attempts)-1]
		name := containerLabel(specEntry{name: c.Name, kind: c.Kind})
		switch {
		case a.Finished.IsZero() && (a.Process == nil || a.Process.Exit.IsZero()):
			return name + ": running"
		default:
			return name + ": exited"
		}
	}
	return "the sandbox is ready; no container created yet"
}

// backOffMessage finds the length of a crash-loop back-off in its waiting
// message (kuberuntime_manager.go doBackOff: "back-off 20s restarting
// failed container=app pod=...").
var backOffMessage = regexp.MustCompile(`back-off (\S+) restarting`)

// describeProbeHold describes a container that runs and is not started
// (or not ready) while its startup (or readiness) probe fails, in the
// kubelet's words: "web: readinessProbe failing ×104: HTTP probe failed
// with statuscode: 404", and the kills before this attempt if any ("...;
// killed once after its startupProbe failed 100 times in a row"); "" when
// it does not run, or its probe is not failing.
func (p *podState) describeProbeHold(e specEntry, cs *corev1.ContainerStatus, tl *Timeline) string {
	if cs == nil || cs.State.Running == nil || e.kind == KindInit {
		return ""
	}
	kind := ProbeReadiness
	if cs.Started == nil || !*cs.Started {
		kind = ProbeStartup
	}
	c := containerIn(tl, e.name)
	hold := p.probeFailing(e, c, kind)
	if hold == "" {
		return ""
	}
	s := containerLabel(e) + ": " + hold
	if t := cs.LastTerminationState.Terminated; t != nil {
		s += ", last exit " + exitDetail(t)
	}
	if k := killsOf(e, c); k != "" {
		s += "; " + k
	}
	return s
}

// containerIn is container name of tl, nil when it has none.
func containerIn(tl *Timeline, name string) *Container {
	for i := range tl.Containers {
		if tl.Containers[i].Name == name {
			return &tl.Containers[i]
		}
	}
	return nil
}

// containerLabel is how a sentence of what a start waits on names
// container e: a main container bare ("app"), the others by their
// ContainerLabel ("init wait", "sidecar proxy"), as the waterfall's rows.
func containerLabel(e specEntry) string {
	if e.kind == KindMain {
		return e.name
	}
	return ContainerLabel(e.kind, e.name)
}

// killsOf says how the kubelet killed c's attempts for a probe or hook:
// "killed 4 times after its startupProbe failed 3 times in a row" ("" when
// none was). Only attempts that ended count (killedBy).
func killsOf(e specEntry, c *Container) string {
	if c == nil {
		return ""
	}
	var kind ProbeKind
	kills := 0
	for _, a := range c.Attempts {
		if a.KilledBy != "" {
			kind = a.KilledBy
			kills++
		}
	}
	if kills == 0 {
		return ""
	}
	s := fmt.Sprintf("killed %s after its ", times(kills))
	if kind == KilledPostStart {
		return s + "postStart hook failed"
	}
	return s + fmt.Sprintf("%sProbe failed %s in a row", kind, times(failureThreshold(e, kind)))
}

// describeKills describes a container the kubelet killed for its probe or
// hook, from its attempts in tl: "app: killed 4 times after its
// startupProbe failed 3 times in a row; CrashLoopBackOff 20s" ("" when no
// attempt of it that ended was killed).
func describeKills(e specEntry, cs *corev1.ContainerStatus, tl *Timeline) string {
	k := killsOf(e, containerIn(tl, e.name))
	if k == "" {
		return ""
	}
	s := containerLabel(e) + ": " + k
	if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
		s += "; " + cs.State.Waiting.Reason
		if m := backOffMessage.FindStringSubmatch(cs.State.Waiting.Message); m != nil {
			s += " " + m[1]
		}
	}
	return s
}

// failureThreshold is the failureThreshold of the container's probe of
// kind (3 by default).
func failureThreshold(e specEntry, kind ProbeKind) int {
	for _, ps := range probesOf(e.spec) {
		if ps.kind == kind && ps.probe.FailureThreshold > 0 {
			return int(ps.probe.FailureThreshold)
		}
	}
	return 3
}

// failedBecause is the reason of a start that failed, from the pod's status
// (reason, the reason it was given when it failed) and what only the
// kubelet's actions and Events tell: an eviction or preemption whose pod
// status says nothing (a pod that exits 0 on SIGTERM completes:
// "Evicted: ...; pod completed without becoming Ready"), a container the
// kubelet killed for its probe or hook (its exit code, 0 or 143, is the
// kill's effect, not the cause).
func (d *derivation) failedBecause(tl *Timeline, reason string) string {
	if d.p.pod.Status.Reason != "" {
		return reason // the kubelet said it in the status
	}
	if dis := d.p.events.disruption(); dis != "" {
		return joinNonEmpty("; ", dis, reason)
	}
	for _, v := range d.views {
		atts := v.out.Attempts
		if len(atts) == 0 || atts[len(atts)-1].KilledBy == "" {
			continue
		}
		if s := describeKills(v.entry, nil, tl); s != "" {
			return s
		}
	}
	if s := d.p.events.stoppedUnsaid(d.p.pod); s != "" {
		return joinNonEmpty("; ", s, reason)
	}
	return reason
}
