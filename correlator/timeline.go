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

// Sandbox is the pod sandbox as the runtime and the kernel saw it.
type Sandbox struct {
	ID string `json:"id"`
	// Attempt is the runtime's sandbox attempt (0 for the first).
	Attempt int `json:"attempt,omitempty"`
	// Created is the runtime's creation time of the sandbox.
	Created time.Time `json:"created"`
	// PauseStart is the exec of the sandbox's pause process (kernel).
	PauseStart time.Time `json:"pause_start,omitzero"`
	// Ready is when the sandbox was known ready: PodReadyToStartContainers
	// observed, or the first container created, whichever came first.
	Ready time.Time `json:"ready"`
	PodIP string    `json:"pod_ip,omitempty"`
	// Ended is when an earlier sandbox was seen gone (its pause process
	// exited); zero for the final one or when not seen.
	Ended time.Time `json:"ended,omitzero"`
	// Call is the kubelet's RunPodSandbox call, when the kernel saw it: the
	// sandbox phase is then exactly the call.
	Call *CRICall `json:"call,omitempty"`
	// CNI are the CNI plugin processes the runtime ran for the sandbox
	// network (ADD), seen in the kernel inside the RunPodSandbox call.
	CNI []Process `json:"cni,omitempty"`
	// Error is what the kubelet reported of the runtime's refusal, from its
	// latest FailedCreatePodSandBox Event ("Failed to create pod sandbox:
	// rpc error: ..."), when the sandbox has failed calls and it was read.
	Error string `json:"error,omitempty"`
	// FailedCalls are the RunPodSandbox calls that returned an error and
	// made no sandbox (a CNI plugin that failed, a runtime handler that does
	// not exist) while the kubelet was trying to make this one: those since
	// the sandbox before it began, in time order; the kubelet retries them
	// with back-off. A failed call is never a sandbox of its own (it
	// returns no sandbox id). When the calls since the last sandbox made
	// all failed, the timeline's Sandbox is one not made: ID empty, no
	// Call, only these calls (and the sandboxes made, if any, are earlier:
	// the kubelet is replacing one that died).
	FailedCalls []CRICall `json:"failed_calls,omitempty"`
}

// Begin is when the kubelet began getting the sandbox: its first
// RunPodSandbox call, failed ones included, else its creation as the
// runtime or the kernel saw it; zero when nothing is known.
func (sb *Sandbox) Begin() time.Time {
	t := earliest(sb.Created, sb.PauseStart)
	if sb.Call != nil {
		if !sb.Call.Start.IsZero() {
			t = sb.Call.Start
		} else {
			t = earliest(t, sb.Call.End)
		}
	}
	for _, c := range sb.FailedCalls {
		t = earliest(t, c.Start)
	}
	return t
}

// InFlightCall is a CRI call of the kubelet that had not returned when a
// Snapshot was taken: how long it had run so far is AsOf - Start.
type InFlightCall struct {
	Method event.CRIMethod `json:"method"`
	Start  time.Time       `json:"start"`
	// Container is the container the call is for, when it names one (by
	// name, or through its id); Image the image a PullImage pulls.
	Container string `json:"container,omitempty"`
	Image     string `json:"image,omitempty"`
	// Progress is a PullImage's, from the runtime's content store, when
	// the question was asked (nil: unknown).
	Progress *event.PullProgress `json:"progress,omitempty"`
	// Queued is a PullImage's wait in the kubelet's serialized puller
	// behind other pods' pulls before its call (nil: it waited behind
	// none).
	Queued *PullQueued `json:"queued,omitempty"`
	// Volume and Driver are a CSI call's: the pod's volume (as
	// VolumeSetup.Name) and the CSI driver.
	Volume string `json:"volume,omitempty"`
	Driver string `json:"driver,omitempty"`
}

// PullQueued is how long a pull in flight waited behind other pods' pulls
// before the kubelet called the runtime (PullWait's figures, without the
// other pods' names: a pull in flight is told to whoever may read the pod).
type PullQueued struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Behind counts the pulls it waited behind.
	Behind int `json:"behind"`
}

