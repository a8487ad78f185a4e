// Package correlator turns the ordered stream of node events (process exec
// and exit, container runtime state, pod updates from the API server, clock
// ticks) into one Timeline per pod start, following the kubelet's rules.
//
// It is pure and deterministic: the same events in the same order always
// give the same timelines, which is what makes recordings replayable. It
// imports neither eBPF, client-go informers nor OTel.
package correlator

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// Outcome is how a pod start ended.
type Outcome string

// Outcomes of a pod start.
const (
	OutcomeReady   Outcome = "ready"   // the Ready condition became True
	OutcomeFailed  Outcome = "failed"  // the pod failed (e.g. an init container with restartPolicy Never)
	OutcomeDeleted Outcome = "deleted" // deleted before it became Ready
	// OutcomeTimeout: not Ready within the configured time. With Partial
	// set, the start goes on and a later timeline completes it.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeStarting: the start is still in progress. Only a Snapshot has
	// it: derived by the same rules as of AsOf (its End), open bars drawn
	// to then; no trace is exported for it.
	OutcomeStarting Outcome = "starting"
)

// PodRef identifies a pod.
type PodRef struct {
	// UID is the API object's metadata.uid (what kubectl shows): for a
	// static pod, its mirror pod's.
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	// ConfigHash is set for a static pod only: the kubelet's hash of the
	// pod's manifest, which the kubelet uses as the pod's UID on the node
	// (cgroup pod<hash>, CRI label io.kubernetes.pod.uid), so every node
	// fact of the pod carries it. The API object is then a mirror pod
	// whose annotation kubernetes.io/config.mirror holds this hash.
	ConfigHash string `json:"config_hash,omitempty"`
}

// String is namespace/name.
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// Static reports whether the pod is a static pod (its API object a mirror).
func (p PodRef) Static() bool { return p.ConfigHash != "" }

