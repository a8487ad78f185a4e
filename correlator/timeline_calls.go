package correlator

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

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
