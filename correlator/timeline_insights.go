package correlator

import "time"

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
