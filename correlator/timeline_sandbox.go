package correlator

import "time"

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
