package event

import "time"

// TypeSource is the type of SourceStatus events.
const TypeSource Type = "source"

// Names of readyline's sources, as SourceStatus.Source and the source label
// of readyline_events_dropped_total and readyline_source_up.
const (
	SourceProcess      = "process"   // exec/fork/exit, kernel ring buffer
	SourceKubeletCalls = "cri_calls" // the kubelet's calls (CRI, volumes), uprobes
	SourceTCP          = "tcp"       // the kubelet's probe connections
	SourceRuntime      = "cri"       // the runtime's CRI API (containers, sandboxes)
	SourcePodWatch     = "pod_watch" // the API server's watch of this node's pods
	// SourcePodEvents: the pods' Events, read from the API server when a
	// start needs them. Up once they can be read; Down (e.g. "forbidden":
	// the node's readyline may not list Events) while they cannot.
	SourcePodEvents = "pod_events"
)

// SourceStatus says that a source stopped or started seeing: the kubelet
// detached or restarted, a ring buffer lost records, a stream or watch broke.
// A source is blind from a Down status (from Since when set, else Time) to
// its next Up status; the correlator marks the pod starts whose window
// overlaps that as incomplete. A loss known only after the fact (a ring
// buffer's drop count, read later) is a Down with Since followed at once by
// an Up.
type SourceStatus struct {
	// Time is when the change was seen.
	Time   time.Time `json:"time"`
	Source string    `json:"source"`
	Up     bool      `json:"up"`
	// Since, on a Down, is where the loss began when that is earlier than
	// Time; zero when it began at Time.
	Since time.Time `json:"since,omitzero"`
	// Reason says why a source is down ("detached", "no_kubelet",
	// "ring_full", "disconnected", ...), in the words of the drop reasons.
	Reason string `json:"reason,omitempty"`
	// Lost is how many records are known lost, 0 when unknown.
	Lost uint64 `json:"lost,omitempty"`
}

func (*SourceStatus) Type() Type        { return TypeSource }
func (e *SourceStatus) When() time.Time { return e.Time }

// TypeDrained is the type of Drained events.
const TypeDrained Type = "drained"

// Drained says a source has handed over every fact it saw before Time: a
// kernel ring buffer (process, cri_calls, tcp) was read to its end then.
// It comes in the source's stream after those facts. The correlator builds
// a finished pod start as soon as every such source has drained past the
// moment the start finished, instead of waiting out its grace period: the
// kernel facts of a start (the exits, the CRI calls, the probe
// connections) all happened before the kubelet reported it Ready.
type Drained struct {
	Time   time.Time `json:"time"`
	Source string    `json:"source"`
}

func (*Drained) Type() Type        { return TypeDrained }
func (e *Drained) When() time.Time { return e.Time }
