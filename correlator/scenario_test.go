package correlator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// t0 is the pod's creation in every scenario.
var t0 = time.Date(2026, 11, 30, 1, 51, 18, 0, time.UTC)

// at is t0 + s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// scenario writes the event stream of one pod start, the way the sources
// deliver it, for table tests of the kubelet rules.
type scenario struct {
	t   testing.TB
	uid string
	// hash: a static pod's config hash, the UID its node facts carry
	// (see static).
	hash   string
	pod    *corev1.Pod // current object; each update snapshots it
	events []event.Event
	added  bool
	// pausePID is the pause process of the latest sandboxCallFor, and
	// sandboxes the ids it made, in order; failedSandboxCalls counts the
	// RunPodSandbox calls failed before them.
	pausePID           uint32
	sandboxes          []string
	failedSandboxCalls int
}

func newScenario(t testing.TB, name string, spec corev1.PodSpec) *scenario {
	h := uint64(14695981039346656037)
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012x", h&0xffffffffffff)
	spec.NodeName = "vm"
	return &scenario{t: t, uid: uid, pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec:   spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// static makes the scenario a static pod: its node facts carry the config
// hash, and the pod object is the mirror pod the kubelet creates at created
// (its metadata.uid stays the scenario's UID, as the API server chose it).
func (sc *scenario) static(hash string, created float64) {
	sc.hash = hash
	sc.pod.Annotations = map[string]string{
		corev1.MirrorPodAnnotationKey: hash,
		"kubernetes.io/config.hash":   hash,
		"kubernetes.io/config.source": "file",
	}
	sc.pod.Name += "-vm"
	sc.pod.Namespace = "kube-system"
	sc.pod.CreationTimestamp = metav1.NewTime(at(created).Truncate(time.Second))
}

// nodeUID is the pod UID the node facts carry.
func (sc *scenario) nodeUID() string {
	if sc.hash != "" {
		return sc.hash
	}
	return sc.uid
}

// startTime sets status.startTime (1 s precision).
func (sc *scenario) startTime(s float64) {
	st := metav1.NewTime(at(s).Truncate(time.Second))
	sc.pod.Status.StartTime = &st
}

// ticks emits the daemon's clock every second from s to e.
func (sc *scenario) ticks(s, e float64) {
	for ; s <= e; s++ {
		sc.events = append(sc.events, &event.Tick{Time: at(s)})
	}
}

// update emits the current pod object as observed at time s.
func (sc *scenario) update(s float64) {
	action := event.PodUpdated
	if !sc.added {
		action, sc.added = event.PodAdded, true
	}
	sc.events = append(sc.events, &event.PodUpdate{Time: at(s), Action: action, Pod: sc.pod.DeepCopy()})
}

func (sc *scenario) delete(s float64) {
	sc.events = append(sc.events, &event.PodUpdate{Time: at(s), Action: event.PodDeleted, Pod: sc.pod.DeepCopy()})
}

// cond sets a condition True with a lastTransitionTime truncated to 1 s.
func (sc *scenario) cond(typ corev1.PodConditionType, s float64) {
	ltt := metav1.NewTime(at(s).Truncate(time.Second))
	for i := range sc.pod.Status.Conditions {
		if sc.pod.Status.Conditions[i].Type == typ {
			sc.pod.Status.Conditions[i].Status, sc.pod.Status.Conditions[i].LastTransitionTime = corev1.ConditionTrue, ltt
			return
		}
	}
	sc.pod.Status.Conditions = append(sc.pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: ltt})
}

// status sets a container's status (init containers when init is true).
func (sc *scenario) status(init bool, cs corev1.ContainerStatus) {
	list := &sc.pod.Status.ContainerStatuses
	if init {
		list = &sc.pod.Status.InitContainerStatuses
	}
	for i := range *list {
		if (*list)[i].Name == cs.Name {
			(*list)[i] = cs
			return
		}
	}
	*list = append(*list, cs)
}

func running(name, id string, s float64, started, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, Started: &started, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(s).Truncate(time.Second))}}}
}

