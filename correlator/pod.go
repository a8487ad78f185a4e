package correlator

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// podState holds the facts gathered about one pod start. Facts are kept
// raw and the timeline is derived only when the start completes, so the
// order in which the sources' events arrive does not matter.
type podState struct {
	uid string
	// nodeUID is the UID the pod's node facts carry: uid, or for a static
	// pod the kubelet's config hash (static.go).
	nodeUID string
	pod     *corev1.Pod // latest seen
	// firstPod is the first API object seen, firstSeen when; nodeSight is
	// when the first node fact was seen (sight.go).
	firstPod  *corev1.Pod
	firstSeen time.Time
	nodeSight time.Time
	observed  bool // an API update was taken
	// since and doneStamp are firstSeen and doneAt on the correlator's
	// clock, which timeouts and grace periods are measured on (clock.go).
	since, doneStamp time.Time
	// doneSeen is when the update that gave the outcome was seen, on the
	// base frame: what the kernel sources must have drained past (drained.go).
	doneSeen time.Time

	outcome Outcome
	doneAt  time.Time
	reason  string
	// deletedAt: when the watch reported the pod's deletion; deleting:
	// when it first showed a deletionTimestamp (the kubelet then stops
	// every container: no kill after it is a probe's or a hook's).
	deletedAt, deleting time.Time
	// reportedAt: when the start, still in progress, was reported at its
	// deadline (Config.Timeout); zero before.
	reportedAt time.Time

	conds map[corev1.PodConditionType]condFact
	// waiting: container name -> the waiting reasons the API showed.
	waiting map[string]*waitingFacts
	// status: what the API said of each container id, first times.
	status map[string]*statusFact
	// names: container id -> name and attempt, from the runtime or the API.
	names map[string]nameAttempt
	// runtime: container or sandbox id -> the runtime's latest word.
	runtime map[string]*event.ContainerInfo
	procs   map[string]*containerProcs // container id -> its processes
	calls   []*event.CRICall           // the kubelet's CRI calls for the pod
	conns   []*event.TCPConnection     // the kubelet's TCP connections to the pod
	// cni: the CNI plugins a derivation put in each sandbox (by cniKey),
	// for the derivations after the correlator's buffer forgot them (a
	// start reported at its deadline and Ready later).
	cni map[string][]*procRecord

	nprocs, maxProcs int
	// facts counts the updates and node events taken (Timeline.Facts).
	facts int
	// events: what the pod's Events said (kubelet_events.go).
	events kubeletEvents
	// budget: what it holds of MaxFactBytes, and lost to it (budget.go).
	budget podBudget
}

// condFact is a condition's last rise to True within the start: a
// condition that went True, False and True again (a sandbox recreated, a
// sidecar restarted) is reported by the rise that held, and its cause is
// looked for before that rise.
type condFact struct {
	observed, lastTransition time.Time
	// atFirstSight: already True in the first API object seen.
	atFirstSight bool
	// earlier are the observations of the rises that did not hold.
	earlier []time.Time
	up      bool // True in the latest update
}

type nameAttempt struct {
	name    string
	attempt int
}

// waitingFacts: the waiting reasons of one container, in order (see
// WaitingReason for what merges).
type waitingFacts struct {
	list    []WaitingReason
	omitted int
	// waiting: the latest observation showed the last reason of list.
	waiting bool
}

// maxWaitingReasons bounds the waiting reasons kept per container: a crash
// loop alternating with another reason for hours is cut in the middle.
const maxWaitingReasons = 32

// observe takes one observation of the container's state.
func (w *waitingFacts) observe(st *corev1.ContainerStateWaiting, at time.Time) {
	if st == nil || isDefaultWaiting(st.Reason) {
		w.waiting = false
		return
	}
	if n := len(w.list); n > 0 && w.list[n-1].Reason == st.Reason {
		last := &w.list[n-1]
		last.Last = at
		if st.Message != "" {
			last.Message = st.Message
		}
		if !w.waiting {
			last.Times++
		}
		w.waiting = true
		return
	}
	if len(w.list) >= maxWaitingReasons {
		// Keep the first half and the latest: drop the oldest of the rest.
		mid := maxWaitingReasons / 2
		w.list = append(w.list[:mid], w.list[mid+1:]...)
		w.omitted++
	}
	w.list = append(w.list, WaitingReason{Reason: st.Reason, Message: st.Message, First: at, Last: at, Times: 1})
	w.waiting = true
}

// isDefaultWaiting: the reasons the kubelet gives every container it has
// not created yet (kubelet_pods.go convertToAPIContainerStatuses,
// defaultWaitingState); any other reason comes from a failed step of the
// container's start (the reason cache: images.ErrImagePull,
// kuberuntime.ErrCreateContainerConfig, container.ErrCrashLoopBackOff, ...).
func isDefaultWaiting(reason string) bool {
	return reason == "" || reason == "ContainerCreating" || reason == "PodInitializing"
}