// Duration is End - Start.
func (q PullQueued) Duration() time.Duration { return span(q.Start, q.End) }

// CRICall is one call of the kubelet's CRI client, timed in the kernel.
type CRICall struct {
	// Method is the gRPC method, e.g. runtime.v1.RuntimeService/StartContainer.
	Method event.CRIMethod `json:"method"`
	// Start is zero when the call began before readyline was watching.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end"`
	Err   bool      `json:"err,omitempty"`
}

// ImagePull is one PullImage call of the kubelet for one of the pod's
// images: a pull, or a failed attempt at one (Call.Err). An image the
// kubelet found present (imagePullPolicy IfNotPresent, or a second
// container with the same image) makes no call and no ImagePull
// (images/image_manager.go EnsureImageExists: "already present on
// machine").
type ImagePull struct {
	// Container is the container that needed the image: the container
	// with that image that the kubelet created next after the call (its
	// pod worker pulls, then creates: kuberuntime_container.go
	// startContainer), else the first one in start order with that image;
	// "" if none (an image volume's pull names Volume instead).
	Container string `json:"container,omitempty"`
	// Volume is the image volume (spec.volumes[].image) the image was
	// pulled for, when no container has that image.
	Volume string `json:"volume,omitempty"`
	// Image is the reference the kubelet asked for (with the default tag
	// the kubelet adds: images/image_manager.go applyDefaultImageTag).
	Image string `json:"image"`
	// Ref is what the runtime returned: the image id or digest it resolved.
	Ref string `json:"ref,omitempty"`
	// Size is the image's size in bytes as the runtime reports it, 0 when
	// unknown: the kubelet asks it with a separate call after the pull
	// (images/puller.go GetImageSize), and so does readyline run (the CRI
	// source's ImageSize fills event.CRICall.ImageSize).
	Size uint64  `json:"size,omitempty"`
	Call CRICall `json:"call"`
	// Attempt counts the pod's PullImage calls of this image, from 1: the
	// kubelet's back-off is per pod and image (image_manager.go pullImage:
	// backOffKey podUID_image), so are its attempts.
	Attempt int `json:"attempt"`
	// ErrorReason and Error are, for a failed call, the waiting reason and
	// message the API showed for it on the container (ErrImagePull,
	// RegistryUnavailable or SignatureValidationFailed and the runtime's
	// error: image_manager.go evalCRIPullErr; or the error an
	// ImagePullBackOff message repeats); empty when not seen.
	ErrorReason string `json:"error_reason,omitempty"`
	Error       string `json:"error,omitempty"`
	// BackOff is the time from the end of the previous failed PullImage
	// call of this image in the pod to this call's start: the kubelet's
	// image back-off (ImagePullBackOff: 10 s doubling to 300 s, kubelet.go
	// imageBackOffPeriod, MaxImageBackOff) and its next sync. Zero for the
	// first attempt and after a success.
	BackOff time.Duration `json:"back_off,omitempty"`
	// Wait is the time the pull waited in the kubelet's serialized puller
	// behind other pods' pulls before its call began; nil when it did not
	// (or it cannot be told: see PullWait).
	Wait *PullWait `json:"wait,omitempty"`
	// Puller is what the timeline knows of the kubelet's puller.
	Puller Puller `json:"puller,omitempty"`
	// Progress is how far the pull had come while its call ran, oldest
	// first, as the runtime's content store said every few seconds (none
	// for a call of less than a second, or a runtime whose store cannot
	// be read); at most a few dozen, spread over the call.
	Progress []PullSample `json:"progress,omitempty"`
}

// End is the end of the pull's call.
func (ip ImagePull) End() time.Time { return ip.Call.End }

// Begin is when the pull began to hold its container: its wait's start in
// the serialized puller, else its call's start (zero when not seen).
func (ip ImagePull) Begin() time.Time {
	if ip.Wait != nil {
		return ip.Wait.Start
	}
	return ip.Call.Start
}

// Duration is the PullImage call's duration (0 when its start was not seen).
func (ip ImagePull) Duration() time.Duration { return span(ip.Call.Start, ip.Call.End) }