func terminated(name, id string, code int32, restarts int32) corev1.ContainerStatus {
	f := false
	return corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, Started: &f, RestartCount: restarts, Ready: code == 0,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

// runtime emits what the CRI says of a container (or sandbox when name is "").
func (sc *scenario) runtime(s float64, id, name string, attempt uint32, created, started, finished float64, code int32) {
	ci := &event.ContainerInfo{Time: at(s), ContainerID: id, PodUID: sc.nodeUID(), PodName: sc.pod.Name, Namespace: sc.pod.Namespace,
		ContainerName: name, Attempt: attempt, Sandbox: name == "", State: "running"}
	if created > 0 {
		ci.CreatedAt = at(created)
	}
	if started > 0 {
		ci.StartedAt = at(started)
	}
	if finished > 0 {
		ci.FinishedAt, ci.ExitCode, ci.State = at(finished), code, "exited"
	}
	sc.events = append(sc.events, ci)
}

func (sc *scenario) proc(cid string, pid, ppid uint32) event.Process {
	return event.Process{PID: pid, PPID: ppid, ContainerID: cid, PodUID: sc.nodeUID(), Scope: event.ScopePod}
}

func (sc *scenario) fork(s float64, cid string, pid, ppid uint32) {
	sc.events = append(sc.events, &event.ProcessFork{Time: at(s), Process: sc.proc(cid, pid, ppid)})
}

func (sc *scenario) exec(s float64, cid string, pid, ppid uint32, argv ...string) {
	sc.events = append(sc.events, &event.ProcessExec{Time: at(s), Process: sc.proc(cid, pid, ppid),
		Filename: "/bin/" + argv[0], Argv: argv})
}

func (sc *scenario) exit(s float64, cid string, pid uint32, code int) {
	sc.events = append(sc.events, &event.ProcessExit{Time: at(s), Process: sc.proc(cid, pid, 0), ExitCode: code})
}

// run feeds the events, then ticks past the grace period, and returns the
// one timeline the scenario must produce.
func (sc *scenario) run(cfg Config) *Timeline {
	sc.t.Helper()
	c := New(cfg)
	var got []*Timeline
	for _, ev := range sc.events {
		got = append(got, c.Handle(ev)...)
	}
	last := sc.events[len(sc.events)-1].When()
	for s := 1; s <= 20 && len(got) == 0; s++ {
		got = append(got, c.Handle(&event.Tick{Time: last.Add(time.Duration(s) * time.Second)})...)
	}
	if len(got) != 1 {
		sc.t.Fatalf("%d timelines, want 1 (stats %+v)", len(got), c.Stats())
	}
	if st := c.Stats(); st.Tracked != 0 && !got[0].Partial {
		sc.t.Errorf("%d pods still tracked after completion", st.Tracked)
	}
	return got[0]
}

// The ids and pids the scenarios use.
const (
	sandboxID = "5b00000000000000000000000000000000000000000000000000000000000000"
	idInit    = "1a00000000000000000000000000000000000000000000000000000000000000"
	idSidecar = "2b00000000000000000000000000000000000000000000000000000000000000"
	idMain    = "3c00000000000000000000000000000000000000000000000000000000000000"
	idMain2   = "4d00000000000000000000000000000000000000000000000000000000000000"
	shimPID   = 900
)

func always() *corev1.ContainerRestartPolicy {
	p := corev1.ContainerRestartPolicyAlways
	return &p
}

func execProbe(delay, period int32, cmd ...string) *corev1.Probe {
	return &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
}

func httpProbe(delay, period int32) *corev1.Probe {
	return &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/"}}}
}

// sandboxUp: the sandbox appears at s with its pause process.
func (sc *scenario) sandboxUp(s float64) {
	sc.exec(s+0.05, sandboxID, 100, shimPID, "pause")
	sc.runtime(s+0.1, sandboxID, "", 0, s, 0, 0, 0)
}

func findContainer(t *testing.T, tl *Timeline, name string) *Container {
	t.Helper()
	for i := range tl.Containers {
		if tl.Containers[i].Name == name {
			return &tl.Containers[i]
		}
	}
	t.Fatalf("no container %s in %+v", name, tl.Containers)
	return nil
}

func findCondition(t *testing.T, tl *Timeline, typ string) ConditionTransition {
	t.Helper()
	for _, c := range tl.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no condition %s", typ)
	return ConditionTransition{}
}

func hasInsight(tl *Timeline, kind InsightKind, substr string) bool {
	for _, in := range tl.Insights {
		if in.Kind == kind && strings.Contains(in.Message, substr) {
			return true
		}
	}
	return false
}

func approx(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if d := got - want; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// call emits a CRI call of the kubelet.
func (sc *scenario) call(start, end float64, method event.CRIMethod, mod func(*event.CRICall)) {
	c := &event.CRICall{Time: at(start), End: at(end), Method: method, PID: 4242}
	if mod != nil {
		mod(c)
	}
	sc.events = append(sc.events, c)
}

// conn emits a kubelet TCP connection to the pod.
func (sc *scenario) conn(start, end float64, ip string, port uint16, result event.TCPResult) {
	c := &event.TCPConnection{Time: at(start), End: at(end), PID: 4242, Daddr: ip, Dport: port, Result: result}
	if result == event.TCPEstablished {
		c.Established = at(start + 0.0005)
	}
	sc.events = append(sc.events, c)
}

// cniExec emits a CNI plugin process on the host.
func (sc *scenario) cniExec(start, end float64, pid uint32, plugin string) {
	p := event.Process{PID: pid, PPID: 77, Scope: event.ScopeCNI}
	sc.events = append(sc.events,
		&event.ProcessExec{Time: at(start), Process: p, Filename: "/usr/lib/cni/" + plugin, Argv: []string{plugin}},
		&event.ProcessExit{Time: at(end), Process: p, Filename: "/usr/lib/cni/" + plugin})
}

// kill emits the exit of a process ended by signal sig (the kernel's exit
// code is then 0 and meaningless).
func (sc *scenario) kill(s float64, cid string, pid uint32, sig int) {
	sc.events = append(sc.events, &event.ProcessExit{Time: at(s), Process: sc.proc(cid, pid, 0), Signal: sig})
}

// sandboxCall emits a RunPodSandbox call returning sandbox id (none when
// id is ""), with one CNI plugin and the pause process inside it, and the
// runtime's word on the sandbox (attempt).
func (sc *scenario) sandboxCall(start, end float64, id string, attempt uint32, pausePID uint32) {
	uid := sc.uid
	sc.call(start, end, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = uid, id })
	sc.cniExec(start+0.05, start+0.15, 3000+pausePID, "bridge")
	if id == "" {
		return
	}
	sc.exec(end-0.05, id, pausePID, shimPID, "pause")
	sc.runtime(end+0.05, id, "", attempt, end-0.1, 0, 0, 0)
	sc.events[len(sc.events)-1].(*event.ContainerInfo).PodIP = podIP
}

// sandboxCallFor is sandboxCall remembering the pause process's pid.
func (sc *scenario) sandboxCallFor(start, end float64, id string, attempt uint32, pausePID uint32) {
	sc.pausePID = pausePID
	sc.sandboxes = append(sc.sandboxes, id)
	sc.sandboxCall(start, end, id, attempt, pausePID)
}

// runIn emits what the runtime says of a container attempt in sandbox sb.
func (sc *scenario) runIn(s float64, sb, id, name string, attempt uint32, created, started, finished float64, code int32, reason string) {
	sc.runtime(s, id, name, attempt, created, started, finished, code)
	ci := sc.events[len(sc.events)-1].(*event.ContainerInfo)
	ci.SandboxID = sb
	if finished > 0 {
		ci.Reason = reason
	}
}

// notTrue sets a condition False.
func (sc *scenario) notTrue(typ corev1.PodConditionType) {
	for i := range sc.pod.Status.Conditions {
		if sc.pod.Status.Conditions[i].Type == typ {
			sc.pod.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

// noNegativeLag fails for any condition whose cause is after its observation.
func noNegativeLag(t *testing.T, tl *Timeline) {
	t.Helper()
	for _, c := range tl.Conditions {
		if !c.Cause.IsZero() && c.Cause.After(c.Observed) {
			t.Errorf("%s: cause %v (%s) after its observation %v", c.Type, c.Cause.Sub(t0), c.CauseEvent, c.Observed.Sub(t0))
		}
	}
}

func phaseOf(tl *Timeline, name string) (Phase, bool) {
	for _, p := range tl.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// tcpProbe is a tcpSocket probe on port (a number, or a name of the
// container's ports).
func tcpProbe(delay, period int32, port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}
}

// httpProbeOn is an httpGet probe on port (a number, or a name).
func httpProbeOn(delay, period int32, port intstr.IntOrString) *corev1.Probe {
	p := httpProbe(delay, period)
	p.HTTPGet.Port = port
	return p
}

// threshold sets a probe's successThreshold.
func threshold(p *corev1.Probe, success int32) *corev1.Probe {
	p.SuccessThreshold = success
	return p
}

// namedPort is a container port with a name, for probes that name it.
func namedPort(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

// runPods feeds the events of several pods' scenarios, merged in time
// order (each scenario's own order kept), ticks past the grace period and
// returns each pod's one timeline by name.
func runPods(t *testing.T, cfg Config, scs ...*scenario) map[string]*Timeline {
	t.Helper()
	merged := mergeEvents(scs...)
	c := New(cfg)
	got := map[string]*Timeline{}
	for _, ev := range merged {
		for _, tl := range c.Handle(ev) {
			got[tl.Pod.Name] = tl
		}
	}
	last := merged[len(merged)-1].When()
	for s := 1; s <= 20 && len(got) < len(scs); s++ {
		for _, tl := range c.Handle(&event.Tick{Time: last.Add(time.Duration(s) * time.Second)}) {
			got[tl.Pod.Name] = tl
		}
	}
	if len(got) != len(scs) {
		t.Fatalf("%d timelines, want %d (stats %+v)", len(got), len(scs), c.Stats())
	}
	return got
}

// mergeEvents merges the scenarios' events in time order, each
// scenario's own order kept.
func mergeEvents(scs ...*scenario) []event.Event {
	lists := make([][]event.Event, len(scs))
	for i, sc := range scs {
		lists[i] = sc.events
	}
	var merged []event.Event
	for {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || l[0].When().Before(lists[best][0].When())) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		merged = append(merged, lists[best][0])
		lists[best] = lists[best][1:]
	}
	return merged
}

// probeKinds lists a container attempt's probe attempts as
// "kind@start/result" (start in seconds after t0), "~" marking inferred ones.
func probeKinds(a ContainerAttempt) []string {
	var out []string
	for _, p := range a.Probes {
		s := fmt.Sprintf("%s@%.2f/%s", p.Kind, p.Start.Sub(t0).Seconds(), p.Result)
		if p.Inferred {
			s = "~" + s
		}
		out = append(out, s)
	}
	return out
}

// waiting is a container's status while the kubelet holds it with reason
// (state.waiting), as convertToAPIContainerStatuses writes it.
func waiting(name, reason, msg string) corev1.ContainerStatus {
	f := false
	return corev1.ContainerStatus{Name: name, Started: &f,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// lastExit sets the container's lastState to a termination with code,
// from container id.
func lastExit(cs corev1.ContainerStatus, id string, code int32, restarts int32) corev1.ContainerStatus {
	cs.ContainerID = ""
	cs.RestartCount = restarts
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: "Error", ContainerID: "containerd://" + id}}
	return cs
}