// statusFact: first observations of one container's status in the API.
type statusFact struct {
	running, started, ready, terminated time.Time
	exitCode                            *int
	reason                              string // terminated reason
	// startedAt is State.Running.StartedAt as the status reports it (1 s,
	// status_manager.go normalizeStatus): what the kubelet's probe workers
	// measure initialDelaySeconds from.
	startedAt time.Time
}

// procRecord is one process as the kernel reported it.
type procRecord struct {
	pid, ppid uint32
	fork      time.Time // zero when only exec was seen
	exec      time.Time // first exec
	filename  string
	argv      []string
	truncated bool
	exit      time.Time
	exitCode  *int
	signal    int
	// CNI plugins only: the sandbox and command from their environment.
	cniContainerID, cniCommand string
}

func (r *procRecord) first() time.Time {
	if !r.fork.IsZero() {
		return r.fork
	}
	return r.exec
}

type containerProcs struct {
	list  []*procRecord
	byPID map[uint32]*procRecord // the latest process with that pid
}

// newPodState starts the facts of pod e.Pod, whose node facts carry nodeUID.
func newPodState(e *event.PodUpdate, nodeUID string, maxProcs int) *podState {
	return &podState{
		uid:       string(e.Pod.UID),
		nodeUID:   nodeUID,
		pod:       e.Pod,
		firstPod:  e.Pod,
		firstSeen: e.Time,
		conds:     make(map[corev1.PodConditionType]condFact),
		waiting:   make(map[string]*waitingFacts),
		status:    make(map[string]*statusFact),
		names:     make(map[string]nameAttempt),
		runtime:   make(map[string]*event.ContainerInfo),
		procs:     make(map[string]*containerProcs),
		maxProcs:  maxProcs,
	}
}

func (p *podState) finish(o Outcome, at time.Time, reason string) {
	if p.outcome != "" {
		return
	}
	p.outcome, p.doneAt, p.reason = o, at, reason
}

