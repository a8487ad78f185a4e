package event

import "time"

// TypeContainer is the event type of ContainerInfo.
const TypeContainer Type = "container"

// ContainerInfo is what the container runtime (CRI) says about a container
// or a pod sandbox at one moment. Sources report it when they first see an
// id and again when its state changes; the timestamps are the runtime's own
// (ns precision).
type ContainerInfo struct {
	// Time is when readyline learned this, not when it happened.
	Time time.Time `json:"time"`
	// ContainerID is the runtime's id; for a sandbox, the sandbox id.
	ContainerID string `json:"container_id"`
	// Sandbox is set when ContainerID names a pod sandbox (pause).
	Sandbox   bool   `json:"sandbox,omitempty"`
	SandboxID string `json:"sandbox_id,omitempty"`
	PodUID    string `json:"pod_uid"`
	PodName   string `json:"pod_name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// ContainerName is the name in the pod spec; empty for a sandbox.
	ContainerName string `json:"container_name,omitempty"`
	// Attempt counts restarts of the container (or re-creations of the sandbox).
	Attempt uint32 `json:"attempt"`
	// State is created, running, exited or unknown; ready or notready for a sandbox.
	State      string    `json:"state"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	ExitCode   int32     `json:"exit_code"`
	Reason     string    `json:"reason,omitempty"`
	Image      string    `json:"image,omitempty"`
	// PodIP is the sandbox's IP address.
	PodIP string `json:"pod_ip,omitempty"`
}

func (*ContainerInfo) Type() Type        { return TypeContainer }
func (e *ContainerInfo) When() time.Time { return e.Time }
