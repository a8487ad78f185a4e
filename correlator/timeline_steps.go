package correlator

import "time"

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