// Puller says which image puller the kubelet ran, as far as the node's
// PullImage calls tell. Its configuration (serializeImagePulls,
// maxParallelImagePulls) is not visible to readyline.
type Puller string

// Pullers.
const (
	// PullerSerialAssumed: no two PullImage calls on the node were seen
	// overlapping, as with the kubelet's default serializeImagePulls: true
	// (one worker takes the node's pulls one at a time from a queue:
	// images/puller.go serialImagePuller.processImagePullRequests). It is
	// assumed, not known: a parallel puller whose pulls never overlapped
	// looks the same.
	PullerSerialAssumed Puller = "serial_assumed"
	// PullerParallel: two PullImage calls on the node overlapped, which
	// the serialized puller never does: serializeImagePulls is false
	// (images/puller.go parallelImagePuller). Its maxParallelImagePulls is
	// not known, so no wait for a pull slot is told.
	PullerParallel Puller = "parallel"
)

// PullWait is a pull's wait in the kubelet's serialized puller: from when
// the container needed its image (Need) to when its PullImage call began,
// while the puller's one worker pulled other pods' images (Behind).
//
// Need is the end of the pod's previous step in the kubelet's pod worker,
// which runs one pod's steps one after another (kuberuntime_manager.go
// SyncPod: the sandbox, then for each container startContainer: pull,
// CreateContainer, StartContainer, postStart): the latest, before the
// call, of the pod's CRI calls (but ExecSync: probes run apart), its
// postStart hooks' ends and its init containers' exits. A retry after a
// failed pull has no Need (the back-off's end is not seen), and no wait.
type PullWait struct {
	// Start is the later of Need and the start of the first pull Behind;
	// End is the call's start.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Need  time.Time `json:"need"`
	// NeedEvent says what Need is ("RunPodSandbox returned", ...).
	NeedEvent string `json:"need_event"`
	// Behind are the other pods' pulls that the worker took before this
	// one, one after another, oldest first (at most maxPullsBehind, the
	// latest kept); the last is the one the call began right after.
	Behind []PullBehind `json:"behind"`
	// BehindOmitted counts the older pulls Behind leaves out.
	BehindOmitted int `json:"behind_omitted,omitempty"`
}

// Duration is End - Start.
func (w PullWait) Duration() time.Duration { return span(w.Start, w.End) }

