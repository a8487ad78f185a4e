package correlator

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// ContainerKind is what role a container plays in the start.
type ContainerKind string

// Container kinds.
const (
	KindInit    ContainerKind = "init"      // regular init container: runs to completion
	KindSidecar ContainerKind = "sidecar"   // init container with restartPolicy Always
	KindMain    ContainerKind = "container" // spec.containers
)

// ContainerLabel is the one way readyline names a container with its kind,
// for a reader: "init init-regular", "sidecar mesh", "container app". The
// trace's span and the waterfall's row are named so, and so is a
// container in a sentence that needs its kind (a reason, a cause, what a
// start waits on). ContainerStepName is its id on the critical path.
func ContainerLabel(kind ContainerKind, name string) string { return string(kind) + " " + name }

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