// Timeline is the reconstruction of one pod start, from the pod's creation
// to Ready (or failure, deletion, timeout). All times are wall-clock; a zero
// time means the moment was not observed.
type Timeline struct {
	Pod PodRef `json:"pod"`
	// Start is the pod's creation (metadata.creationTimestamp, 1 s
	// precision). For a static pod it is the earlier of its mirror pod's
	// creation and the first thing the node saw of it (the sandbox, a CRI
	// call, a process): the kubelet creates the mirror pod only once the
	// static pod runs, and not before the API server answers.
	Start time.Time `json:"start"`
	// End is when the outcome was reached: Ready observed, failure, deletion
	// or the timeout. When Ready was already True at the pod's first sight
	// (a static pod's mirror created after it was Ready), End is Ready's
	// lastTransitionTime (1 s precision), not before its cause.
	End     time.Time `json:"end"`
	Outcome Outcome   `json:"outcome"`
	// Reason says why a start failed or timed out (empty when ready).
	Reason string `json:"reason,omitempty"`
	// Partial is set on the report of a start still in progress at its
	// deadline (outcome timeout, End = the deadline): the start goes on, and
	// its outcome, when it comes, is a later timeline of the same pod with
	// ReportedAt set.
	Partial bool `json:"partial,omitempty"`
	// ReportedAt is when a partial timeline of this start was reported (its
	// End); zero when none was. What came before it has been told already.
	ReportedAt time.Time `json:"reported_at,omitzero"`
	// AsOf is set on a Snapshot: the moment it was derived for. For a start
	// in progress (OutcomeStarting) it is also its End; a start that has
	// reached its outcome and waits for its last facts (the grace period)
	// has that outcome, and its timeline without AsOf comes when it ends.
	AsOf time.Time `json:"as_of,omitzero"`
	// Waiting says, in the kubelet's and the runtime's own words where
	// they gave any, what the start waits on: for a start in progress, now;
	// for one that ended other than Ready, what it waited on last.
	// Empty for a start that reached Ready.
	Waiting string `json:"waiting,omitempty"`
	// After is what happened to the pod after its start (exits, restarts,
	// Ready lost and regained, its phase), as of After.AsOf: the daemon's
	// API adds it to a start that ended Ready, for a pod still there.
	After *After `json:"after,omitempty"`
	// Facts counts the facts a start in progress has taken so far (pod
	// updates, node events): a client that follows it redraws when this
	// grows. Only a Snapshot has it.
	Facts int `json:"facts,omitempty"`
	// InFlight are the kubelet's CRI calls for the pod that had entered
	// and not returned as of AsOf (a long PullImage, a RunPodSandbox hung in
	// CNI): only a Snapshot has them, each drawn open to AsOf.
	InFlight []InFlightCall `json:"in_flight,omitempty"`
	// TraceParent is the pod's tracing.k8s.io/traceparent annotation
	// (TraceParentAnnotation) in the latest pod object seen, unvalidated,
	// at most MaxTraceParent bytes; empty when the pod has none.
	TraceParent string `json:"traceparent,omitempty"`

	// ObservedSince is set when readyline saw the pod only after its start
	// had begun (the daemon started, or restarted, in the middle of it): the
	// first time it saw anything of the pod, from the API or the node.
	// Kernel events and CRI calls before it are missing, conditions already
	// True then are Coarse, and Missing lists what that leaves out. Zero when
	// the start was seen from its beginning.
	ObservedSince time.Time `json:"observed_since,omitzero"`
	// Missing names, for a pod seen late, the facts the timeline lacks
	// because they happened before ObservedSince, and for a timeline with
	// Marks what they leave less exact.
	Missing []string `json:"missing,omitempty"`
	// Marks name what makes parts of the timeline less exact than its
	// sources' precision (see the Mark* values), at most once each.
	Marks []Mark `json:"marks,omitempty"`
	// ClockSteps are the steps of the node's wall clock while the start
	// went on (MarkClockStep), oldest first.
	ClockSteps []ClockStep `json:"clock_steps,omitempty"`
	// Gaps are the sources that were blind during part of the start (a
	// ring buffer that lost records, a kubelet that restarted, a runtime or
	// API server that did not answer), each with its blind windows: what
	// they would have reported then may be missing, not absent (gaps.go).
	// Empty when every source saw the whole start.
	Gaps []SourceGap `json:"gaps,omitempty"`

	// Events are the Events about the pod itself (naming no container)
	// that readyline read, oldest first: Scheduled, FailedMount,
	// FailedCreatePodSandBox, Evicted... It reads them when the start
	// needs them: in progress after a few seconds, asked for, or ending
	// other than Ready. EventsUnread says why they could not be read (a
	// node without the grant to list Events).
	Events       []event.PodEvent `json:"events,omitempty"`
	EventsUnread string           `json:"events_unread,omitempty"`
	// Phases are the pod-level phases in order (see the Phase* names).
	Phases []Phase `json:"phases"`
	// Volumes are the volumes the kubelet set up through a CSI driver
	// before the sandbox, each with its driver's calls.
	Volumes []VolumeSetup `json:"volumes,omitempty"`
	// ImagePulls are the images the kubelet pulled for this pod.
	ImagePulls []ImagePull `json:"image_pulls,omitempty"`
	// Sandbox is the pod sandbox (pause container and network) the final
	// container attempts ran in: the latest one. When the kubelet's
	// RunPodSandbox calls since the latest sandbox made all failed, it is
	// the sandbox not made: no ID, only its FailedCalls.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// EarlierSandboxes are the sandboxes of this start that were replaced
	// (died, lost their network), oldest first, each with its RunPodSandbox
	// call, CNI plugins and failed calls. A new sandbox means the kubelet
	// killed every container and started them all again (computePodActions).
	EarlierSandboxes []Sandbox `json:"earlier_sandboxes,omitempty"`
	// Containers in spec order: init containers (regular and sidecar), then
	// the main containers.
	Containers []Container `json:"containers"`
	// AmbiguousProbes are the kubelet's connections that the probes (or
	// hooks) of several containers could have made, and the kubelet's
	// rules and timing could not tell which: they are on no container.
	// Like Probes, at most maxProbeAttempts: the first and the last half,
	// AmbiguousOmitted counts the others.
	AmbiguousProbes  []AmbiguousProbe `json:"ambiguous_probes,omitempty"`
	AmbiguousOmitted int              `json:"ambiguous_omitted,omitempty"`
	// Conditions are the five lifecycle conditions, in the order they became
	// True (those never True are left out).
	Conditions []ConditionTransition `json:"conditions"`
	Insights   []Insight             `json:"insights,omitempty"`
	// CriticalPath names, in order, the phases and containers whose time made
	// up the start (each one waited for the previous).
	CriticalPath []Step `json:"critical_path,omitempty"`
	// Breakdown is where the time went: the critical path's time by kind,
	// and the time between its steps, largest first; it adds up to End -
	// Start (for a start in progress, to its AsOf).
	Breakdown []Share `json:"breakdown,omitempty"`
}