// PullBehind is another pod's PullImage call that a pull waited behind.
type PullBehind struct {
	// PodUID is the other pod's UID (its trace id), "" when the call
	// named none.
	PodUID string `json:"pod_uid,omitempty"`
	// Namespace and Name are the other pod's, when it was known: a reader
	// who may not get it sees none of PodUID, Image and these, only
	// Hidden (exporter.ReaderView).
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Image     string    `json:"image,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Err       bool      `json:"err,omitempty"`
	Hidden    bool      `json:"hidden,omitempty"`
}

// ContainerKind is what role a container plays in the start.
type ContainerKind string

// Container kinds.
const (
	KindInit    ContainerKind = "init"      // regular init container: runs to completion
	KindSidecar ContainerKind = "sidecar"   // init container with restartPolicy Always
	KindMain    ContainerKind = "container" // spec.containers
)

// Container is one container of the pod and every attempt to run it.
type Container struct {
	Name string        `json:"name"`
	Kind ContainerKind `json:"kind"`
	// Index is the position in spec.initContainers or spec.containers.
	Index    int                `json:"index"`
	Image    string             `json:"image,omitempty"`
	Attempts []ContainerAttempt `json:"attempts"`
	// Waiting are the reasons the API gave for the container waiting, in the
	// order they first appeared (at most maxWaitingReasons: the first and
	// the latest are kept, WaitingOmitted counts the others).
	Waiting        []WaitingReason `json:"waiting,omitempty"`
	WaitingOmitted int             `json:"waiting_omitted,omitempty"`
	// FailedCalls are the CreateContainer calls for this container that
	// returned an error, and so made no attempt (CreateContainerError).
	FailedCalls []CRICall `json:"failed_calls,omitempty"`
	// Events are the Events about this container that readyline read (the
	// kubelet's own words: Pulling, Pulled, Created, Started, Unhealthy with
	// the probe's output, Killing, BackOff, FailedPostStartHook...), oldest
	// first, de-duplicated by the API server (Count).
	Events []event.PodEvent `json:"events,omitempty"`
}

// WaitingReason is one reason the API gave for a container not running
// (status.containerStatuses[].state.waiting): ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, CrashLoopBackOff,
// CreateContainerConfigError, RunContainerError, ... The kubelet's default
// reasons for a container not created yet (ContainerCreating,
// PodInitializing) are left out: the attempts and phases say that already.
//
// Observations of the same reason with no other reason in between are one
// entry, even when the container ran in between: a crash loop is one
// CrashLoopBackOff entry whose Times counts the back-offs.
type WaitingReason struct {
	Reason string `json:"reason"`
	// Message is the latest message given with the reason (a back-off's
	// message names its current length).
	Message string `json:"message,omitempty"`
	// First and Last are the first and the last watch update that showed
	// the reason (observed times, ms precision).
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Times is how many separate times the container entered the reason
	// (each time after it was running, terminated or waiting for a default
	// reason).
	Times int `json:"times"`
}

// Duration is Last - First: how long the reason was seen for, at least.
func (w WaitingReason) Duration() time.Duration { return span(w.First, w.Last) }

// ContainerAttempt is one run of a container (restarts get new ones).
type ContainerAttempt struct {
	Attempt     int    `json:"attempt"`
	ContainerID string `json:"container_id,omitempty"`
	// Created and Started are the runtime's times (CreateContainer done,
	// StartContainer done).
	Created time.Time `json:"created,omitzero"`
	Started time.Time `json:"started,omitzero"`
	// Process is the container's entrypoint as the kernel saw it.
	Process *Process `json:"process,omitempty"`
	// Finished and ExitCode: the runtime's view of the end (or the
	// entrypoint's exit when the runtime has not said).
	Finished time.Time `json:"finished,omitzero"`
	ExitCode *int      `json:"exit_code,omitempty"`
	// Reason is the runtime's (or else the API's) terminated reason: Error,
	// OOMKilled, Completed, ...
	Reason string `json:"reason,omitempty"`
	// KilledBy is set when the kubelet killed the attempt for its liveness
	// or startup probe (failureThreshold failures in a row: prober/worker.go,
	// and computePodActions "failed liveness probe, will be restarted"), or
	// for its failed postStart hook (KilledPostStart: kuberuntime_container.go
	// startContainer kills it). It is told by the kubelet's action, its
	// StopContainer call (or its Killing event) after the failures, whatever
	// the process's exit: an app that traps SIGTERM exits 0. Without either,
	// by the symptom: a signal (or 128+signal) exit right after them.
	KilledBy ProbeKind `json:"killed_by,omitempty"`
	// BackOff is the wait before this attempt: the previous attempt's exit
	// to this one's creation (the kubelet's crash-loop back-off, doBackOff,
	// plus its reaction); zero for the first attempt.
	BackOff time.Duration `json:"back_off,omitempty"`
	// SandboxID is the sandbox the attempt ran in, when known.
	SandboxID string `json:"sandbox_id,omitempty"`
	// StartedObserved is when the API first showed started=true (a sidecar
	// lets the next container start then); ReadyObserved is ready=true.
	StartedObserved time.Time `json:"started_observed,omitzero"`
	ReadyObserved   time.Time `json:"ready_observed,omitzero"`
	PostStart       *Hook     `json:"post_start,omitempty"`
	// Probes are the probe attempts seen, in time order: of each kind, all
	// of them up to maxProbeAttempts (64), else the first 32 and the last
	// 32, the others counted in ProbesOmitted. The derived facts (ready,
	// kills, insights) are from every attempt.
	Probes []ProbeAttempt `json:"probes,omitempty"`
	// ProbesOmitted counts, by kind, the attempts left out of Probes.
	ProbesOmitted map[ProbeKind]OmittedProbes `json:"probes_omitted,omitempty"`
	// NextCreated is when the kubelet created the container that waited for
	// this one (the next init container, or the first main container).
	NextCreated time.Time `json:"next_created,omitzero"`
	// Calls are the kubelet's CRI calls for this attempt (CreateContainer,
	// StartContainer, ...), when the kernel saw them.
	Calls []CRICall `json:"calls,omitempty"`
}

// Process is a process as the kernel saw it (exec -> exit).
type Process struct {
	PID      uint32   `json:"pid"`
	Filename string   `json:"filename,omitempty"`
	Argv     []string `json:"argv,omitempty"`
	// SpecArgv is the pod spec's view of a container's first process's
	// command line (its command and args as written there, before the
	// kubelet expanded a $(VAR), and not what the image adds): what a
	// reader who may get the pod but not exec into it sees instead of
	// Argv (exporter.ReaderView). Empty for other processes.
	SpecArgv []string  `json:"spec_argv,omitempty"`
	Exec     time.Time `json:"exec"`
	Exit     time.Time `json:"exit,omitzero"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Signal   int       `json:"signal,omitempty"`
}

