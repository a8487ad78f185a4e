package event

// Reasons a source loses records or goes blind: the words of
// SourceStatus.Reason and of the reason label of
// readyline_events_dropped_total. Each says what happened, not what it
// cost; a source uses the few that apply to it.
const (
	// ReasonRingFull: the kernel could not reserve room in a full ring
	// buffer (the reader fell behind) and dropped the record.
	ReasonRingFull = "ring_full"
	// ReasonDecodeError: a record that could not be decoded.
	ReasonDecodeError = "decode_error"
	// ReasonUnattributed: a process event whose cgroup was gone before it
	// could be named, so it names no pod or container.
	ReasonUnattributed = "unattributed"
	// ReasonEvicted: a TCP connection forgotten before its close, because
	// too many were open; its earlier states are lost.
	ReasonEvicted = "evicted"
	// ReasonEntryMissed: a CRI call whose entry the probes did not see (in
	// flight at attach, or its saved arguments evicted): its start and
	// arguments are lost.
	ReasonEntryMissed = "entry_missed"
	// ReasonStreamBehind: the runtime's event stream outran the source,
	// which dropped events and lists everything instead.
	ReasonStreamBehind = "stream_behind"
	// ReasonObserveQueueFull: a container id seen in the kernel that the
	// runtime was not asked about at once (its queue was full).
	ReasonObserveQueueFull = "observe_queue_full"
	// ReasonDisconnected: the runtime or the API server does not answer.
	ReasonDisconnected = "disconnected"
	// ReasonLoadFailed: the kernel refused the source's programs; the
	// source never ran.
	ReasonLoadFailed = "load_failed"
	// ReasonForbidden: the API server refused the daemon a read (its RBAC
	// grants it not): the pods' Events, for a node deployed without it.
	ReasonForbidden = "forbidden"
)
