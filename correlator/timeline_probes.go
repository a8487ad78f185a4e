package correlator

import "time"

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