// Hook is a lifecycle hook run (postStart).
type Hook struct {
	// Handler is exec, httpGet or sleep.
	Handler string   `json:"handler"`
	Command []string `json:"command,omitempty"`
	// Start and End bound the hook: the exec'd process for exec hooks.
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	ExitCode *int      `json:"exit_code,omitempty"`
	// Inferred is set when the hook was not seen directly and its bounds
	// come from the container start and the next container's creation.
	Inferred bool `json:"inferred,omitempty"`
	// Call is the ExecSync call that ran an exec hook, when seen.
	Call *CRICall `json:"call,omitempty"`
	// Conn is the request of an httpGet hook, when seen: the hook is then
	// the connection (connect to close).
	Conn *Connection `json:"conn,omitempty"`
}

// ProbeKind is startup, readiness or liveness.
type ProbeKind string

// Probe kinds.
const (
	ProbeStartup   ProbeKind = "startup"
	ProbeReadiness ProbeKind = "readiness"
	ProbeLiveness  ProbeKind = "liveness"
)

// KilledPostStart is the KilledBy of an attempt the kubelet killed because
// its postStart hook failed.
const KilledPostStart ProbeKind = "postStart"

// ProbeResult is the outcome of one probe attempt.
type ProbeResult string

// Probe results.
const (
	ProbeSuccess ProbeResult = "success"
	ProbeFailure ProbeResult = "failure"
	// ProbeTimeout is a failure by the probe's timeoutSeconds: an exec
	// probe's command the runtime killed (ExecSync returned after it), or
	// one the kubelet said timed out.
	ProbeTimeout ProbeResult = "timeout"
	ProbeUnknown ProbeResult = "unknown"
)

// Failed says whether r is a failure, a timeout included.
func (r ProbeResult) Failed() bool { return r == ProbeFailure || r == ProbeTimeout }

// ProbeAttempt is one run of a probe.
type ProbeAttempt struct {
	Kind ProbeKind `json:"kind"`
	// Handler is exec, httpGet, tcpSocket or grpc.
	Handler string      `json:"handler"`
	Start   time.Time   `json:"start"`
	End     time.Time   `json:"end,omitzero"`
	Result  ProbeResult `json:"result"`
	// ExitCode of an exec probe's command.
	ExitCode *int `json:"exit_code,omitempty"`
	// Inferred is set when the attempt was not seen but deduced from a
	// status flip (started or ready became true): only its success and an
	// upper bound of its time are known.
	Inferred bool `json:"inferred,omitempty"`
	// Call is the ExecSync call that ran an exec probe, when seen; the
	// attempt's bounds are then the call's.
	Call *CRICall `json:"call,omitempty"`
	// Conn is the TCP connection of an httpGet or tcpSocket probe, when
	// seen: connect to close. Result is then failure when the connection
	// was refused, success for the last attempt before the API's status
	// flip, failure (or timeout) when the kubelet's Unhealthy Event says
	// so for its time, and unknown otherwise (the kernel does not see
	// HTTP statuses).
	Conn *Connection `json:"conn,omitempty"`
	// Message is what the kubelet said of a failed attempt, in its own
	// words (its Unhealthy Event: "HTTP probe failed with statuscode:
	// 404", `command timed out: "sleep 5" timed out after 1s`).
	Message string `json:"message,omitempty"`
}