// stripRuntime removes the "<runtime>://" prefix of a status containerID.
func stripRuntime(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// observe takes a pod update from the API server.
func (p *podState) observe(e *event.PodUpdate) {
	p.facts++
	pod := e.Pod
	p.pod = pod
	defer func() { p.observed = true }()
	for _, c := range pod.Status.Conditions {
		f, seen := p.conds[c.Type]
		switch {
		case c.Status != corev1.ConditionTrue:
			if seen {
				f.up = false
				p.conds[c.Type] = f
			}
		case !seen && p.outcome == "":
			p.conds[c.Type] = condFact{observed: e.Time, lastTransition: c.LastTransitionTime.Time, up: true, atFirstSight: !p.observed}
		case !f.up && p.outcome == "": // a new rise; after the outcome the start is over
			f.earlier = append(f.earlier, f.observed)
			f.observed, f.lastTransition, f.up = e.Time, c.LastTransitionTime.Time, true
			p.conds[c.Type] = f
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			p.observeContainer(&list[i], e.Time)
		}
	}

	switch {
	case e.Action == event.PodDeleted:
		p.deletedAt = e.Time
		p.deleting = earliest(p.deleting, e.Time)
		p.finish(OutcomeDeleted, e.Time, deletedReason(pod))
	case pod.DeletionTimestamp != nil:
		p.deleting = earliest(p.deleting, e.Time)
		p.finish(OutcomeDeleted, e.Time, deletedReason(pod))
	case pod.Status.Phase == corev1.PodFailed:
		p.finish(OutcomeFailed, e.Time, failureReason(pod))
	case pod.Status.Phase == corev1.PodSucceeded:
		p.finish(OutcomeFailed, e.Time, "pod completed without becoming Ready")
	default:
		if _, ready := p.conds[corev1.PodReady]; ready {
			p.finish(OutcomeReady, e.Time, "")
		}
	}
}

func (p *podState) observeContainer(cs *corev1.ContainerStatus, at time.Time) {
	w := p.waiting[cs.Name]
	if w == nil {
		w = &waitingFacts{}
		p.waiting[cs.Name] = w
	}
	w.observe(cs.State.Waiting, at)
	if last := cs.LastTerminationState.Terminated; last != nil && last.ContainerID != "" {
		id := stripRuntime(last.ContainerID)
		if _, ok := p.names[id]; !ok {
			p.names[id] = nameAttempt{name: cs.Name, attempt: -1} // attempt unknown: older
		}
		p.noteTerminated(id, at, int(last.ExitCode), last.Reason)
	}
	if cs.ContainerID == "" {
		return
	}
	id := stripRuntime(cs.ContainerID)
	if na, ok := p.names[id]; !ok || na.attempt < 0 {
		p.names[id] = nameAttempt{name: cs.Name, attempt: int(cs.RestartCount)}
	}
	f := p.statusOf(id)
	if cs.State.Running != nil && f.running.IsZero() {
		f.running = at
	}
	if cs.State.Running != nil && f.startedAt.IsZero() {
		f.startedAt = cs.State.Running.StartedAt.Time
	}
	if cs.Started != nil && *cs.Started && f.started.IsZero() {
		f.started = at
	}
	if cs.Ready && f.ready.IsZero() {
		f.ready = at
	}
	if t := cs.State.Terminated; t != nil {
		p.noteTerminated(id, at, int(t.ExitCode), t.Reason)
	}
}

func (p *podState) statusOf(id string) *statusFact {
	f := p.status[id]
	if f == nil {
		f = &statusFact{}
		p.status[id] = f
	}
	return f
}

func (p *podState) noteTerminated(id string, at time.Time, code int, reason string) {
	f := p.statusOf(id)
	if f.terminated.IsZero() {
		f.terminated = at
		f.exitCode = &code
	}
	if f.reason == "" {
		f.reason = reason
	}
}

// deletingSince is when the pod was first seen being deleted; zero when
// it was not.
func (p *podState) deletingSince() time.Time { return p.deleting }

// record takes a node event (runtime or kernel) for this pod. It returns 1
// when the event was dropped by the per-pod bound.
func (p *podState) record(ev event.Event) uint64 {
	p.facts++
	p.nodeSight = earliest(p.nodeSight, sightOf(ev))
	switch e := ev.(type) {
	case *event.ContainerInfo:
		p.recordRuntime(e)
	case *event.PodEvents:
		p.events.take(e)
	case *event.CRICall:
		if !p.room() {
			return 1
		}
		p.calls = append(p.calls, e)
	case *event.TCPConnection:
		if !p.room() {
			return 1
		}
		p.conns = append(p.conns, e)
	case *event.ProcessFork:
		if !p.room() {
			return 1
		}
		r := &procRecord{pid: e.PID, ppid: e.PPID, fork: e.Time}
		p.addProc(e.ContainerID, r)
	case *event.ProcessExec:
		cp := p.procsOf(e.ContainerID)
		r := cp.byPID[e.PID]
		if r == nil || !r.exit.IsZero() { // unknown, or the pid was reused
			if !p.room() {
				return 1
			}
			r = &procRecord{pid: e.PID, ppid: e.PPID}
			p.addProc(e.ContainerID, r)
		}
		if r.exec.IsZero() { // keep the first program: the command the container was given
			r.exec, r.filename, r.argv, r.truncated = e.Time, e.Filename, e.Argv, e.ArgvTruncated
			if r.fork.IsZero() { // the parent at fork time is the one that counts
				r.ppid = e.PPID
			}
		}
	case *event.ProcessExit:
		cp := p.procsOf(e.ContainerID)
		r := cp.byPID[e.PID]
		if r == nil || !r.exit.IsZero() {
			if !p.room() {
				return 1
			}
			r = &procRecord{pid: e.PID, ppid: e.PPID, filename: e.Filename}
			p.addProc(e.ContainerID, r)
		}
		r.exit, r.signal, r.exitCode = e.Time, e.Signal, exitCodeOf(e)
	}
	return 0
}

func (p *podState) room() bool {
	if p.nprocs >= p.maxProcs {
		return false
	}
	p.nprocs++
	return true
}

func (p *podState) procsOf(id string) *containerProcs {
	cp := p.procs[id]
	if cp == nil {
		cp = &containerProcs{byPID: make(map[uint32]*procRecord)}
		p.procs[id] = cp
	}
	return cp
}

func (p *podState) addProc(id string, r *procRecord) {
	cp := p.procsOf(id)
	cp.list = append(cp.list, r)
	cp.byPID[r.pid] = r
}

// recordRuntime merges what the runtime says of a container or sandbox:
// the latest state, the earliest of each timestamp.
func (p *podState) recordRuntime(e *event.ContainerInfo) {
	if !e.Sandbox && e.ContainerName != "" {
		p.names[e.ContainerID] = nameAttempt{name: e.ContainerName, attempt: int(e.Attempt)}
	}
	old := p.runtime[e.ContainerID]
	if old == nil {
		c := *e
		p.runtime[e.ContainerID] = &c
		return
	}
	merged := *e
	merged.CreatedAt = earliest(old.CreatedAt, e.CreatedAt)
	merged.StartedAt = earliest(old.StartedAt, e.StartedAt)
	merged.FinishedAt = earliest(old.FinishedAt, e.FinishedAt)
	if merged.PodIP == "" {
		merged.PodIP = old.PodIP
	}
	if e.FinishedAt.IsZero() { // this report predates the end: keep the end's details
		merged.ExitCode = old.ExitCode
		if merged.Reason == "" {
			merged.Reason = old.Reason
		}
	}
	p.runtime[e.ContainerID] = &merged
}

// earliest returns the earlier non-zero time.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case b.Before(a):
		return b
	}
	return a
}

// latest returns the latest of ts (zero times never win).
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// exitCodeOf is a process's exit code, nil when a signal ended it: the
// kernel's exit code is then meaningless (event.ProcessExit), and a process
// SIGKILLed must never read "exit 0".
func exitCodeOf(e *event.ProcessExit) *int {
	if e.Signal != 0 {
		return nil
	}
	code := e.ExitCode
	return &code
}