// Mark names a way in which a timeline is less exact than its sources.
type Mark string

// Marks of a timeline.
const (
	// MarkAPILag: the API server delivered some conditions more than 2 s
	// after their lastTransitionTime (an outage of the pod watch, an API
	// server that lagged): those conditions are Coarse, at their
	// lastTransitionTime (1 s precision), Delivered says when they came,
	// and no lag is measured from them.
	MarkAPILag Mark = "api_lag"
	// MarkClockStep: the node's wall clock stepped during the start
	// (ClockSteps). The times before the step are moved onto the clock
	// after it, so durations across it are what elapsed; a time stamped
	// within a couple of seconds of a step may still be off by the step.
	MarkClockStep Mark = "clock_step"
	// MarkTrimmed: readyline's memory budget for the node's facts
	// (Config.MaxFactBytes) was full, and it dropped some of the start's
	// detail (the argv of processes, processes, the oldest probe runs) or
	// facts that came then; Missing says what.
	MarkTrimmed Mark = "facts_trimmed"
)

// ClockStep is a step of the node's wall clock: At is the first tick
// after it (on the clock of the timeline), Step how far the wall clock
// jumped (negative: back).
type ClockStep struct {
	At   time.Time     `json:"at"`
	Step time.Duration `json:"step"`
}

// Names of pod-level phases.
const (
	// PhaseSchedule: creation -> PodScheduled (both 1 s precision).
	PhaseSchedule = "pod.schedule"
	// PhaseWaitSandbox: the pod seen on the node -> the first sandbox's
	// creation started (its first RunPodSandbox call, failed ones
	// included): admission, volume mounts, the kubelet's pod worker.
	PhaseWaitSandbox = "pod.wait_sandbox"
	// PhaseSandboxReplaced: the first sandbox's creation started -> the
	// final sandbox's, when the sandbox was replaced: the time spent in
	// sandboxes (and their containers) that did not last.
	PhaseSandboxReplaced = "pod.sandbox_replaced"
	// PhaseSandbox: sandbox creation started (its first RunPodSandbox
	// call, failed ones included: the retries are time spent getting it)
	// -> sandbox ready (network, pause), of the final sandbox; none for a
	// sandbox not made.
	PhaseSandbox = "pod.sandbox"
	// PhaseInit: first init container created -> Initialized's underlying
	// event (the last init container done or started).
	PhaseInit = "pod.init"
	// PhaseContainers: first main container created -> all ready.
	PhaseContainers = "pod.containers"
)

// Phase is a named interval of the pod start.
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Source says where the boundaries come from: "kernel", "runtime",
	// "api" (observed watch updates, ms) or "api-coarse" (1 s timestamps).
	Source string `json:"source,omitempty"`
}

// Duration is End - Start, or 0 when either is unknown.
func (p Phase) Duration() time.Duration { return span(p.Start, p.End) }

func span(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}
