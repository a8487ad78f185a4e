package correlator

import (
	"cmp"
	"time"
)

// Step is one element of the critical path.
type Step struct {
	// Name is the row of the waterfall the step is on: a phase name
	// (Phase*) or one of the step names below (ContainerStepName,
	// ImagePullStepName, BackOffStepName, SandboxCallsStepName, ...);
	// consecutive steps may share it (a container's calls, run and probes).
	Name string `json:"name"`
	// Kind is what the step's time was (a ShareKind); What what it was for
	// (a container, an image, a volume's wait), when it says more.
	Kind  ShareKind `json:"kind,omitempty"`
	What  string    `json:"what,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Names of the critical path's steps that are not a phase's (those are
// named by their Phase* name): the Name of the waterfall row each step is
// on, so the waterfall names its rows with them.
const (
	// SandboxCallsStepName is the step of the final sandbox's failed
	// RunPodSandbox calls and the back-off between them: the method's
	// short name (event.CRIRunPodSandbox.Short()), as the waterfall names
	// a call's row.
	SandboxCallsStepName = "RunPodSandbox"
	// BackOffStepName is a container's crash-loop back-off between its
	// attempts.
	BackOffStepName = "back-off"
	// ReadinessProbeStepName is, on a Recovery's way back, a readiness
	// probe failing with no container restarted.
	ReadinessProbeStepName = "readinessProbe"
)

// ContainerStepName is the step of a container's calls, run, probes and
// stop: "init/init-regular", "sidecar/mesh", "container/app".
func ContainerStepName(kind ContainerKind, name string) string { return string(kind) + "/" + name }

// PostStartStepName is the step of a container's postStart hook:
// "postStart/app".
func PostStartStepName(container string) string { return "postStart/" + container }

// ImagePullStepName, ImagePullWaitStepName and ImagePullBackOffStepName are
// the steps of an image pull: its PullImage call, its wait in the
// serialized puller and the image back-off before it. forWhat is
// ImagePull.StepFor: "image.pull/web".
func ImagePullStepName(forWhat string) string { return "image.pull/" + forWhat }

// ImagePullWaitStepName: see ImagePullStepName ("image.pull.wait/web").
func ImagePullWaitStepName(forWhat string) string { return "image.pull.wait/" + forWhat }

// ImagePullBackOffStepName: see ImagePullStepName
// ("image.pull.back_off/web").
func ImagePullBackOffStepName(forWhat string) string { return "image.pull.back_off/" + forWhat }

// StepFor is what the steps of the pull are named after: the container
// that needed the image, else the image volume, else the image.
func (ip ImagePull) StepFor() string { return cmp.Or(ip.Container, ip.Volume, ip.Image) }

// VolumeStepName is the step of a volume's setup (its provisioning,
// attach or CSI call): "volume/data".
func VolumeStepName(volume string) string { return "volume/" + volume }

// ReadinessGateStepName is the wait for a readiness gate set by its
// controller: "readinessGate/example.com/gate".
func ReadinessGateStepName(gate string) string { return "readinessGate/" + gate }

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