// OmittedProbes are the probe attempts of one kind that a ContainerAttempt
// does not list.
type OmittedProbes struct {
	Attempts int `json:"attempts"`
	Failed   int `json:"failed,omitempty"`
}

// AmbiguousProbe is a kubelet connection to a port that the probes or
// hooks of several containers use (service meshes do this), made when
// more than one of them could run.
type AmbiguousProbe struct {
	Start time.Time   `json:"start"`
	End   time.Time   `json:"end,omitzero"`
	Conn  *Connection `json:"conn"`
	// Candidates are the probes (and hooks) it could have been, in spec order.
	Candidates []ProbeTarget `json:"candidates"`
}

// ProbeTarget names one probe or hook of one container attempt.
type ProbeTarget struct {
	Container string `json:"container"`
	Attempt   int    `json:"attempt"`
	// Kind is startup, readiness, liveness or postStart.
	Kind string `json:"kind"`
}

// HookPostStart is the ProbeTarget kind of a postStart hook.
const HookPostStart = "postStart"

// Connection is a TCP connection the kubelet made to the pod.
type Connection struct {
	Daddr string `json:"daddr"`
	Dport uint16 `json:"dport"`
	// Established is zero when the connection was refused.
	Established time.Time `json:"established,omitzero"`
	Result      string    `json:"result"`
}

// Names of the five lifecycle conditions, in their usual order.
const (
	CondPodScheduled              = "PodScheduled"
	CondPodReadyToStartContainers = "PodReadyToStartContainers"
	CondInitialized               = "Initialized"
	CondContainersReady           = "ContainersReady"
	CondReady                     = "Ready"
)

// ConditionTransition is a condition becoming True: the rise that held
// until the start's outcome. A cause is never later than its observation
// (when nothing below the API precedes it, the cause is left unknown).
type ConditionTransition struct {
	Type string `json:"type"`
	// ReadinessGate is set for a condition named by spec.readinessGates.
	ReadinessGate bool `json:"readiness_gate,omitempty"`
	// Observed is when the watch first showed it True (ms precision); for a
	// Coarse transition, its LastTransitionTime.
	Observed time.Time `json:"observed"`
	// LastTransitionTime is the API's own timestamp (1 s precision).
	LastTransitionTime time.Time `json:"last_transition_time"`
	// Cause is when the underlying event happened, as measured below the
	// API (kernel, runtime), and CauseEvent what it was; zero when unknown.
	Cause      time.Time `json:"cause,omitzero"`
	CauseEvent string    `json:"cause_event,omitempty"`
	// Coarse is set when the condition was already True the first time
	// readyline saw the pod, or was delivered late (Delivered), so its
	// transition was not observed: Observed is then its LastTransitionTime
	// (1 s precision; for a late delivery, its cause when that falls inside
	// the same second) and it has no Lag.
	Coarse bool `json:"coarse,omitempty"`
	// Delivered is set when the watch delivered the condition more than
	// 2 s after its LastTransitionTime (MarkAPILag): when it came.
	Delivered time.Time `json:"delivered,omitzero"`
	// EarlierObserved are earlier rises to True that did not hold (the
	// condition went False again before this one).
	EarlierObserved []time.Time `json:"earlier_observed,omitempty"`
}

// Lag is how long after its cause the condition was observed in the API;
// 0 for a Coarse transition, whose observation says nothing of the status
// manager's delay.
func (c ConditionTransition) Lag() time.Duration {
	if c.Coarse {
		return 0
	}
	return span(c.Cause, c.Observed)
}

// InsightKind names a kind of finding.
type InsightKind string

