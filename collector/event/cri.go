package event

import "time"

// TypeCRICall is the event type of CRICall.
const TypeCRICall Type = "cri_call"

// CRICall is one call of the kubelet's CRI client, timed in the kernel
// (uprobes on the kubelet: entry and every return of the method).
type CRICall struct {
	// Time is when the call began, End when it returned. Time is zero when
	// the entry was not seen (the probe attached mid-call).
	Time time.Time `json:"time"`
	End  time.Time `json:"end"`
	// Method is the gRPC method: runtime.v1.RuntimeService/RunPodSandbox.
	Method string `json:"method"`
	// Err is set when the call returned an error (for ExecSync, also a
	// command that exited non-zero).
	Err bool `json:"err,omitempty"`
	// PID is the kubelet's process id.
	PID uint32 `json:"pid"`
	// The ids the call named or returned, as far as it has them.
	PodSandboxID  string   `json:"pod_sandbox_id,omitempty"`
	ContainerID   string   `json:"container_id,omitempty"`
	PodUID        string   `json:"pod_uid,omitempty"`
	ContainerName string   `json:"container_name,omitempty"`
	Image         string   `json:"image,omitempty"`     // PullImage: the image asked for
	ImageRef      string   `json:"image_ref,omitempty"` // PullImage: what the runtime returned
	Cmd           []string `json:"cmd,omitempty"`       // ExecSync: the command (bounded, redacted)
}

func (*CRICall) Type() Type        { return TypeCRICall }
func (e *CRICall) When() time.Time { return e.End }
