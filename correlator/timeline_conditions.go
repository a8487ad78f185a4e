package correlator

import "time"

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