// Insight kinds.
const (
	// InsightPostStartWait: a container's creation waited for the postStart
	// hook of the container before it.
	InsightPostStartWait InsightKind = "poststart_wait"
	// InsightProbeDelay: a probe's initialDelaySeconds left the process up
	// but idle before the first attempt.
	InsightProbeDelay InsightKind = "probe_initial_delay"
	// InsightStatusLag: a condition was reported long after its cause.
	InsightStatusLag InsightKind = "status_lag"
	// InsightKubeletReaction: the kubelet acted on a container's exit late
	// (next container created long after the exit).
	InsightKubeletReaction InsightKind = "kubelet_reaction"
	// InsightRetries: a container needed several attempts.
	InsightRetries InsightKind = "retries"
	// InsightSandboxChanged: the sandbox was replaced, so every container
	// was killed and started again.
	InsightSandboxChanged InsightKind = "sandbox_changed"
	// InsightImagePull: the image whose pulls (their waits, failed
	// attempts and back-offs included) took longest.
	InsightImagePull InsightKind = "image_pull"
)

// Insight is one finding about the start, with a sentence for humans.
type Insight struct {
	Kind      InsightKind   `json:"kind"`
	Container string        `json:"container,omitempty"`
	Duration  time.Duration `json:"duration"`
	Message   string        `json:"message"`
}

// Step is one element of the critical path.
type Step struct {
	// Name is the row of the waterfall the step is on: a phase name,
	// "<kind>/<container name>", "image.pull/<container>", "back-off",
	// "RunPodSandbox", "postStart/<container>"...; consecutive steps may
	// share it (a container's calls, run and probes).
	Name string `json:"name"`
	// Kind is what the step's time was (a ShareKind); What what it was for
	// (a container, an image, a volume's wait), when it says more.
	Kind  ShareKind `json:"kind,omitempty"`
	What  string    `json:"what,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// ShareKind names what part of a start's time went to.
type ShareKind string

// Kinds of time in a start (the critical path's steps, and Breakdown).
const (
	ShareSchedule        ShareKind = "schedule"         // creation -> bound to the node (1 s)
	ShareWaitVolumes     ShareKind = "wait.volumes"     // before the sandbox, the kubelet failing to mount volumes (FailedMount)
	ShareWaitSandbox     ShareKind = "wait.sandbox"     // before the sandbox: admission, volumes, the pod worker
	ShareSandbox         ShareKind = "sandbox"          // the RunPodSandbox that made it (CNI, pause)
	ShareSandboxFailed   ShareKind = "sandbox.failed"   // failed RunPodSandbox calls and the back-off between them
	ShareSandboxReplaced ShareKind = "sandbox.replaced" // sandboxes that died, and their containers
	SharePullWait        ShareKind = "pull.wait"        // a pull queued in the serialized puller
	SharePull            ShareKind = "pull"             // PullImage calls that pulled
	SharePullFailed      ShareKind = "pull.failed"      // PullImage calls that failed
	SharePullBackOff     ShareKind = "pull.back_off"    // the image back-off between failed pulls
	ShareCalls           ShareKind = "calls"            // CreateContainer, StartContainer
	ShareRun             ShareKind = "run"              // a container's process running, up to its end, start or readiness
	ShareHook            ShareKind = "hook"             // postStart hooks
	ShareProbeDelay      ShareKind = "probe.delay"      // process up, before the first attempt of its gating probe
	ShareProbeFailing    ShareKind = "probe.failing"    // the gating probe failing, up to its last failure
	ShareStop            ShareKind = "stop"             // the kubelet's kill (StopContainer) to the process's exit
	ShareBackOff         ShareKind = "back_off"         // crash-loop back-off between attempts
	ShareGate            ShareKind = "gate"             // readiness gates set by their controllers
	ShareAPILag          ShareKind = "api.lag"          // the last cause to Ready as the API reported it
	ShareOther           ShareKind = "other"            // between the steps: the kubelet's own work, not seen
)

// Share is one kind of time of a start, summed over its critical path and
// the time between its steps: a Timeline's Breakdown adds up to End -
// Start.
type Share struct {
	Kind ShareKind `json:"kind"`
	// What the time went to, when one thing had it all (a container, an
	// image, a volume's wait); empty when several did.
	What     string        `json:"what,omitempty"`
	Duration time.Duration `json:"duration"`
}
